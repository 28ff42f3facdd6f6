#!/usr/bin/env python3
"""DP-EBM's default rule, chosen by leave-one-dataset-out (issue 25).

Reads the JSON lines of `cargo run --release --example ebm_tune` (a grid of
learning rates x epochs on the suite's binary and regression sets, both
variants) and fits `learning_rate = 10^(a + b log10(n / s))` with epochs
`E_zcdp` (delta > 0) and `E_pure` (delta = 0), `s` the noise standard
deviation of one leaf sum at those epochs: for each held-out set, the
parameters minimising the mean regret (accuracy points; RMSE over the mean
predictor's) on the other sets, then scored on the held-out set. The rule's
learning rate is snapped to the nearest measured one (in log scale).
Usage: scripts/ebm_rule_lodo.py grid1.jsonl [grid2.jsonl ...]
"""
import json, math, sys, itertools, collections
from functools import lru_cache
rows=[json.loads(l) for f in sys.argv[1:] for l in open(f)]
LR=[0.01,0.02,0.05,0.1,0.2,0.4,0.7,1.0]
cell=collections.defaultdict(dict); info={}
for d in rows:
    key=(d['set'],d['eps'],d['delta'])
    cfg=(d['spec']['learning_rate'],d['spec']['epochs'])
    loss=1-d['m0'] if d['task']=='binary' else d['m0']/d['m1']
    cell[key][cfg]=(loss,d); info[key]=(d['task'],d['n'],d['k'])
@lru_cache(None)
def rho_for(eps,delta):
    def dl(rho):
        best=1e9
        for i in range(1,3000):
            a=1+10**(-3+i*0.003)
            x=(a-1)*(a*rho-eps)
            if x>50: continue
            v=math.exp(x)/(a-1)*(1-1/a)**a
            best=min(best,v)
        return best
    lo,hi=0,eps
    for _ in range(60):
        m=(lo+hi)/2
        if dl(m)<=delta: lo=m
        else: hi=m
    return lo
def sigma(n,k,eps,delta,E):
    if delta>0: return math.sqrt(2*E*k/(0.85*rho_for(eps,delta)))
    return math.sqrt(2)*2*E*k/(0.85*eps)
def snap(lr):
    lr=min(max(lr,0.01),1.0)
    return min(LR,key=lambda x:abs(math.log(x)-math.log(lr)))
def rule(p,key):
    a,b,E=p; t,n,k=info[key]
    z=n/sigma(n,k,key[1],key[2],E)
    return (snap(10**(a+b*math.log10(z))),E)
def regret(p,key):
    cfg=rule(p,key)
    if cfg not in cell[key]: return None
    return cell[key][cfg][0]-min(v[0] for v in cell[key].values())
def score(p,keys):
    t=0
    for k in keys:
        l=regret(p,k)
        if l is None: return 9
        t+=l
    return t/len(keys)
def rule2(p,key):
    a,b,Ez,Ep=p
    return rule((a,b,Ez if key[2]>0 else Ep),key)
def score2(p,keys):
    t=0
    for k in keys:
        cfg=rule2(p,k)
        if cfg not in cell[k]: return 9
        t+=cell[k][cfg][0]-min(v[0] for v in cell[k].values())
    return t/len(keys)
G=[(a/4,b/8,Ez,Ep) for a in range(-12,5) for b in range(0,9) for Ez in [5,10,20] for Ep in [2,3,5]]
keys=list(cell)
sets=sorted(set(k[0] for k in keys))
best=min(G,key=lambda p:score2(p,keys))
print('pooled all-sets rule',best,round(score2(best,keys),4))
res={}
for h in sets:
    tr=[k for k in keys if k[0]!=h]; te=sorted([k for k in keys if k[0]==h],key=lambda k:(k[2],k[1]))
    p=min(G,key=lambda p:score2(p,tr))
    for key in te:
        cfg=rule2(p,key); l,d=cell[key][cfg]; bestl=min(v[0] for v in cell[key].values())
        res[key]=(p,cfg,d,l-bestl)
for variant in ['zcdp','pure']:
  for task in ['binary','regression']:
    ks=[k for k in res if info[k][0]==task and ((k[2]>0)==(variant=='zcdp'))]
    print(variant,task,'held-out mean regret',round(sum(res[k][3] for k in ks)/len(ks),4))
for k in sorted(res,key=lambda k:(k[2]==0,info[k][0],k[0],k[1])):
    p,cfg,d,r=res[k]
    if info[k][0]=='binary': print(k[0][:12],k[1],k[2],p,cfg,f"acc {d['m0']:.3f} auc {d['m1']:.3f} pp {d['m2']:.3f}/{d['m3']:.3f} regret {r:.3f}")
    else: print(k[0][:12],k[1],k[2],p,cfg,f"rmse {d['m0']:.4g} mean {d['m1']:.4g} ratio {d['m0']/d['m1']:.3f} regret {r:.3f}")
