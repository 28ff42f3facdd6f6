#!/usr/bin/env python3
"""A binary classifier's threshold share, chosen leave-one-dataset-out on the suite's binary sets.

A binary LazyBB fit spends a share of its epsilon on a vote threshold chosen privately after the
rounds (src/learn/lazybb/vote_threshold.rs), a binary dp-linear or DPBoost fit a share of its
budget on a decision threshold after the fit (src/learn/linear/threshold.rs,
src/learn/dpboost/threshold.rs); 0 = no threshold. For the
learner of `--learner`, this script

1. runs scripts/suite.py for that learner alone on the suite's binary sets, once per share of the
   grid, through a wrapper of the release binary that appends the learner's share flag
   (`--vote-threshold-share S`, `--threshold-share S`; the wrapper names the binary's sha256, so
   the suite's cache follows the binary);
2. for every binary set, picks the share with the best mean accuracy over the *other* sets' cells
   (every epsilon and delta of the run) and scores it on the held-out set: the held-out table;
3. does the same for the rule family that ships, a share per cell from its public n and epsilon:
   the largest of 0.025, 0.05, 0.1, 0.2 at most K / (n epsilon) (else 0.025), K in RULE_K
   (threshold::default_share; each cell is scored from the run at its share, so every rule
   of the family is scored exactly);
4. prints what is fitted on every set (the default to ship) and, per share, the cells more than
   2 points below the majority class at epsilon >= 1 (the constant's accuracy from --reference,
   a suite.py JSON with the `constant` peer).

Owner-side figures on public data: nothing here is a private release.

    cargo build --release --locked
    python3 scripts/threshold_share_lodo.py --learner lazybb --jobs 2 --repeats 4 \
        --reference docs/results/suite/suite.json --json /tmp/vt.json

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402  (the suite's paths and hashing)

ROOT = suite.ROOT
# The share flag of each learner that has a threshold.
FLAGS = {"lazybb": "--vote-threshold-share", "dp-linear": "--threshold-share",
         "dpboost": "--threshold-share"}
SHARES = ["0", "0.025", "0.05", "0.1", "0.2", "0.3", "0.4"]
# The shipped rule's shares (vote_threshold::DEFAULT_SHARES, spelled as in SHARES) and its K grid
# (None: no bound, the largest share everywhere).
RULE_SHARES = ["0.025", "0.05", "0.1", "0.2"]
RULE_K = [25, 50, 100, 200, 400, 800, 1600, 3200, None]
BINARY_SETS = [
    "banknote-authentication", "electricity", "german-credit", "ionosphere",
    "magic-gamma-telescope", "occupancy-detection", "phishing-websites", "pima-indians-diabetes",
    "spambase",
]


def wrapper(work: str, binary: str, learner: str, share: str) -> str:
    """A shell script running `binary` with the learner's share flag appended; its text names the
    binary's hash, so a rebuilt binary gets new cache keys."""
    path = os.path.join(work, f"privboost-{learner}-th-{share}")
    text = (f"#!/bin/sh\n# {suite.sha256_file(binary)}\n"
            f'exec {binary} "$@" {FLAGS[learner]} {share}\n')
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def run_share(args, share: str) -> str:
    out = os.path.join(args.work_dir, f"{args.learner}-th-{share}.json")
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "suite.py"),
           "--binary", wrapper(args.work_dir, args.binary, args.learner, share),
           "--learners", args.learner,
           "--no-peers", "--sets", ",".join(args.sets), "--jobs", str(args.jobs),
           "--repeats", str(args.repeats), "--work-dir", args.work_dir,
           "--json", out, "--markdown", os.path.join(args.work_dir, f"{args.learner}-th-{share}.md")]
    print(f"share {share}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)
    return out


def accuracies(path: str) -> tuple:
    """({(set, epsilon, delta): mean accuracy}, {set: training rows of a fold})."""
    with open(path) as f:
        doc = json.load(f)
    folds = doc["protocol"]["folds"]
    n_train = {s["name"]: s["facts"]["n"] * (folds - 1) // folds for s in doc["sets"]}
    return ({(c["set"], c["epsilon"], c["delta"]): c["metrics"]["accuracy"]["mean"]
             for c in doc["cells"] if "accuracy" in c.get("metrics", {})}, n_train)


def rule_share(k, n: int, epsilon: float) -> str:
    """The shipped rule's share for a cell (threshold::default_share)."""
    if k is None:
        return RULE_SHARES[-1]
    fits = [s for s in RULE_SHARES if float(s) <= k / (max(n, 1) * epsilon)]
    return fits[-1] if fits else RULE_SHARES[0]


def rule_lodo(values: dict, n_train: dict, sets: list) -> list:
    """[(held-out set, K picked on the others, its held-out mean)] for the rule family."""
    cells = [c for c in values["0"]]

    def mean(k, on):
        return statistics.mean(values[rule_share(k, n_train[s], e)][(s, e, d)]
                               for (s, e, d) in cells if s in on)
    rows = []
    for held in sets:
        others = [s for s in sets if s != held]
        pick = max(RULE_K, key=lambda k: (mean(k, others), -(k or 1e18)))
        rows.append((held, pick, mean(pick, [held])))
    fitted = max(RULE_K, key=lambda k: (mean(k, sets), -(k or 1e18)))
    return rows, fitted, {k: mean(k, sets) for k in RULE_K}


def lodo(values: dict, sets: list) -> list:
    """[(held-out set, share picked on the others, its held-out mean, every share's mean)]."""
    def mean(share, on):
        return statistics.mean(v for (s, _, _), v in values[share].items() if s in on)
    rows = []
    for held in sets:
        others = [s for s in sets if s != held]
        pick = max(SHARES, key=lambda sh: (mean(sh, others), -float(sh)))
        rows.append((held, pick, mean(pick, [held]), {sh: mean(sh, [held]) for sh in SHARES}))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learner", choices=sorted(FLAGS), default="lazybb")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "privboost"))
    ap.add_argument("--sets", default=",".join(BINARY_SETS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--work-dir", default=os.path.join(ROOT, "target", "suite"))
    ap.add_argument("--reference", help="a suite.py JSON with the constant (majority) peer")
    ap.add_argument("--json", help="write the held-out table and the per-share means here")
    args = ap.parse_args(argv)
    args.binary = os.path.abspath(args.binary)
    args.work_dir = os.path.abspath(args.work_dir)
    args.sets = args.sets.split(",")
    os.makedirs(args.work_dir, exist_ok=True)
    runs = {share: accuracies(run_share(args, share)) for share in SHARES}
    values = {share: v for share, (v, _) in runs.items()}
    n_train = runs["0"][1]
    rows = lodo(values, args.sets)
    print("| held-out set | share picked on the others | held-out mean accuracy | "
          + " | ".join(f"share {sh}" for sh in SHARES) + " |")
    print("|---|---|---|" + "---|" * len(SHARES))
    for held, pick, score, per in rows:
        print(f"| {held} | {pick} | {score:.4f} | "
              + " | ".join(f"{per[sh]:.3f}" for sh in SHARES) + " |")
    held_mean = statistics.mean(r[2] for r in rows)
    none_mean = statistics.mean(r[3]["0"] for r in rows)
    fitted = max(SHARES, key=lambda sh: (statistics.mean(values[sh].values()), -float(sh)))
    print(f"\nconstant share: held-out mean {held_mean:.4f} (no threshold: {none_mean:.4f}); "
          f"fitted on every set: {fitted}")
    rule_rows, rule_fitted, rule_means = rule_lodo(values, n_train, args.sets)
    print("\n| held-out set | K picked on the others | held-out mean accuracy |\n|---|---|---|")
    for held, k, score in rule_rows:
        print(f"| {held} | {k if k else 'none'} | {score:.4f} |")
    rule_mean = statistics.mean(r[2] for r in rule_rows)
    print(f"\nrule share(n, epsilon): held-out mean {rule_mean:.4f}; fitted on every set: K = "
          f"{rule_fitted}; in-sample mean per K: "
          + ", ".join(f"{k}: {v:.4f}" for k, v in rule_means.items()))
    if args.reference:
        with open(args.reference) as f:
            ref = json.load(f)
        majority = {c["set"]: c["metrics"]["accuracy"]["mean"] for c in ref["cells"]
                    if c["learner"] == "constant" and "accuracy" in c.get("metrics", {})}
        shipped = {c: values[rule_share(rule_fitted, n_train[c[0]], c[1])][c] for c in values["0"]}
        for name, cells in [(f"share {sh}", values[sh]) for sh in SHARES] + [
                (f"rule K = {rule_fitted}", shipped)]:
            below = sorted(f"{s} ε={e} δ={d:g}" for (s, e, d), v in cells.items()
                           if e >= 1 and s in majority and v < majority[s] - 0.02)
            print(f"{name}: {len(below)} cells > 2 points below the majority class at "
                  f"ε >= 1" + (": " + "; ".join(below) if below else ""))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"shares": SHARES, "held_out": [
                {"set": h, "pick": p, "accuracy": a, "per_share": per} for h, p, a, per in rows],
                "fitted": fitted, "held_out_mean": held_mean, "no_threshold_mean": none_mean,
                "rule": {"k_grid": RULE_K, "held_out": [
                    {"set": h, "k": k, "accuracy": a} for h, k, a in rule_rows],
                    "held_out_mean": rule_mean, "fitted_k": rule_fitted}},
                f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
