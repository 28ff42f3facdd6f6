#!/usr/bin/env python3
"""dp-linear's output- or objective-perturbation regulariser, chosen leave-one-dataset-out.

The default regulariser of `--solver output-perturbation` (and, with `--solver
objective-perturbation`, of that solver: delta = 0 only, m = n epsilon / sqrt(d) with the whole
epsilon, the grid 2^-20 .. 2^0; src/learn/linear/objective.rs) is a public rule

    lambda = 2 ^ round(log2(c) - a log2(m)),  clamped to [2^LO, 1],

with m the noise's "signal" (n epsilon / sqrt(d) with delta = 0, n sqrt(2 rho) with delta > 0;
src/learn/linear/output.rs, `noise_signal`). Because the rule lands on powers of two, one run per
power of two scores every rule exactly. This script

1. runs `privboost eval --algorithm dp-linear --solver output-perturbation --regularization 2^j`
   on the suite's folds (the same folds as scripts/suite.py) for every j of the grid, every
   epsilon and delta (cached under WORK_DIR/op-grid);
2. for every binary set, fits (a, c) on the *other* sets (the mean accuracy over their cells) and
   scores the fitted rule on the held-out set: the held-out table;
3. prints the rule fitted on every set (the default to ship) and, for reference, each set's
   best power of two (in-sample, so optimistic).

Usage: python3 scripts/linear_op_lodo.py [--solver S] [--sets a,b] [--jobs 2] [--json out.json]
"""

import argparse
import json
import math
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import suite  # noqa: E402  (the suite's folds, cache and parsing)

ROOT = suite.ROOT
# log2 of the grid's regularisers: the rule's clamp is [2^LO, 2^HI] (output.rs).
LO, HI = -12, 0
POWERS = [0.0, 0.25, 0.5, 0.75, 1.0]
SCALES = list(range(-6, 9))  # log2 c


# The objective-perturbation solver's grid (objective.rs, MIN_REGULARIZATION_LOG2).
OBJECTIVE_LO = -20


def signal(n: int, d: int, epsilon: float, delta: float, rho: float) -> float:
    if delta == 0:
        return n * epsilon / math.sqrt(max(d, 1))
    return n * math.sqrt(2 * rho)


