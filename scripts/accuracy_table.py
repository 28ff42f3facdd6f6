#!/usr/bin/env python3
"""Every learner x every shipped data set x a grid of epsilons, at each
learner's defaults, as one Markdown table (docs/accuracy.md, "Every learner
on every shipped set").

Runs `privboost eval --algorithm A ... --json` once per (learner, data set)
with the whole epsilon list, so each cell is `--repeats` runs (x folds for
the cross-validated sets) with fresh OS noise. Owner-side figures: `eval`
reads the rows, so none of this is a private release.

    cargo build --release --locked
    python3 scripts/accuracy_table.py --repeats 10 > /tmp/table.md

A learner that cannot do a task (LazyBB on regression) shows a dash; at
delta > 0 LazyBB may use the delta (advanced composition) and DPBoost runs
pure, as their own `eval` does. By default DP-EBM runs at --ebm-delta and
the others are pure DP (delta = 0), the table's historical layout; --delta D
runs every learner at D instead (DP-EBM has had a pure variant since issue 25):

    python3 scripts/accuracy_table.py --repeats 10 --delta 0
    python3 scripts/accuracy_table.py --repeats 10 --delta 1e-6
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

SETS = [
    # name, eval data flags, metric columns
    ("Adult", ["--data", "data/adult/adult-train.csv", "--test", "data/adult/adult-test.csv",
               "--schema", "data/adult/schema.json"], "class"),
    ("Mushroom (5-fold)", ["--data", "data/mushroom/mushroom.csv",
                           "--schema", "data/mushroom/schema.json", "--folds", "5"], "class"),
    ("Breast cancer (5-fold)", ["--data", "data/breast-cancer/wdbc.csv",
                                "--schema", "data/breast-cancer/schema.json", "--folds", "5"], "class"),
    ("Abalone (5-fold)", ["--data", "data/abalone/abalone.csv",
                          "--schema", "data/abalone/schema.json", "--folds", "5"], "regression"),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default="target/release/privboost")
    ap.add_argument("--learners", default="lazybb,dp-ebm,dp-linear,dpboost,auto")
    ap.add_argument("--epsilon", default="0.1,0.5,1,5")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--ebm-delta", default="1e-6")
    ap.add_argument("--delta", default=None, help="every learner at this delta (overrides --ebm-delta)")
    ap.add_argument("--sets", default=None, help="comma-separated subset of the set names' first words")
    args = ap.parse_args()

    learners = args.learners.split(",")
    sets = SETS
    if args.sets:
        wanted = {s.lower() for s in args.sets.split(",")}
        sets = [s for s in SETS if s[0].split()[0].lower() in wanted]
    epsilons = args.epsilon.split(",")
    cells = {}  # (set, learner, eps) -> text
    with tempfile.TemporaryDirectory() as tmp:
        for set_name, flags, _kind in sets:
            for learner in learners:
                out = os.path.join(tmp, "r.json")
                delta = delta_of(learner, args)
                cmd = [args.binary, "eval", "--algorithm", learner, *flags,
                       "--epsilon", args.epsilon, "--delta", delta,
                       "--repeats", str(args.repeats), "--json", out]
                start = time.time()
                run = subprocess.run(cmd, capture_output=True, text=True)
                took = time.time() - start
                print(f"{set_name} / {learner}: exit {run.returncode} in {took:.1f} s",
                      file=sys.stderr)
                if run.returncode != 0:
                    msg = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "failed"
                    print(f"  {msg}", file=sys.stderr)
                    for eps in epsilons:
                        cells[(set_name, learner, eps)] = "—"
                    continue
                with open(out) as f:
                    results = json.load(f)["results"]
                for r in results:
                    # LazyBB's eval keeps its flat row (the paper's columns);
                    # the other learners report {"scores": ...}.
                    s = r.get("scores") or {
                        "accuracy": {"mean": r["accuracy_mean"], "std": r["accuracy_std"]},
                        "auc": {"mean": r["auc_mean"], "std": r["auc_std"]},
                    }
                    if "accuracy" in s:
                        text = (f"{s['accuracy']['mean']:.3f} ± {s['accuracy']['std']:.3f}"
                                f" / {s['auc']['mean']:.3f}")
                    else:
                        text = f"{s['rmse']['mean']:.3f} ± {s['rmse']['std']:.3f}"
                    cells[(set_name, learner, format_eps(r["epsilon"], epsilons))] = text

    if args.delta is not None:
        print(f"δ = {args.delta} for every learner\n")
    print("| data set | learner | " + " | ".join(f"ε = {e}" for e in epsilons) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in epsilons) + " |")
    for set_name, _flags, kind in sets:
        for learner in learners:
            row = [cells.get((set_name, learner, e), "—") for e in epsilons]
            label = learner if args.delta is not None else \
                learner + (f" (δ = {args.ebm_delta})" if learner == "dp-ebm" else "")
            print(f"| {set_name} | {label} | " + " | ".join(row) + " |")
    return 0


def delta_of(learner: str, args: argparse.Namespace) -> str:
    """The delta a learner runs at: --delta for all, else --ebm-delta for DP-EBM and 0 for the rest."""
    if args.delta is not None:
        return args.delta
    return args.ebm_delta if learner == "dp-ebm" else "0"


def format_eps(value: float, wanted: list) -> str:
    """The epsilon as the user wrote it on the command line."""
    for text in wanted:
        if float(text) == value:
            return text
    return str(value)


if __name__ == "__main__":
    sys.exit(main())
