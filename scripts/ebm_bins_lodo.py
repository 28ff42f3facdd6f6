#!/usr/bin/env python3
"""DP-EBM's default bins, chosen leave-one-dataset-out on the suite (docs/accuracy.md, "DP-EBM's bins
from the signal-to-noise ratio").

Runs `privboost eval --algorithm dp-ebm --max-bins B` for every B of --bins on the suite's folds
(the ones `scripts/suite.py` writes under its --work-dir), both deltas, 4 epsilons, then fits the
rule `max_bins = 2^round(a + b log2(n / s))` in [4, 64] (ties to even) on every set but one and
scores it on the held-out one. `n / s` is the signal-to-noise ratio of one leaf sum that the
learning-rate rule uses (`learn::ebm::params::Schedule::default_for`); it is recovered from each
cell's printed learning rate and epochs, with the number of features K fitted per set (the script
stops if no K reproduces every cell). Regret: accuracy points, or RMSE as a share of the mean
predictor's (the suite file's `constant` cells).

    python3 scripts/suite.py --no-peers --learners dp-ebm --sets ...    # writes the folds
    python3 scripts/ebm_bins_lodo.py --work-dir target/suite --sets ... --suite docs/results/suite/suite.json
    python3 scripts/ebm_bins_lodo.py --self-test
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# learn::ebm::params: the shares and the rule's constants.
BINNING, INTERCEPT, CALIBRATION = 0.1, 0.05, 0.1
PURE_EPOCHS, PURE_MIN_SNR = (1, 2, 3, 5), 23.71373705661655


def eps_of(rho: float, delta: float) -> float:
    """CKS20 Cor. 13 on a grid of alpha (privacy::zcdp::epsilon_of without its refinement)."""
    best = float("inf")
    for k in range(1601):
        a = 1 + 10 ** (-8 + 16 * k / 1600)
        best = min(best, a * rho + (math.log(1 / delta) + a * math.log1p(-1 / a) - math.log(a - 1)) / (a - 1))
    return best


_RHO: dict = {}


def rho_for(eps: float, delta: float) -> float:
    if (eps, delta) not in _RHO:
        lo, hi = 0.0, eps
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if eps_of(mid, delta) <= eps else (lo, mid)
        _RHO[(eps, delta)] = lo
    return _RHO[(eps, delta)]


def schedule(task: str, n: int, eps: float, delta: float, k: int) -> tuple:
    """(n / s, learning rate, epochs) of Schedule::default_for for a binary or regression task."""
    training = 1 - BINNING - INTERCEPT - (CALIBRATION if task == "binary" else 0.0)

    def noise(e):
        it = e * k
        if delta == 0:
            return math.sqrt(2) * 2 * it / (training * eps)
        return math.sqrt(2 * it / (training * rho_for(eps, delta)))
    if delta == 0:
        ok = [e for e in PURE_EPOCHS if n / noise(e) >= PURE_MIN_SNR]
        epochs, a, b = (max(ok) if ok else 1), -1.0, 0.375
    elif task == "regression":
        epochs, a, b = 20, -1.75, 0.625
    else:
        epochs, a, b = 10, -1.75, 0.875
    snr = n / noise(epochs)
    return snr, min(1.0, max(0.01, 10 ** (a + b * math.log10(snr)))), epochs


def rule(a: float, b: float, snr: float) -> int:
    """2^round(a + b log2 snr), ties to even (Python's round), in [4, 64]."""
    return 2 ** min(6, max(2, round(a + b * math.log2(snr))))


GRID = [(a / 2, b / 4) for a in range(-12, 17) for b in range(0, 5)]


def fit(cells: list, regret) -> tuple:
    """The grid's rule of least mean regret over `cells` (ties: the smaller slope, then intercept)."""
    return min(GRID, key=lambda p: (statistics.mean(regret(c, rule(*p, c["snr"])) for c in cells),
                                    abs(p[1]), p[0]))


def run_grid(args) -> list:
    jobs = list(itertools.product(args.sets, ["0", "1e-6"], args.bins, range(5)))
    os.makedirs(args.out_dir, exist_ok=True)

    def one(job):
        s, d, b, k = job
        folds = glob.glob(os.path.join(args.work_dir, "folds", f"{s}-k5-*"))
        if not folds:
            raise SystemExit(f"no folds of {s} under {args.work_dir}/folds: run scripts/suite.py first")
        out = os.path.join(args.out_dir, f"{s}-{d}-{b}-{k}.json")
        if not os.path.exists(out):
            subprocess.run([args.binary, "eval", "--algorithm", "dp-ebm", "--data", f"{folds[0]}/fold{k}-train.csv",
                            "--test", f"{folds[0]}/fold{k}-test.csv", "--schema",
                            os.path.join(args.suite_dir, s, "schema.json"), "--epsilon", "0.1,0.5,1,5",
                            "--delta", d, "--repeats", str(args.repeats), "--max-bins", str(b), "--json", out],
                           check=True, capture_output=True)
        n = sum(1 for _ in open(f"{folds[0]}/fold{k}-train.csv")) - 1
        return [{"set": s, "delta": float(d), "bins": b, "fold": k, "n": n, "epsilon": r["epsilon"],
                 "spec": r["spec"], "value": (r["scores"].get("accuracy") or r["scores"]["rmse"])["mean"]}
                for r in json.load(open(out))["results"]]
    rows = []
    with ThreadPoolExecutor(args.jobs) as ex:
        for i, r in enumerate(ex.map(one, jobs)):
            rows += r
            if i % 50 == 0:
                print(f"[ebm_bins_lodo] {i}/{len(jobs)} eval processes", file=sys.stderr, flush=True)
    return rows


def cells_of(rows: list, suite: dict) -> tuple:
    const = {c["set"]: c["metrics"]["rmse"]["mean"] for c in suite["cells"]
             if c["learner"] == "constant" and c["task"] == "regression"}
    tasks = {s["name"]: s["facts"]["task"] for s in suite["sets"]}
    by: dict = {}
    for r in rows:
        by.setdefault((r["set"], r["delta"], r["epsilon"]), {}).setdefault(r["bins"], []).append(r)
    cells = []
    for (s, d, e), per in sorted(by.items()):
        # K: the feature count whose rule reproduces every printed learning rate and epochs of the set.
        obs = [r for rs in per.values() for r in rs]
        k = next((k for k in range(1, 1000) if all(
            abs(schedule(tasks[s], r["n"], e, d, k)[1] / r["spec"]["learning_rate"] - 1) < 1e-4
            and schedule(tasks[s], r["n"], e, d, k)[2] == r["spec"]["epochs"] for r in obs)), None)
        if k is None:
            raise SystemExit(f"no feature count reproduces {s}'s learning rates at eps {e}, delta {d}")
        n = statistics.mean(r["n"] for r in obs)
        value = {b: statistics.mean(r["value"] for r in rs) for b, rs in per.items()}
        loss = {b: (v / const[s] if tasks[s] == "regression" else -v) for b, v in value.items()}
        cells.append({"set": s, "delta": d, "epsilon": e, "snr": schedule(tasks[s], round(n), e, d, k)[0],
                      "loss": loss})
    return cells


def regret(c: dict, b: int) -> float:
    return c["loss"][b] - min(c["loss"].values())


def report(cells: list, eps_min: float) -> None:
    cells = [c for c in cells if c["epsilon"] >= eps_min]
    sets = sorted({c["set"] for c in cells})
    held = []
    for h in sets:
        p = fit([c for c in cells if c["set"] != h], regret)
        test = [c for c in cells if c["set"] == h]
        r = statistics.mean(regret(c, rule(*p, c["snr"])) for c in test)
        r32 = statistics.mean(regret(c, 32) for c in test)
        held.append((r, r32))
        print(f"| {h} | {p[0]:g}, {p[1]:g} | {r:.4f} | {r32:.4f} |")
    print(f"mean held-out regret (epsilon >= {eps_min:g}): rule {statistics.mean(h[0] for h in held):.4f}, "
          f"32 bins {statistics.mean(h[1] for h in held):.4f}; fitted on every set: {fit(cells, regret)}")
    for b in sorted(cells[0]["loss"]):
        print(f"  constant {b}: {statistics.mean(regret(c, b) for c in cells):.4f}")


def self_test() -> int:
    # the rule by hand (learn::ebm::params::the_default_bins_by_hand)
    assert [rule(1.5, 0.25, s) for s in (14.7, 16, 256, 4096, 64, 1000, 16384, 262144, 0.5)] == \
        [4, 4, 16, 16, 8, 16, 32, 64, 4]
    # the schedule by hand (the_default_rule_by_hand): pure n 1000, K 8, eps 1: one epoch, 0.371672
    snr, lr, e = schedule("binary", 1000, 1.0, 0.0, 8)
    assert e == 1 and abs(lr - 0.371672) < 1e-5, (lr, e)
    snr, lr, e = schedule("binary", 1000, 1.0, 1e-6, 8)
    assert e == 10 and abs(lr - 0.141311) < 1e-4 and abs(snr - 10.685) < 0.01, (snr, lr)
    # leave-one-dataset-out: a set whose own best differs never decides its rule
    def loss(best):
        return {b: 0.0 if b == best else 1.0 for b in (4, 8, 16, 32, 64)}
    cells = [{"set": s, "snr": 16.0, "loss": loss(64 if s == "odd" else 4)} for s in ("a", "b", "odd")]
    assert rule(*fit([c for c in cells if c["set"] != "odd"], regret), 16.0) == 4
    print("ebm_bins_lodo.py self-test: ok")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--sets", help="comma-separated binary and regression sets of the suite")
    ap.add_argument("--bins", default="4,8,16,32,64")
    ap.add_argument("--work-dir", default=os.path.join(ROOT, "target", "suite"))
    ap.add_argument("--suite-dir", default=os.path.join(ROOT, "..", "shared", "data", "suite"))
    ap.add_argument("--suite", default=os.path.join(ROOT, "docs", "results", "suite", "suite.json"),
                    help="a suite file: the sets' tasks and the mean predictor's RMSE")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "privboost"))
    ap.add_argument("--out-dir", default=os.path.join(ROOT, "target", "ebm-bins"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.sets:
        ap.error("give --sets")
    args.sets = args.sets.split(",")
    args.bins = [int(b) for b in args.bins.split(",")]
    rows = run_grid(args)
    cells = cells_of(rows, json.load(open(args.suite)))
    print("| held-out set | rule a, b | held-out regret | 32 bins |\n|---|---|---|---|")
    report(cells, 0.0)
    print()
    report(cells, 0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
