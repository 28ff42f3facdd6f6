#!/usr/bin/env python3
"""dp-linear's default ridge, chosen by leave-one-dataset-out on the benchmark suite (issue 25).

Reads one `scripts/suite.py` run of dp-linear per ridge value (the same sets, folds and epsilons;
each run through a wrapper binary that appends `--ridge R`), and scores rule families that choose
the ridge from the cells of the *other* sets: one ridge for everything (`global`), one per delta
kind, one per task, one per task and delta kind. A cell's regret is accuracy points below the best
ridge of the cell (regression: RMSE above it, as a share). Prints each family's held-out mean regret
per task and delta, and each fixed ridge's.

    printf '#!/bin/sh\\nexec target/release/privboost "$@" --ridge 8\\n' > /tmp/ridge8; chmod +x /tmp/ridge8
    python3 scripts/suite.py --no-peers --learners dp-linear --jobs 2 --repeats 4 --sets ... \\
        --binary /tmp/ridge8 --work-dir /tmp/work8 --json /tmp/ridge8.json      # and 4
    python3 scripts/linear_ridge_lodo.py 4=/tmp/ridge4.json 8=/tmp/ridge8.json
"""

from __future__ import annotations

import json
import sys


def load(runs: dict) -> tuple:
    value, task = {}, {}
    for ridge, path in runs.items():
        with open(path) as f:
            for c in json.load(f)["cells"]:
                if c["learner"] != "dp-linear":
                    continue
                m = (c.get("metrics") or {}).get("rmse" if c["task"] == "regression" else "accuracy")
                if m:
                    task[c["set"]] = c["task"]
                    value[(c["set"], c["epsilon"], c["delta"], ridge)] = m["mean"]
    return value, task


def main(argv: list) -> int:
    runs = {float(a.split("=", 1)[0]): a.split("=", 1)[1] for a in argv}
    if len(runs) < 2:
        raise SystemExit("usage: linear_ridge_lodo.py R1=run1.json R2=run2.json [...]")
    ridges = sorted(runs)
    value, task = load(runs)
    cells = sorted({k[:3] for k in value if all(k[:3] + (r,) in value for r in ridges)})
    sets = sorted({c[0] for c in cells})

    def regret(cell, r):
        vals = [value[cell + (q,)] for q in ridges]
        v = value[cell + (r,)]
        if task[cell[0]] == "regression":
            return (v - min(vals)) / min(vals)
        return max(vals) - v

    def groups(cells_):
        return [(t, d) for t in ("binary", "regression") for d in (0.0, 1e-6)
                if any(task[c[0]] == t and c[2] == d for c in cells_)]

    def row(name, regret_of):
        parts = []
        for t, d in groups(cells):
            ks = [c for c in cells if task[c[0]] == t and c[2] == d]
            parts.append(f"{sum(regret_of(c) for c in ks) / len(ks):.4f}")
        total = sum(regret_of(c) for c in cells) / len(cells)
        print(f"| {name} | " + " | ".join(parts) + f" | {total:.4f} |")

    print("| rule | " + " | ".join(f"{t}, δ = {d:g}" for t, d in groups(cells)) + " | all |")
    print("|---" * (len(groups(cells)) + 2) + "|")
    families = {
        "global (held out)": lambda c: 0,
        "per delta (held out)": lambda c: c[2] > 0,
        "per task (held out)": lambda c: task[c[0]],
        "per task and delta (held out)": lambda c: (task[c[0]], c[2] > 0),
    }
    for name, group in families.items():
        held = {}
        for h in sets:
            for c in (c for c in cells if c[0] == h):
                train = [x for x in cells if x[0] != h and group(x) == group(c)]
                # Ties go to the smaller ridge.
                pick = min(ridges, key=lambda r: (sum(regret(x, r) for x in train), r))
                held[c] = regret(c, pick)
        row(name, held.__getitem__)
    for r in ridges:
        row(f"ridge {r:g} everywhere", lambda c, r=r: regret(c, r))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
