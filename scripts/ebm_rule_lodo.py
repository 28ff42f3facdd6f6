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
Multiclass sets (accuracy regret; the leaf sums' noise is twice the
binary one, `learn::ebm::params::leaf_l1_sensitivity`) are fitted on their
own: `--task multiclass` keeps only them (default: binary and regression),
and fits the pure-DP rule whose epochs grow with the signal: the most of
1, 2, 3, 5 epochs that keeps `n / s >= T` (one if none does), with the
learning rate `10^(a + b log10(n / s))` at those epochs; (a, b, T) chosen
by the same leave-one-dataset-out (`Schedule::default_for`). `--pure-threshold`
fits that rule on the binary and regression sets' pure-DP cells (`s` as
`Schedule::default_for` computes it: a classifier's training share 0.75,
a regressor's 0.85).
Usage: scripts/ebm_rule_lodo.py [--task multiclass | --pure-threshold] [--pure-epochs 1,2,3,5] grid1.jsonl [grid2.jsonl ...]
"""
import json, math, sys, itertools, collections
from functools import lru_cache
args=sys.argv[1:]
# --pure-epochs E1,E2,..: the epochs the pure-DP rule chooses from (default 1,2,3,5, the shipped
# PURE_EPOCHS); must be measured in the grid.
EP=[1,2,3,5]
if '--pure-epochs' in args:
    i=args.index('--pure-epochs'); EP=[int(x) for x in args[i+1].split(',')]; del args[i:i+2]
MULTICLASS=args[:2]==['--task','multiclass']
if MULTICLASS: args=args[2:]
THRESHOLD=MULTICLASS or args[:1]==['--pure-threshold']
if args[:1]==['--pure-threshold']: args=args[1:]
rows=[json.loads(l) for f in args for l in open(f)]
rows=[d for d in rows if (d['task']=='multiclass')==MULTICLASS]
LR=sorted({d['spec']['learning_rate'] for d in rows})
cell=collections.defaultdict(dict); info={}
for d in rows:
    key=(d['set'],d['eps'],d['delta'])
    cfg=(d['spec']['learning_rate'],d['spec']['epochs'])
    loss=d['m0']/d['m1'] if d['task']=='regression' else 1-d['m0']
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
    # a multiclass leaf sum's L1 / L2 sensitivity is twice the binary one
    f=2 if MULTICLASS else 1
    if delta>0: return f*math.sqrt(2*E*k/(0.85*rho_for(eps,delta)))
    return f*math.sqrt(2)*2*E*k/(0.85*eps)
def snap(lr):
    lr=min(max(lr,0.01),1.0)
    # the measured learning rates (a rule below the grid takes its lowest)
    return min(LR,key=lambda x:abs(math.log(x)-math.log(lr)))
def rule(p,key):
    a,b,E=p; t,n,k=info[key]
    z=n/sigma(n,k,key[1],key[2],E)
    return (snap(10**(a+b*math.log10(z))),E)
def rule2(p,key):
    a,b,Ez,Ep=p
    return rule((a,b,Ez if key[2]>0 else Ep),key)
def mean_regret(rule_of,p,keys):
    """The mean regret of the rule `rule_of` with parameters `p` over `keys`
    (9 if it picks a configuration the grid did not measure)."""
    t=0
    for k in keys:
        cfg=rule_of(p,k)
        if cfg not in cell[k]: return 9
        t+=cell[k][cfg][0]-min(v[0] for v in cell[k].values())
    return t/len(keys)
if THRESHOLD:
    def noise_pure(key,E):
        # one leaf sum's noise sd with delta = 0, as Schedule::default_for
        t,n,k=info[key]
        share=0.75 if t=='binary' else 0.85
        f=2 if t=='multiclass' else 1
        return f*math.sqrt(2)*2*E*k/(share*key[1])
    def rule_t(p,key):
        a,b,T=p
        z=lambda E:info[key][1]/noise_pure(key,E)
        E=max([e for e in EP if z(e)>=T] or [1])
        return (snap(10**(a+b*math.log10(z(E)))),E)
    G=[(a/4,b/8,10**(t/8)) for a in range(-12,9) for b in range(0,9) for t in range(0,33)]
    keys=[k for k in cell if k[2]==0]
    sets=sorted(set(k[0] for k in keys))
    best=min(G,key=lambda p:mean_regret(rule_t,p,keys))
    print('pooled all-sets rule (a, b, T)',best,round(mean_regret(rule_t,best,keys),4))
    total=[]
    for h in sets:
        p=min(G,key=lambda p:mean_regret(rule_t,p,[k for k in keys if k[0]!=h]))
        for key in sorted(k for k in keys if k[0]==h):
            cfg=rule_t(p,key); l,d=cell[key][cfg]; r=l-min(v[0] for v in cell[key].values())
            total.append(r)
            metric=f"acc {d['m0']:.3f} macro-F1 {d['m1']:.3f}" if MULTICLASS else f"m0 {d['m0']:.4g} m1 {d['m1']:.4g}"
            print(h[:12],key[1],p,cfg,f"{metric} regret {r:.3f}")
    for task in ['binary','regression','multiclass']:
        ks=[r for r,k in zip(total,[k for h in sets for k in sorted(k for k in keys if k[0]==h)]) if info[k][0]==task]
        if ks: print('pure',task,'held-out mean regret',round(sum(ks)/len(ks),4))
    sys.exit(0)
G=[(a/4,b/8,Ez,Ep) for a in range(-12,5) for b in range(0,9) for Ez in [5,10,20] for Ep in [2,3,5]]
keys=list(cell)
sets=sorted(set(k[0] for k in keys))
best=min(G,key=lambda p:mean_regret(rule2,p,keys))
print('pooled all-sets rule',best,round(mean_regret(rule2,best,keys),4))
res={}
for h in sets:
    tr=[k for k in keys if k[0]!=h]; te=sorted([k for k in keys if k[0]==h],key=lambda k:(k[2],k[1]))
    p=min(G,key=lambda p:mean_regret(rule2,p,tr))
    for key in te:
        cfg=rule2(p,key); l,d=cell[key][cfg]; bestl=min(v[0] for v in cell[key].values())
        res[key]=(p,cfg,d,l-bestl)
for variant in ['zcdp','pure']:
  for task in ['binary','regression','multiclass']:
    ks=[k for k in res if info[k][0]==task and ((k[2]>0)==(variant=='zcdp'))]
    if ks: print(variant,task,'held-out mean regret',round(sum(res[k][3] for k in ks)/len(ks),4))
for k in sorted(res,key=lambda k:(k[2]==0,info[k][0],k[0],k[1])):
    p,cfg,d,r=res[k]
    if info[k][0]=='multiclass': print(k[0][:12],k[1],k[2],p,cfg,f"acc {d['m0']:.3f} macro-F1 {d['m1']:.3f} regret {r:.3f}")
    elif info[k][0]=='binary': print(k[0][:12],k[1],k[2],p,cfg,f"acc {d['m0']:.3f} auc {d['m1']:.3f} pp {d['m2']:.3f}/{d['m3']:.3f} regret {r:.3f}")
    else: print(k[0][:12],k[1],k[2],p,cfg,f"rmse {d['m0']:.4g} mean {d['m1']:.4g} ratio {d['m0']/d['m1']:.3f} regret {r:.3f}")
