#!/usr/bin/env python3
"""DP-EBM's default bins, chosen leave-one-dataset-out on the suite (docs/accuracy.md, "DP-EBM's bins
from the signal-to-noise ratio").

Runs `privboost eval --algorithm dp-ebm --max-bins B` for every B of --bins on the suite's folds
(the ones `scripts/suite.py` writes under its --work-dir), both deltas, 4 epsilons, then fits the
rule `max_bins = 2^round(a + b log2(n / s))` in [4, 64] (ties to even) on every set but one and
scores it on the held-out one. `n / s` is the signal-to-noise ratio of one leaf sum that the
learning-rate rule uses (`learn::ebm::params::Schedule::default_for`), as `privboost eval` reports
it (`signal_to_noise`), averaged over a cell's folds. Regret: accuracy points, or RMSE as a share
of the mean predictor's (the suite file's `constant` cells). Beside each refit it prints the shipped
rule's held-out regret on the same runs, and a rule fitted and held out within each task's sets.

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
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
        out = os.path.join(args.out_dir, f"{s}-{d}-{b}-{k}-r{args.repeats}.json")
        # A file from a build before eval reported n / s is run again.
        if not (os.path.exists(out)
                and all("signal_to_noise" in r for r in json.load(open(out))["results"])):
            subprocess.run([args.binary, "eval", "--algorithm", "dp-ebm", "--data", f"{folds[0]}/fold{k}-train.csv",
                            "--test", f"{folds[0]}/fold{k}-test.csv", "--schema",
                            os.path.join(args.suite_dir, s, "schema.json"), "--epsilon", "0.1,0.5,1,5",
                            "--delta", d, "--repeats", str(args.repeats), "--max-bins", str(b), "--json", out],
                           check=True, capture_output=True)
        return [{"set": s, "delta": float(d), "bins": b, "fold": k, "epsilon": r["epsilon"],
                 "snr": r["signal_to_noise"],
                 "value": (r["scores"].get("accuracy") or r["scores"]["rmse"])["mean"]}
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
        # The rule's n / s does not depend on the bins: every fold's, averaged.
        snr = statistics.mean({r["fold"]: r["snr"] for rs in per.values() for r in rs}.values())
        value = {b: statistics.mean(r["value"] for r in rs) for b, rs in per.items()}
        loss = {b: (v / const[s] if tasks[s] == "regression" else -v) for b, v in value.items()}
        cells.append({"set": s, "delta": d, "epsilon": e, "snr": snr, "loss": loss})
    return cells


def regret(c: dict, b: int) -> float:
    return c["loss"][b] - min(c["loss"].values())


# The shipped rule's (a, b) (`learn::ebm::params::default_bins`), scored beside every refit; the
# self-test reads them back from that function's source, so a change there fails CI until this follows.
SHIPPED = (1.5, 0.25)
PARAMS_RS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "learn", "ebm", "params.rs")


def shipped_in_source(text: str) -> tuple:
    """The (a, b) of `default_bins`'s `(a + b * snr.log2())` in params.rs's text."""
    body = text[text.index("pub fn default_bins"):]
    m = re.search(r"\(\s*([0-9.]+)\s*\+\s*([0-9.]+)\s*\*\s*snr\.log2\(\)\s*\)", body)
    if m is None:
        raise ValueError("default_bins no longer reads (a + b * snr.log2())")
    return float(m.group(1)), float(m.group(2))


def held_out(cells: list) -> list:
    """Per set: the rule fitted on the other sets, its regret on this one, the shipped rule's, 32 bins'."""
    out = []
    for h in sorted({c["set"] for c in cells}):
        p = fit([c for c in cells if c["set"] != h], regret)
        test = [c for c in cells if c["set"] == h]
        out.append((h, p, statistics.mean(regret(c, rule(*p, c["snr"])) for c in test),
                    statistics.mean(regret(c, rule(*SHIPPED, c["snr"])) for c in test),
                    statistics.mean(regret(c, 32) for c in test)))
    return out


def report(cells: list, eps_min: float, tasks: dict) -> None:
    cells = [c for c in cells if c["epsilon"] >= eps_min]
    held = held_out(cells)
    for h, p, r, _, r32 in held:
        print(f"| {h} | {p[0]:g}, {p[1]:g} | {r:.4f} | {r32:.4f} |")
    print(f"mean held-out regret (epsilon >= {eps_min:g}): rule {statistics.mean(h[2] for h in held):.4f}, "
          f"the shipped {SHIPPED} {statistics.mean(h[3] for h in held):.4f}, "
          f"32 bins {statistics.mean(h[4] for h in held):.4f}; fitted on every set: {fit(cells, regret)}")
    for b in sorted(cells[0]["loss"]):
        print(f"  constant {b}: {statistics.mean(regret(c, b) for c in cells):.4f}")
    # A rule per task, fitted and held out within the task's sets only.
    for task in sorted({tasks[c["set"]] for c in cells}):
        mine = held_out([c for c in cells if tasks[c["set"]] == task])
        if len(mine) > 1:
            print(f"  {task} sets alone: held-out rule {statistics.mean(h[2] for h in mine):.4f}, "
                  f"the shipped {statistics.mean(h[3] for h in mine):.4f}")


def self_test() -> int:
    # SHIPPED is the Rust rule's (a, b)
    with open(PARAMS_RS, encoding="utf-8") as f:
        assert shipped_in_source(f.read()) == SHIPPED, "SHIPPED differs from learn::ebm::params::default_bins"
    assert shipped_in_source("pub fn default_bins(snr: f64) {\n (2.5 + 0.125 * snr.log2())") == (2.5, 0.125)
    # the rule by hand (learn::ebm::params::the_default_bins_by_hand)
    assert [rule(1.5, 0.25, s) for s in (14.7, 16, 256, 4096, 64, 1000, 16384, 262144, 0.5)] == \
        [4, 4, 16, 16, 8, 16, 32, 64, 4]
    # leave-one-dataset-out: a set whose own best differs never decides its rule
    def loss(best):
        return {b: 0.0 if b == best else 1.0 for b in (4, 8, 16, 32, 64)}
    cells = [{"set": s, "snr": 16.0, "loss": loss(64 if s == "odd" else 4)} for s in ("a", "b", "odd")]
    assert rule(*fit([c for c in cells if c["set"] != "odd"], regret), 16.0) == 4
    # held_out: per set the refit's regret, the shipped rule's (4 bins at n / s = 16) and 32 bins'
    assert [(h, r, shipped, r32) for h, _, r, shipped, r32 in held_out(cells)] == \
        [("a", 0.0, 0.0, 1.0), ("b", 0.0, 0.0, 1.0), ("odd", 1.0, 1.0, 1.0)]
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
    suite = json.load(open(args.suite))
    cells = cells_of(rows, suite)
    tasks = {s["name"]: s["facts"]["task"] for s in suite["sets"]}
    print("| held-out set | rule a, b | held-out regret | 32 bins |\n|---|---|---|---|")
    report(cells, 0.0, tasks)
    print()
    report(cells, 0.5, tasks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