def rule_log2(a: float, log2c: int, m: float, lo: int = LO) -> int:
    """The rule's power of two (Rust: output::default_regularization,
    objective::default_regularization with lo = OBJECTIVE_LO)."""
    j = round(log2c - a * math.log2(max(m, 1.0)))
    return min(HI, max(lo, j))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "privboost"))
    ap.add_argument("--suite-dir", default=os.path.join(ROOT, "..", "shared", "data", "suite"))
    ap.add_argument("--sets", help="comma-separated binary sets (default: every binary set)")
    ap.add_argument("--solver", default="output-perturbation",
                    choices=["output-perturbation", "objective-perturbation"])
    ap.add_argument("--scales", default="-6,8", help="the range of log2 c tried (inclusive)")
    ap.add_argument("--numeric-features", choices=["linear", "both", "intervals"],
                    help="the numeric treatment (default: the solver's)")
    ap.add_argument("--grid", help="log2 lambda from,to,step (default: the rule's whole range, step 1)")
    ap.add_argument("--epsilon", default="0.5,1,5")
    ap.add_argument("--deltas", default="0,1e-6")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--big", type=int, default=0,
                    help="sets with more training rows than this use only the first --big-folds folds "
                         "(0: every set uses every fold)")
    ap.add_argument("--big-folds", type=int, default=2)
    ap.add_argument("--work-dir", default=os.path.join(ROOT, "target", "suite"))
    ap.add_argument("--json", help="write the grid and the held-out table here")
    ap.add_argument("--reference", default=os.path.join(ROOT, "docs", "results", "suite", "suite.json"),
                    help="a suite.json whose diffprivlib and dp-linear cells are shown beside")
    args = ap.parse_args(argv)
    args.shipped = False
    args.binary = os.path.abspath(args.binary)
    lo = OBJECTIVE_LO if args.solver == "objective-perturbation" else LO
    scales = list(range(int(args.scales.split(",")[0]), int(args.scales.split(",")[1]) + 1))
    if args.solver == "objective-perturbation" and args.deltas != "0":
        ap.error("objective-perturbation is pure DP: use --deltas 0")
    grid_js = list(range(lo, HI + 1))
    if args.grid:
        g0, g1, step = (int(x) for x in args.grid.split(","))
        grid_js = list(range(g0, g1 + 1, step))
    mode_flags = ["--numeric-features", args.numeric_features] if args.numeric_features else []
    args.work_dir = os.path.abspath(args.work_dir)
    epsilons = [float(e) for e in args.epsilon.split(",")]
    deltas = [float(d) for d in args.deltas.split(",")]
    sets, _ = suite.discover(args)
    sets = [s for s in sets if s["task"] == "binary"]
    binary_sha = suite.sha256_file(args.binary)
    grid_name = "op-grid" if args.solver == "output-perturbation" else "objective-grid"
    cache = suite.Cache(os.path.join(args.work_dir, grid_name), True)
    tmp = os.path.join(args.work_dir, "op-grid-tmp")
    os.makedirs(tmp, exist_ok=True)

    # Public facts per set: n (training rows of a fold), K and d of the linear layout (from one
    # model file: its blocks), rho per (epsilon, delta) (from the model's statement).
    facts = {}
    for s in sets:
        pairs = suite.prepare_folds(s, args)
        s["pairs"] = pairs
        out = os.path.join(tmp, f"{s['name']}-shape.json")
        subprocess.run([args.binary, "train", "--algorithm", "dp-linear", "--solver",
                        args.solver, *mode_flags, "--data", pairs[0][0], "--schema", s["schema"],
                        "--epsilon", "1", "--out", out], check=True, capture_output=True)
        with open(out) as f:
            model = json.load(f)
        blocks = model["model"]["blocks"]
        facts[s["name"]] = {"n": s["n_train"], "K": len(blocks),
                            "d": sum(len(b["features"]) for b in blocks)}
        rhos = {}
        for d in deltas:
            for e in epsilons:
                if d == 0:
                    continue
                subprocess.run([args.binary, "train", "--algorithm", "dp-linear", "--solver",
                                "output-perturbation", "--data", pairs[0][0], "--schema",
                                s["schema"], "--epsilon", suite.eps_text(e), "--delta",
                                suite.eps_text(d), "--out", out], check=True, capture_output=True)
                with open(out) as f:
                    rhos[f"{e}/{d}"] = json.load(f)["privacy"]["rho"]
        facts[s["name"]]["rho"] = rhos
        suite.log(f"{s['name']}: {facts[s['name']]}")

    tasks = []
    for s in sets:
        s["used"] = args.big_folds if args.big and s["n_train"] > args.big else args.folds
        for k, (tr, te) in enumerate(s["pairs"][:s["used"]]):
            for d in deltas:
                for j in grid_js:
                    key = {"set": s["name"], "data": s["data_sha256"], "fold": k,
                           "folds": args.folds, "split_seed": args.split_seed, "delta": d,
                           "log2_lambda": j, "repeats": args.repeats, "binary": binary_sha,
                           "epsilons": epsilons}
                    if args.numeric_features:
                        key["numeric_features"] = args.numeric_features
                    tasks.append((s, k, tr, te, d, j, key))
    lock, done = threading.Lock(), [0]

    def run(t):
        s, k, tr, te, d, j, key = t
        if cache.get(key) is None:
            out = os.path.join(tmp, f"{s['name']}-{k}-{d}-{j}.json")
            cmd = [args.binary, "eval", "--algorithm", "dp-linear", "--solver",
                   args.solver, *mode_flags, "--regularization", repr(2.0 ** j), "--data", tr,
                   "--test", te, "--schema", s["schema"],
                   "--epsilon", ",".join(suite.eps_text(e) for e in epsilons),
                   "--delta", suite.eps_text(d), "--repeats", str(args.repeats), "--json", out]
            r = subprocess.run(cmd, capture_output=True, text=True,
                               env=dict(os.environ, RAYON_NUM_THREADS="1"))
            if r.returncode != 0:
                value = {"error": r.stderr.strip().splitlines()[-1:]}
            else:
                with open(out) as f:
                    res = suite.eval_results(json.load(f), "binary")
                value = {str(e): res[e]["metrics"]["accuracy"][1] for e in epsilons if e in res}
                os.remove(out)
            cache.put(key, value)
        with lock:
            done[0] += 1
            if done[0] % 50 == 0 or done[0] == len(tasks):
                suite.log(f"{done[0]}/{len(tasks)} grid processes")

    with ThreadPoolExecutor(args.jobs) as ex:
        list(ex.map(run, tasks))

    # acc[set][(eps, delta)][j]: mean accuracy over the folds.
    acc = {}
    for s, k, tr, te, d, j, key in tasks:
        value = cache.get(key)
        for e in epsilons:
            a = value.get(str(e)) if value and "error" not in value else None
            cell = acc.setdefault(s["name"], {}).setdefault((e, d), {}).setdefault(j, [])
            cell.append(a)

    used = {s["name"]: s["used"] for s in sets}

    def mean_or_none(xs, folds):
        xs = [x for x in xs if x is not None]
        return sum(xs) / len(xs) if len(xs) == folds else None

    grid = {name: {cell: {j: mean_or_none(v, used[name]) for j, v in js.items()}
                   for cell, js in cells.items()}
            for name, cells in acc.items()}

    def cell_j(name, e, d, a, c):
        f = facts[name]
        rho = f["rho"].get(f"{e}/{d}", 0.0)
        return rule_log2(a, c, signal(f["n"], f["d"], e, d, rho), lo)

    def score(names, d, a, c):
        vals = []
        for name in names:
            for e in epsilons:
                v = grid[name][(e, d)].get(cell_j(name, e, d, a, c))
                if v is None:
                    return -1.0
                vals.append(v)
        return sum(vals) / len(vals)

    def fit(names, d):
        return max(((a, c) for a in POWERS for c in scales),
                   key=lambda r: (round(score(names, d, *r), 9), -abs(r[0] - 0.5), -abs(r[1])))

    names = [s["name"] for s in sets]
    ref = {}
    if args.reference and os.path.exists(args.reference):
        with open(args.reference) as f:
            for c in json.load(f)["cells"]:
                m = (c.get("metrics") or {}).get("accuracy")
                if c["task"] == "binary" and m and c["learner"] in ("diffprivlib", "dp-linear"):
                    ref[(c["set"], c["learner"], c["epsilon"], c.get("delta") or 0.0)] = m["mean"]

    def shown_ref(name, e, d):
        dpl, old = ref.get((name, "diffprivlib", e, 0.0)), ref.get((name, "dp-linear", e, d))
        return ("—" if dpl is None else f"{dpl:.3f}") + " / " + ("—" if old is None else f"{old:.3f}")

    report = {"facts": facts, "folds_used": used, "grid": {n: {f"{e}/{d}": v for (e, d), v in cells.items()}
                                       for n, cells in grid.items()},
              "held_out": {}, "fitted_on_all": {}}
    for d in deltas:
        print(f"\n## delta = {suite.eps_text(d)}: held-out (rule fitted on the other sets)\n")
        print("| set | rule a, log2 c | " + " | ".join(f"ε {suite.eps_text(e)}" for e in epsilons)
              + " | best power of two per ε (in-sample) | diffprivlib / block descent per ε "
              "(reference) |")
        print("|---|---|" + "---|" * len(epsilons) + "---|---|")
        for held in names:
            a, c = fit([n for n in names if n != held], d)
            row = []
            for e in epsilons:
                j = cell_j(held, e, d, a, c)
                row.append(grid[held][(e, d)].get(j))
            best = []
            for e in epsilons:
                js = {j: v for j, v in grid[held][(e, d)].items() if v is not None}
                bj = max(js, key=js.get) if js else None
                best.append(f"2^{bj}: {js[bj]:.3f}" if bj is not None else "—")
            report["held_out"][f"{held}/{d}"] = {"rule": [a, c], "accuracy": row}
            print(f"| {held} | {a}, {c} | " + " | ".join("—" if v is None else f"{v:.3f}" for v in row)
                  + " | " + ", ".join(best) + " | "
                  + ", ".join(shown_ref(held, e, d) for e in epsilons) + " |")
        a, c = fit(names, d)
        report["fitted_on_all"][str(d)] = [a, c]
        print(f"\nfitted on every set (the shipped default): a = {a}, log2 c = {c} "
              f"(mean accuracy {score(names, d, a, c):.4f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
