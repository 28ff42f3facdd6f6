#!/usr/bin/env python3
"""The public benchmark suite: every privboost learner and the peers on the same folds.

Reads every data set of ../shared/data/suite/ (NAME.csv, schema.json, PROVENANCE.md; optionally the
shipped sets of data/ with --shipped), makes stratified folds once (fixed --split-seed, written as
train/test CSV pairs under --work-dir) and runs on the same folds:

  * every privboost learner at its defaults, one `privboost eval --algorithm A --data train.csv
    --test test.csv --schema schema.json --epsilon E1,E2,.. --delta D --repeats R --json ..` process
    per (set, learner, fold, delta), for every delta of --deltas;
  * the peers, inside a venv with pinned versions (scripts/suite-requirements.txt; --peers-python):
    diffprivlib's LogisticRegression / LinearRegression (pure DP), InterpretML's DP-EBM at delta 1e-6
    (interpret-ebm: at the same epsilon, under its add/remove relation; interpret-ebm-sub: at the
    smaller epsilon that gives the same guarantee under privboost's substitution relation), and the
    non-private references GBDT and the majority class / mean (scripts/suite_peers.py holds
    their encoding and honesty rules).

Writes one JSON file (--json: every cell with the set's public facts, metrics, fit times, plus the
machine, commands, versions and git commit) and one Markdown table (--markdown). Results are cached
per (set, fold, learner, epsilon, delta, repeats, binary hash) under --work-dir, so a rerun after
changing one learner recomputes only that learner. Multiclass sets are skipped with a note.

Owner-side figures on public data: nothing here is a private release.

    cargo build --release --locked
    python3 scripts/suite.py --json /tmp/suite.json --markdown /tmp/suite.md
    python3 scripts/suite_lodo.py /tmp/suite.json
    python3 scripts/suite.py --self-test
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import json
import math
import os
import platform
import random
import shlex
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEARNERS = ["lazybb", "dp-ebm", "dp-linear", "dpboost", "auto"]
PEERS = ["diffprivlib", "diffprivlib-nb", "interpret-ebm", "interpret-ebm-sub", "gbdt", "constant"]
NON_PRIVATE = {"gbdt", "constant"}
# InterpretML's DP-EBM at the same epsilon and at the substitution-equivalent one: no multiclass
# model, filed under --peer-delta.
INTERPRET = ("interpret-ebm", "interpret-ebm-sub")
PEER_HEAD = {"diffprivlib": "diffprivlib", "diffprivlib-nb": "diffprivlib NB",
             "interpret-ebm": "InterpretML DP-EBM",
             "interpret-ebm-sub": "InterpretML DP-EBM, same guarantee",
             "gbdt": "GBDT (non-private)", "constant": "majority / mean (non-private)"}
# Shipped sets of data/ (with --shipped): name -> (files, schema). A set with a given test file is
# run on that split (one "fold").
SHIPPED = {
    "adult": ({"train": "data/adult/adult-train.csv", "test": "data/adult/adult-test.csv"},
              "data/adult/schema.json"),
    "mushroom": ({"csv": "data/mushroom/mushroom.csv"}, "data/mushroom/schema.json"),
    "breast-cancer": ({"csv": "data/breast-cancer/wdbc.csv"}, "data/breast-cancer/schema.json"),
    "abalone": ({"csv": "data/abalone/abalone.csv"}, "data/abalone/schema.json"),
}
# Metrics per task: the table's metric first. Higher is better except for the errors.
METRICS = {"binary": ["accuracy", "auc", "positive_rate", "true_positive_rate"],
           "regression": ["rmse", "mae"], "multiclass": ["accuracy", "macro_f1"]}
LOWER_IS_BETTER = {"rmse", "mae"}


def log(msg: str) -> None:
    print(f"[suite {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# pure functions (covered by --self-test)
# ------------------------------------------------------------------------------------------------

def task_of(schema: dict) -> str:
    """binary, regression or multiclass, from the schema's label."""
    label = schema["label"]
    if label.get("type") == "numeric":
        return "regression"
    if "classes" in label:
        return "multiclass"
    return "binary"


def public_facts(schema: dict, n_rows: int) -> dict:
    """The facts a default may depend on: n, task, column kinds and counts, label bounds."""
    kinds = {"numeric": 0, "categorical": 0, "boolean": 0}
    for col in schema["columns"]:
        if col["type"] in kinds:
            kinds[col["type"]] += 1
    # As privboost's `ColumnKinds` counts them (booleans with the categorical
    # columns; ties to numeric), so that auto's prior reads the same key.
    majority = "numeric" if kinds["numeric"] >= kinds["categorical"] + kinds["boolean"] else "categorical"
    facts = {"task": task_of(schema), "n": n_rows, "n_numeric": kinds["numeric"],
             "n_categorical": kinds["categorical"], "n_boolean": kinds["boolean"],
             "n_features": sum(kinds.values()), "majority_kind": majority}
    if facts["task"] == "regression":
        facts["label_min"], facts["label_max"] = schema["label"]["min"], schema["label"]["max"]
    if facts["task"] == "multiclass":
        facts["k"] = len(schema["label"]["classes"])
    return facts


def stratum_keys(task: str, labels: list) -> list:
    """One stratum key per row: the class (binary, multiclass) or, for regression, the label value
    itself (make_folds(ordered=True) groups neighbouring values)."""
    if task == "regression":
        return [float(v) for v in labels]
    return [str(v) for v in labels]


def make_folds(keys: list, folds: int, seed: int, ordered: bool = False) -> list:
    """Fold index (0..folds-1) of every row, stratified and deterministic in `seed`.

    Classes (`ordered=False`): the rows of each class, shuffled, are dealt round-robin, continuing
    from one class to the next, so every fold gets floor or ceil of each class's share.
    Regression (`ordered=True`): rows sorted by label (ties by a seeded shuffle) form consecutive
    groups of `folds` rows; each group's rows go to distinct folds in a seeded random order, so every
    fold covers the label's whole range."""
    rng = random.Random(seed)
    n = len(keys)
    assignment = [-1] * n
    if ordered:
        jitter = [rng.random() for _ in range(n)]
        order = sorted(range(n), key=lambda i: (keys[i], jitter[i]))
        for start in range(0, n, folds):
            group = order[start:start + folds]
            slots = list(range(folds))
            rng.shuffle(slots)
            for row, slot in zip(group, slots):
                assignment[row] = slot
        return assignment
    by_class: dict = {}
    for i, k in enumerate(keys):
        by_class.setdefault(k, []).append(i)
    position = 0
    for k in sorted(by_class):
        rows = by_class[k]
        rng.shuffle(rows)
        for row in rows:
            assignment[row] = position % folds
            position += 1
    return assignment


def pool(groups: list) -> dict:
    """Mean and sample std over the union of groups given as (runs, mean, std)."""
    groups = [(n, m, s) for n, m, s in groups if n > 0 and m is not None and not math.isnan(m)]
    total = sum(n for n, _, _ in groups)
    if total == 0:
        return {"runs": 0, "mean": None, "std": None}
    mean = sum(n * m for n, m, _ in groups) / total
    if total == 1:
        return {"runs": 1, "mean": mean, "std": 0.0}
    ss = sum((n - 1) * ((s or 0.0) if not (s is None or math.isnan(s)) else 0.0) ** 2
             + n * (m - mean) ** 2 for n, m, s in groups)
    return {"runs": total, "mean": mean, "std": math.sqrt(ss / (total - 1))}


def summarise(values: list) -> tuple:
    """(runs, mean, sample std) of a list of numbers, NaN left out."""
    v = [x for x in values if x is not None and not math.isnan(x)]
    if not v:
        return (0, None, None)
    m = sum(v) / len(v)
    s = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return (len(v), m, s)


def eval_results(doc: dict, task: str) -> dict:
    """epsilon -> {metric: (runs, mean, std), "fit_seconds": mean or None} from `privboost eval
    --json`. Accepts both shapes: {"scores": ...} (every learner but LazyBB) and LazyBB's flat row
    (accuracy_mean, ...). Fields a binary does not report are left out."""
    out = {}
    for r in doc["results"]:
        if r.get("method") not in (None, "lazybb"):
            continue
        eps = r.get("epsilon")
        if eps is None:
            continue
        runs = int(r.get("runs", 0))
        metrics = {}
        if "scores" in r:
            for name, stat in r["scores"].items():
                metrics[name] = (runs, stat["mean"], stat["std"])
            fit = (r.get("fit_seconds") or {}).get("mean")
        else:
            for name in ("accuracy", "auc"):
                metrics[name] = (runs, r[f"{name}_mean"], r[f"{name}_std"])
            for name in ("positive_rate", "true_positive_rate"):
                if f"{name}_mean" in r:
                    metrics[name] = (runs, r[f"{name}_mean"], None)
            fit = r.get("fit_seconds_mean")
        out[float(eps)] = {"metrics": metrics, "fit_seconds": fit}
    return out


def fmt(value, metric: str) -> str:
    if value is None:
        return "—"
    if metric in LOWER_IS_BETTER:
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return f"{value:.3f}"


def eps_text(e: float) -> str:
    return f"{e:g}"


def peers_for(task: str, peers: list) -> list:
    """The peers that have a model for the task: InterpretML's DP-EBM has no multiclass classifier;
    diffprivlib's naive Bayes is the second multiclass peer (issue 27) and runs on multiclass sets
    only, so the binary and regression tables keep their peers."""
    if task == "multiclass":
        return [p for p in peers if p not in INTERPRET]
    return [p for p in peers if p != "diffprivlib-nb"]


def peer_delta(p: str, args_peer_delta: float):
    """The delta a peer's cell is filed under: None for the non-private references, InterpretML's
    delta for its DP-EBM (also when run at the substitution-equivalent epsilon, interpret-ebm-sub:
    the cell is filed under the epsilon it guarantees under substitution), 0 for the pure-DP
    diffprivlib models."""
    if p in NON_PRIVATE:
        return None
    return args_peer_delta if p in INTERPRET else 0.0


def cell_text(metrics: dict, task: str) -> tuple:
    """(value used to rank, text) of a table cell: the task's metric, and for multiclass the
    macro-F1 beside the accuracy."""
    metric = METRICS[task][0]
    v = (metrics or {}).get(metric, {}).get("mean")
    if v is None:
        return None, "—"
    text = fmt(v, metric)
    if task == "multiclass":
        f1 = (metrics or {}).get("macro_f1", {}).get("mean")
        text += f" / {fmt(f1, 'macro_f1')}"
    return v, text


def self_test() -> int:
    assert peers_for("multiclass", PEERS) == ["diffprivlib", "diffprivlib-nb", "gbdt", "constant"]
    assert peers_for("binary", PEERS) == ["diffprivlib", "interpret-ebm", "interpret-ebm-sub", "gbdt",
                                         "constant"]
    assert peer_delta("gbdt", 1e-6) is None and peer_delta("interpret-ebm", 1e-6) == 1e-6
    assert peer_delta("interpret-ebm-sub", 1e-6) == 1e-6
    assert "interpret-ebm-sub" not in peers_for("multiclass", PEERS)
    assert peer_delta("diffprivlib-nb", 1e-6) == 0.0
    assert cell_text({"accuracy": {"mean": 0.8}, "macro_f1": {"mean": 0.75}}, "multiclass") == \
        (0.8, "0.800 / 0.750")
    assert cell_text({"accuracy": {"mean": 0.8}}, "binary") == (0.8, "0.800")
    # recorded commands name no absolute path of this machine
    root = os.path.abspath(ROOT)
    parent = os.path.dirname(root)
    assert shown(f"{root}/target/release/privboost --schema {root}/../shared/s.json") == \
        "target/release/privboost --schema ../shared/s.json"
    assert shown(f"{parent}/venv/bin/python x") == "../venv/bin/python x"
    # folds: deterministic, a partition, stratified (each class split within one row per fold)
    keys = ["a"] * 53 + ["b"] * 17 + ["c"] * 4
    random.Random(3).shuffle(keys)
    f1, f2 = make_folds(keys, 5, 7), make_folds(keys, 5, 7)
    assert f1 == f2, "folds must not depend on anything but the seed"
    assert make_folds(keys, 5, 8) != f1, "another seed gives other folds"
    assert sorted(set(f1)) == [0, 1, 2, 3, 4]
    for cls in "abc":
        counts = [sum(1 for k, f in zip(keys, f1) if k == cls and f == j) for j in range(5)]
        assert max(counts) - min(counts) <= 1, (cls, counts)
    sizes = [f1.count(j) for j in range(5)]
    assert max(sizes) - min(sizes) <= 1, sizes
    # regression: every fold spans the range (each group of 5 neighbours hits every fold)
    values = [float(v) for v in range(100)]
    random.Random(1).shuffle(values)
    fr = make_folds(values, 5, 1, ordered=True)
    assert fr == make_folds(values, 5, 1, ordered=True)
    for g in range(20):
        got = sorted(fr[values.index(float(v))] for v in range(5 * g, 5 * g + 5))
        assert got == [0, 1, 2, 3, 4], (g, got)
    # pooling two groups equals the statistics of the concatenation
    a, b = [1.0, 2.0, 4.0], [3.0, 7.0]
    pooled = pool([summarise(a), summarise(b)])
    whole = summarise(a + b)
    assert pooled["runs"] == 5 and abs(pooled["mean"] - whole[1]) < 1e-12
    assert abs(pooled["std"] - whole[2]) < 1e-12
    assert pool([(1, 0.5, float("nan"))]) == {"runs": 1, "mean": 0.5, "std": 0.0}
    # facts and tasks
    schema = {"label": {"column": "y", "type": "numeric", "min": 0, "max": 1},
              "columns": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "categorical"},
                          {"name": "c", "type": "categorical"}, {"name": "i", "type": "ignore"}]}
    facts = public_facts(schema, 10)
    assert facts["task"] == "regression" and facts["majority_kind"] == "categorical"
    assert (facts["n_numeric"], facts["n_categorical"], facts["n_boolean"]) == (1, 2, 0)
    assert task_of({"label": {"column": "y", "classes": ["a", "b", "c"]}}) == "multiclass"
    assert task_of({"label": {"column": "y", "positive": "1"}}) == "binary"
    # both shapes of eval's JSON
    doc = {"results": [
        {"method": "lazybb", "epsilon": 1.0, "runs": 4, "accuracy_mean": 0.8, "accuracy_std": 0.1,
         "auc_mean": 0.9, "auc_std": 0.05, "fit_seconds_mean": 0.01},
        {"method": "majority", "epsilon": None, "runs": 4, "accuracy_mean": 0.5},
        {"epsilon": 0.5, "runs": 2, "scores": {"rmse": {"mean": 3.0, "std": 1.0},
                                               "mae": {"mean": 2.0, "std": 0.5}}}]}
    got = eval_results(doc, "binary")
    assert got[1.0]["metrics"]["accuracy"] == (4, 0.8, 0.1) and got[1.0]["fit_seconds"] == 0.01
    assert got[0.5]["metrics"]["rmse"] == (2, 3.0, 1.0) and got[0.5]["fit_seconds"] is None
    assert set(got) == {1.0, 0.5}
    print("suite.py self-test: ok")
    return 0


# ------------------------------------------------------------------------------------------------
# data sets and folds
# ------------------------------------------------------------------------------------------------

def shown(text: str) -> str:
    """A command as the outputs record it: this machine's paths made relative to the repository
    (`target/...`, `../shared/...`, `../other`), so no absolute path of the machine is written."""
    root = os.path.abspath(ROOT)
    return text.replace(root + os.sep, "").replace(os.path.dirname(root) + os.sep, "../")


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def discover(args) -> tuple:
    """(sets, skipped): sets as dicts with name, schema path, files, origin."""
    sets, skipped = [], []
    suite = args.suite_dir
    for name in sorted(os.listdir(suite)):
        d = os.path.join(suite, name)
        if not os.path.isdir(d):
            continue
        schema_path, csv_path = os.path.join(d, "schema.json"), os.path.join(d, f"{name}.csv")
        if not (os.path.exists(schema_path) and os.path.exists(csv_path)):
            skipped.append((name, "no NAME.csv or schema.json"))
            continue
        sets.append({"name": name, "schema": schema_path, "files": {"csv": csv_path},
                     "origin": "../shared/data/suite"})
    if args.shipped:
        for name, (files, schema) in SHIPPED.items():
            sets.append({"name": name, "schema": os.path.join(ROOT, schema),
                         "files": {k: os.path.join(ROOT, v) for k, v in files.items()},
                         "origin": "data/"})
    if args.sets:
        wanted = args.sets.split(",")
        unknown = [w for w in wanted if w not in {s["name"] for s in sets}]
        if unknown:
            raise SystemExit(f"suite: unknown sets {unknown} (have {[s['name'] for s in sets]})")
        sets = [s for s in sets if s["name"] in wanted]
    keep = []
    for s in sets:
        with open(s["schema"]) as f:
            s["schema_doc"] = json.load(f)
        s["task"] = task_of(s["schema_doc"])
        keep.append(s)
    return keep, skipped


def read_csv(path: str) -> tuple:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], [r for r in rows[1:] if r]


def prepare_folds(s: dict, args) -> list:
    """Write (once) and return [(train.csv, test.csv)] of the set; fills s["n"], s["facts"]."""
    label = s["schema_doc"]["label"]["column"]
    digest = hashlib.sha256()
    for p in [s["schema"]] + sorted(s["files"].values()):
        digest.update(sha256_file(p).encode())
    s["data_sha256"] = digest.hexdigest()
    folder = os.path.join(args.work_dir, "folds",
                          f"{s['name']}-k{args.folds}-seed{args.split_seed}-{s['data_sha256'][:12]}")
    if "test" in s["files"]:
        header, train = read_csv(s["files"]["train"])
        _, test = read_csv(s["files"]["test"])
        rows = train + test
        pairs = [(s["files"]["train"], s["files"]["test"])]
        s["n"], s["n_train"] = len(rows), len(train)
        col = header.index(label)
        s["positive_share"] = positive_share(s, [r[col] for r in test])
    else:
        header, rows = read_csv(s["files"]["csv"])
        col = header.index(label)
        values = [r[col].strip() for r in rows]
        s["n"] = len(rows)
        s["positive_share"] = positive_share(s, values)
        pairs = [(os.path.join(folder, f"fold{k}-train.csv"), os.path.join(folder, f"fold{k}-test.csv"))
                 for k in range(args.folds)]
        if not all(os.path.exists(p) for pair in pairs for p in pair):
            assignment = make_folds(stratum_keys(s["task"], values), args.folds, args.split_seed,
                                    ordered=s["task"] == "regression")
            os.makedirs(folder, exist_ok=True)
            for k, (tr, te) in enumerate(pairs):
                for path, keep in ((tr, lambda f: f != k), (te, lambda f: f == k)):
                    tmp = path + ".tmp"
                    with open(tmp, "w", newline="") as f:
                        w = csv.writer(f, lineterminator="\n")
                        w.writerow(header)
                        w.writerows(r for r, a in zip(rows, assignment) if keep(a))
                    os.replace(tmp, path)
        s["n_train"] = s["n"] - s["n"] // args.folds
    s["facts"] = public_facts(s["schema_doc"], s["n"])
    return pairs


def positive_share(s: dict, values: list):
    if s["task"] != "binary":
        return None
    pos = s["schema_doc"]["label"]["positive"]
    return sum(1 for v in values if v.strip() == pos) / max(1, len(values))


# ------------------------------------------------------------------------------------------------
# cache
# ------------------------------------------------------------------------------------------------

class Cache:
    """Results per cell key on disk. Disabled (--no-cache), it ignores what earlier runs wrote but
    still reads back what this run wrote (the table is assembled from the cache)."""

    def __init__(self, folder: str, enabled: bool):
        self.folder, self.enabled = folder, enabled
        self.written: set = set()
        os.makedirs(folder, exist_ok=True)

    def _path(self, key: dict) -> str:
        h = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
        return os.path.join(self.folder, h[:2], h + ".json")

    def get(self, key: dict):
        path = self._path(key)
        if not self.enabled and path not in self.written:
            return None
        try:
            with open(path) as f:
                return json.load(f)["value"]
        except (OSError, ValueError, KeyError):
            return None

    def put(self, key: dict, value) -> None:
        path = self._path(key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{threading.get_ident()}.tmp"
        with open(tmp, "w") as f:
            json.dump({"key": key, "value": value}, f)
        os.replace(tmp, path)
        self.written.add(path)


# ------------------------------------------------------------------------------------------------
# running
# ------------------------------------------------------------------------------------------------

class Progress:
    def __init__(self, total_fits: int):
        self.total, self.done, self.cached, self.lock = total_fits, 0, 0, threading.Lock()
        self.start, self.last = time.time(), 0.0

    def add(self, fits: int, what: str, cached: bool = False) -> None:
        with self.lock:
            self.done += fits
            self.cached += fits if cached else 0
            now = time.time()
            el = now - self.start
            computed = self.done - self.cached
            eta = el / computed * (self.total - self.done) if computed else 0.0
            if now - self.last > 2 or self.done == self.total:
                self.last = now
                log(f"{self.done}/{self.total} fits ({100 * self.done / max(1, self.total):.0f}%), "
                    f"elapsed {el / 60:.1f} min, eta {eta / 60:.1f} min; last: {what}")


def latest_key(key: dict) -> dict:
    """The key of the latest result of a cell from any binary (for --reuse)."""
    return {k: v for k, v in key.items() if k != "binary"} | {"binary": "latest"}


def cached_privboost(cache: Cache, key: dict, reuse: bool):
    return cache.get(latest_key(key) if reuse else key)


def run_privboost(task: dict, args, cache: Cache, progress: Progress, commands: list) -> None:
    """One eval process for the epsilons of `task` that are not cached."""
    reuse = task["learner"] in args.reuse
    todo = [e for e in task["epsilons"] if cached_privboost(cache, task["keys"][e], reuse) is None]
    fits = len(task["epsilons"]) * args.repeats
    if not todo:
        progress.add(fits, f"{task['what']} (cached)", cached=True)
        return
    out = os.path.join(args.work_dir, "tmp", f"{task['id']}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [args.binary, "eval", "--algorithm", task["learner"], "--data", task["train"],
           "--test", task["test"], "--schema", task["schema"],
           "--epsilon", ",".join(eps_text(e) for e in todo), "--delta", eps_text(task["delta"]),
           "--repeats", str(args.repeats), "--json", out] + args.eval_args
    env = dict(os.environ, RAYON_NUM_THREADS=str(args.threads))
    t0 = time.perf_counter()
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        code, stderr = run.returncode, run.stderr
    except subprocess.TimeoutExpired:
        code, stderr = -1, f"timed out after {args.timeout} s"
    wall = time.perf_counter() - t0
    commands.append(shown(" ".join(shlex.quote(c) for c in cmd)))
    if code != 0:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit {code}"
        reason = reason.removeprefix("Error: ").strip()
        for e in todo:
            value = {"error": reason[:300], "command": commands[-1], "binary": args.binary_sha}
            cache.put(task["keys"][e], value)
            cache.put(latest_key(task["keys"][e]), value)
    else:
        with open(out) as f:
            res = eval_results(json.load(f), task["task"])
        for e in todo:
            r = res.get(float(e))
            if r is None:
                cache.put(task["keys"][e], {"error": "no result for this epsilon in eval's JSON"})
                continue
            fit = r["fit_seconds"]
            value = {
                "metrics": {k: list(v) for k, v in r["metrics"].items()},
                # eval's own per-fit time if it reports one; else the process's wall time per fit
                "fit_seconds": fit if fit is not None else wall / (len(todo) * args.repeats),
                "fit_seconds_source": "eval" if fit is not None else "wall / fits",
                "wall_seconds": wall / len(todo), "command": commands[-1],
                "binary": args.binary_sha}
            cache.put(task["keys"][e], value)
            cache.put(latest_key(task["keys"][e]), value)
        os.remove(out)
    progress.add(fits, f"{task['what']} ({wall:.1f} s)")


def run_peers(task: dict, args, cache: Cache, progress: Progress, commands: list) -> None:
    """One venv process for the (method, epsilon) runs of one fold that are not cached."""
    todo = [(m, e) for m, e in task["cells"] if cache.get(task["keys"][(m, e)]) is None]
    fits = sum(1 if m in NON_PRIVATE else args.repeats for m, _ in task["cells"])
    if not todo:
        progress.add(fits, f"{task['what']} (cached)", cached=True)
        return
    runs = []
    for m, e in todo:
        for rep in range(1 if m in NON_PRIVATE else args.repeats):
            runs.append({"method": m, "epsilon": e, "repeat": rep})
    job = {"train": task["train"], "test": task["test"], "schema": task["schema"],
           "task": task["task"], "ebm_delta": args.peer_delta, "seed": task["seed"], "runs": runs}
    cmd = [args.peers_python, os.path.join(ROOT, "scripts", "suite_peers.py")]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, input=json.dumps(job), capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS=str(args.threads),
                                  OPENBLAS_NUM_THREADS=str(args.threads),
                                  MKL_NUM_THREADS=str(args.threads)))
    wall = time.perf_counter() - t0
    commands.append(shown(" ".join(shlex.quote(c) for c in cmd) + " < job.json  # " + json.dumps(
        {k: v for k, v in job.items() if k != "runs"})))
    got: dict = {}
    for line in run.stdout.splitlines():
        r = json.loads(line)
        got.setdefault((r["method"], r["epsilon"]), []).append(r)
    for m, e in todo:
        rs = got.get((m, e), [])
        errors = [r["error"] for r in rs if "error" in r]
        if errors or not rs:
            if not rs and run.returncode != 0:
                lines = [x for x in run.stderr.strip().splitlines() if x.strip()]
                errors = [lines[-1] if lines else f"exit {run.returncode}"]
            cache.put(task["keys"][(m, e)], {"error": (errors or ["no result"])[0]})
            continue
        names = METRICS[task["task"]] + (["mae"] if task["task"] == "regression" else [])
        metrics = {k: list(summarise([r["metrics"][k] for r in rs]))
                   for k in dict.fromkeys(names) if k in rs[0]["metrics"]}
        cache.put(task["keys"][(m, e)], {
            "metrics": metrics, "fit_seconds": sum(r["fit_seconds"] for r in rs) / len(rs),
            "fit_seconds_source": "wall time of encoding + fit in the venv",
            **({"run_epsilon": rs[0]["run_epsilon"]} if "run_epsilon" in rs[0] else {}),
            "warnings": sorted({w for r in rs for w in r.get("warnings", [])})[:10]})
    progress.add(fits, f"{task['what']} ({wall:.1f} s)")


def peers_python(args) -> str:
    if args.peers_python:
        return args.peers_python
    venv = os.path.join(ROOT, "target", "suite-venv")
    py = os.path.join(venv, "bin", "python")
    req = os.path.join(ROOT, "scripts", "suite-requirements.txt")
    stamp = os.path.join(venv, "requirements.sha256")
    want = sha256_file(req)
    if not (os.path.exists(py) and os.path.exists(stamp) and open(stamp).read() == want):
        log(f"creating the peers venv {venv} from scripts/suite-requirements.txt")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([py, "-m", "pip", "install", "--quiet", "-r", req], check=True)
        with open(stamp, "w") as f:
            f.write(want)
    return py


def git_commit() -> dict:
    def git(*a):
        r = subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None
    return {"commit": git("rev-parse", "HEAD"), "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def machine() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo") as f:
            mem = f.readline().split(":", 1)[1].strip()
    except OSError:
        pass
    return {"platform": platform.platform(), "cpu": model, "cpu_count": os.cpu_count(),
            "memory": mem, "python": platform.python_version(), "loadavg_start": os.getloadavg()}


# ------------------------------------------------------------------------------------------------
# output
# ------------------------------------------------------------------------------------------------

def markdown(doc: dict) -> str:
    cells = doc["cells"]
    by = {(c["set"], c["learner"], c["epsilon"], c["delta"]): c for c in cells}
    sets = doc["sets"]
    lines = [f"Benchmark suite: {doc['protocol']['description']}. Binary sets: accuracy; regression "
             "sets: RMSE (lower is better); multiclass sets: accuracy / macro-F1; mean over folds x "
             "repeats. **Bold**: the best privboost "
             "learner of the row. Peers see only the schema's public bounds and domains; "
             "InterpretML's DP-EBM runs at δ = "
             f"{eps_text(doc['protocol']['peer_delta'])} in every table"
             + ("; its guarantee is for add/remove of a row, privboost's and diffprivlib's for "
                "substitution, so \"same guarantee\" runs it at the smaller ε' that gives "
                "(ε, δ) under substitution (scripts/suite_peers.py, substitution_epsilon)"
                if "interpret-ebm-sub" in doc["protocol"]["peers"] else "") + ".", ""]
    reasons: dict = {}
    learners = [l for l in LEARNERS if l in doc["protocol"]["learners"]]
    peers = [p for p in PEERS if p in doc["protocol"]["peers"]]
    for delta in doc["protocol"]["deltas"]:
        lines.append(f"#### privboost at δ = {eps_text(delta)}")
        lines.append("")
        head = ["set (task, n)", "ε"] + learners + [PEER_HEAD[p] for p in peers]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        for s in sets:
            task = s["facts"]["task"]
            metric = METRICS[task][0]
            for e in doc["protocol"]["epsilons"]:
                short = {"binary": "bin", "regression": "reg", "multiclass": "mc"}[task]
                row = [f"{s['name']} ({short}, {s['facts']['n']:,})", eps_text(e)]
                vals, texts = {}, {}
                for l in learners:
                    c = by.get((s["name"], l, e, delta))
                    v, t = cell_text(c.get("metrics") if c else None, task)
                    if v is not None:
                        vals[l], texts[l] = v, t
                    elif c and c.get("error"):
                        reasons.setdefault((l, c["error"]), []).append(s["name"])
                best = None
                if vals:
                    pick = min if metric in LOWER_IS_BETTER else max
                    best = pick(vals.values())
                for l in learners:
                    if l in vals:
                        t = texts[l]
                        row.append(f"**{t}**" if vals[l] == best else t)
                    else:
                        row.append("—")
                for p in peers:
                    pe = None if p in NON_PRIVATE else e
                    c = by.get((s["name"], p, pe, peer_delta(p, doc["protocol"]["peer_delta"])))
                    if c and c.get("error"):
                        reasons.setdefault((p, c["error"]), []).append(s["name"])
                    row.append(cell_text(c.get("metrics") if c else None, task)[1]
                               if p in peers_for(task, peers) else "n/a")
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    if reasons:
        lines.append("Dashes:")
        for (l, why), names in sorted(reasons.items()):
            uniq = sorted(set(names))
            lines.append(f"- {l} on {', '.join(uniq)}: {why}")
        lines.append("")
    lines.append("diffprivlib: LogisticRegression on binary and multiclass sets, LinearRegression on "
                 "regression sets; diffprivlib NB: GaussianNB, multiclass sets only (n/a elsewhere); "
                 "InterpretML's DP-EBM has no multiclass classifier (n/a); GBDT and the majority "
                 "class / mean are non-private references.")
    lines.append("")
    lines.append("Fit time (seconds per fit, mean over every cell; total = sum over all fits):")
    lines.append("")
    lines.append("| learner | δ | fits | mean s / fit | total fit s |")
    lines.append("|---|---|---|---|---|")
    for t in doc["fit_time_totals"]:
        lines.append(f"| {t['learner']} | {'—' if t['delta'] is None else eps_text(t['delta'])} | "
                     f"{t['fits']} | {t['mean_seconds']:.4f} | {t['total_seconds']:.1f} |")
    lines.append("")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--self-test", action="store_true", help="run the pure functions' checks")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target", "release", "privboost"))
    ap.add_argument("--suite-dir", default=os.path.join(ROOT, "..", "shared", "data", "suite"))
    ap.add_argument("--shipped", action="store_true", help="also run the shipped sets of data/")
    ap.add_argument("--sets", help="comma-separated subset of set names")
    ap.add_argument("--learners", default=",".join(LEARNERS + PEERS),
                    help="comma-separated privboost learners and peers (" + ",".join(PEERS) + ")")
    ap.add_argument("--no-peers", action="store_true", help="privboost learners only")
    ap.add_argument("--epsilon", default="0.1,0.5,1,5")
    ap.add_argument("--deltas", default="0,1e-6", help="deltas for the privboost learners")
    ap.add_argument("--peer-delta", type=float, default=1e-6, help="InterpretML DP-EBM's delta")
    ap.add_argument("--repeats", type=int, default=6, help="fresh-noise repeats per fold")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--split-seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="processes in parallel")
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per process (RAYON_NUM_THREADS / OMP_NUM_THREADS)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per privboost process")
    ap.add_argument("--peers-python", help="python of a venv with scripts/suite-requirements.txt "
                                           "(default: creates target/suite-venv)")
    ap.add_argument("--work-dir", default=os.path.join(ROOT, "target", "suite"))
    ap.add_argument("--no-cache", action="store_true", help="recompute every cell")
    ap.add_argument("--reuse", default="",
                    help="privboost learners whose latest cached results are taken whatever binary "
                         "made them (a rebuild changes the binary's hash: after changing one "
                         "learner, --reuse the others)")
    ap.add_argument("--eval-args", default="",
                    help="extra arguments for every privboost eval (e.g. \"--solver "
                         "objective-perturbation\"), for a measurement beside the defaults; part "
                         "of the cache key")
    ap.add_argument("--json", help="output JSON file")
    ap.add_argument("--markdown", help="output Markdown file (else printed)")
    args = ap.parse_args(argv)
    if args.self_test:
        return self_test()
    t_start = time.time()
    started = {"git": git_commit(), "machine": machine()}  # before any run: the commit and load
    args.binary = os.path.abspath(args.binary)
    args.work_dir = os.path.abspath(args.work_dir)
    if not os.path.exists(args.binary):
        raise SystemExit(f"suite: no binary at {args.binary}: cargo build --release --locked")
    chosen = args.learners.split(",")
    bad = [c for c in chosen if c not in LEARNERS + PEERS]
    if bad:
        raise SystemExit(f"suite: unknown learners {bad}; choose from {LEARNERS + PEERS}")
    learners = [l for l in LEARNERS if l in chosen]
    peers = [] if args.no_peers else [p for p in PEERS if p in chosen]
    epsilons = [float(e) for e in args.epsilon.split(",")]
    deltas = [float(d) for d in args.deltas.split(",")]
    sets, skipped = discover(args)
    for name, why in skipped:
        log(f"skipping {name}: {why}")
    binary_sha = sha256_file(args.binary)
    args.binary_sha = binary_sha
    try:
        args.eval_args = shlex.split(args.eval_args)
    except ValueError as e:
        raise SystemExit(f"suite: --eval-args {args.eval_args!r}: {e}")
    args.reuse = [l for l in args.reuse.split(",") if l]
    bad = [l for l in args.reuse if l not in LEARNERS]
    if bad:
        raise SystemExit(f"suite: --reuse takes privboost learners, not {bad}")
    version = subprocess.run([args.binary, "--version"], capture_output=True, text=True).stdout.strip()
    py = peers_python(args) if peers else None
    args.peers_python = py
    peer_info = {}
    if py:
        r = subprocess.run([py, os.path.join(ROOT, "scripts", "suite_peers.py"), "--versions"],
                           capture_output=True, text=True, check=True)
        peer_info = json.loads(r.stdout)
    peer_code = hashlib.sha256((open(os.path.join(ROOT, "scripts", "suite_peers.py")).read()
                                + json.dumps(peer_info.get("versions", {}), sort_keys=True)).encode()
                               ).hexdigest()
    cache = Cache(os.path.join(args.work_dir, "cache"), not args.no_cache)

    tasks_pb, tasks_peer = [], []
    for s in sets:
        pairs = prepare_folds(s, args)
        for k, (tr, te) in enumerate(pairs):
            base = {"set": s["name"], "data": s["data_sha256"], "folds": len(pairs),
                    "split_seed": args.split_seed, "fold": k, "repeats": args.repeats}
            for l in learners:
                for d in deltas:
                    keys = {e: {**base, "learner": l, "epsilon": e, "delta": d, "binary": binary_sha}
                               | ({"eval_args": args.eval_args} if args.eval_args else {})
                            for e in epsilons}
                    tasks_pb.append({"id": f"{s['name']}-{l}-{k}-{d}", "learner": l, "delta": d,
                                     "train": tr, "test": te, "schema": s["schema"], "task": s["task"],
                                     "epsilons": epsilons, "keys": keys, "set": s["name"], "fold": k,
                                     "what": f"{s['name']} fold {k} {l} δ={eps_text(d)}"})
            if peers_for(s["task"], peers):
                cells = []
                for p in peers_for(s["task"], peers):
                    cells += [(p, None)] if p in NON_PRIVATE else [(p, e) for e in epsilons]
                keys = {(p, e): {**base, "learner": p, "epsilon": e, "peers": peer_code}
                        for p, e in cells}
                tasks_peer.append({"train": tr, "test": te, "schema": s["schema"], "task": s["task"],
                                   "cells": cells, "keys": keys, "seed": args.split_seed * 100 + k,
                                   "set": s["name"], "fold": k,
                                   "what": f"{s['name']} fold {k} peers"})
    total = (len(tasks_pb) * len(epsilons) * args.repeats
             + sum(sum(1 if m in NON_PRIVATE else args.repeats for m, _ in t["cells"])
                   for t in tasks_peer))
    log(f"{len(sets)} sets, {len(learners)} learners x {len(deltas)} deltas, {len(peers)} peers, "
        f"{len(epsilons)} epsilons, {args.folds} folds x {args.repeats} repeats: "
        f"{len(tasks_pb) + len(tasks_peer)} processes, {total} fits; --jobs {args.jobs}")
    progress = Progress(total)
    commands: list = []
    work = [(run_privboost, t) for t in tasks_pb] + [(run_peers, t) for t in tasks_peer]
    # Slowest first (peers' DP-EBM), so that with --jobs > 1 the tail stays short.
    work.sort(key=lambda w: 0 if w[0] is run_peers else 1)
    if args.jobs <= 1:
        for fn, t in work:
            fn(t, args, cache, progress, commands)
    else:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool_:
            for f in [pool_.submit(fn, t, args, cache, progress, commands) for fn, t in work]:
                f.result()

    # gather the cells
    cells, fit_totals = [], {}
    for s in sets:
        facts = s["facts"]
        groups: dict = {}
        for t in tasks_pb:
            if t["set"] != s["name"]:
                continue
            for e in epsilons:
                groups.setdefault((t["learner"], e, t["delta"]), []).append(
                    (t["fold"], cached_privboost(cache, t["keys"][e], t["learner"] in args.reuse)))
        for t in tasks_peer:
            if t["set"] != s["name"]:
                continue
            for (p, e) in t["cells"]:
                d = peer_delta(p, args.peer_delta)
                groups.setdefault((p, e, d), []).append((t["fold"], cache.get(t["keys"][(p, e)])))
        for (learner, e, d), recs in groups.items():
            cell = {"set": s["name"], "origin": s["origin"], **facts, "task": s["task"],
                    "positive_share": s["positive_share"], "learner": learner,
                    "kind": "privboost" if learner in LEARNERS else
                            ("reference" if learner in NON_PRIVATE else "peer"),
                    "epsilon": e, "delta": d}
            errors = [r.get("error") for _, r in recs if r is None or "error" in r]
            if errors:
                cell["error"] = next((x for x in errors if x), "not run")
                cell["commands"] = sorted({shown(r["command"]) for _, r in recs if r and "command" in r})[:1]
                cells.append(cell)
                continue
            names = list(dict.fromkeys(n for _, r in recs for n in r["metrics"]))
            cell["metrics"] = {n: pool([tuple(r["metrics"][n]) for _, r in recs if n in r["metrics"]])
                               for n in names}
            runs = sum(r["metrics"][names[0]][0] for _, r in recs)
            fit = sum(r["fit_seconds"] * r["metrics"][names[0]][0] for _, r in recs)
            cell["fit_seconds"] = {"mean": fit / max(1, runs), "total": fit,
                                   "source": recs[0][1].get("fit_seconds_source")}
            cell["runs"] = runs
            cell["per_fold"] = [{"fold": k, **{n: r["metrics"][n][1] for n in names}}
                                for k, r in sorted(recs, key=lambda x: x[0])]
            # shown() again: cells cached by older versions recorded absolute paths.
            cell["commands"] = sorted({shown(r["command"]) for _, r in recs if "command" in r})
            binaries = sorted({r["binary"] for _, r in recs if "binary" in r})
            if binaries:
                cell["binary_sha256"] = binaries
            if "run_epsilon" in recs[0][1]:  # interpret-ebm-sub: the epsilon it was run at
                cell["run_epsilon"] = recs[0][1]["run_epsilon"]
            if "warnings" in recs[0][1]:
                cell["warnings"] = sorted({w for _, r in recs for w in r.get("warnings", [])})[:10]
            tot = fit_totals.setdefault((learner, d), [0, 0.0])
            tot[0] += runs
            tot[1] += fit
            cells.append(cell)
    order = {n: i for i, n in enumerate(LEARNERS + PEERS)}
    totals = [{"learner": l, "delta": d, "fits": n, "total_seconds": t, "mean_seconds": t / max(1, n)}
              for (l, d), (n, t) in sorted(fit_totals.items(),
                                           key=lambda x: (order[x[0][0]], x[0][1] or 0))]
    elapsed = time.time() - t_start
    doc = {
        "created": dt.datetime.now().isoformat(timespec="seconds"),
        "command": shown(" ".join(shlex.quote(a) for a in ["scripts/suite.py"] + (argv or sys.argv[1:]))),
        "elapsed_seconds": elapsed,
        "git": started["git"],
        "machine": {**started["machine"], "loadavg_end": os.getloadavg()},
        "versions": {"privboost": version, "binary_sha256": binary_sha,
                     "peers": peer_info.get("versions"), "runner_python": platform.python_version()},
        "protocol": {
            "description": f"{args.folds}-fold stratified CV (split seed {args.split_seed}, the same "
                           f"folds for every learner) x {args.repeats} repeats with fresh noise",
            "folds": args.folds, "split_seed": args.split_seed, "repeats": args.repeats,
            "epsilons": epsilons, "deltas": deltas, "peer_delta": args.peer_delta,
            "learners": learners, "peers": peers, "jobs": args.jobs, "threads": args.threads,
            "reused_from_cache_any_binary": args.reuse,
            "std": "sample std over folds x repeats (pooled from per-fold means and stds)",
            "accuracy": "predicted class (privboost: the model's class; peers: P(positive) > 0.5)",
            "fit_seconds": "privboost: eval's own per-fit time (plan + fit) when it reports one, "
                           "else process wall time / fits; peers: wall time of encoding + fit",
            "peer_hyperparameters": peer_info.get("hyperparameters"),
        },
        "sets": [{"name": s["name"], "origin": s["origin"], "facts": s["facts"],
                  "positive_share": s["positive_share"], "data_sha256": s["data_sha256"]}
                 for s in sets],
        "skipped": [{"name": n, "why": w} for n, w in skipped],
        "fit_time_totals": totals,
        "cells": cells,
        "commands": commands,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    md = markdown(doc)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(md)
    else:
        print(md)
    for t in totals:
        log(f"{t['learner']:14s} δ={'-' if t['delta'] is None else eps_text(t['delta']):6s} "
            f"{t['fits']:5d} fits, {t['total_seconds']:8.1f} s total, {t['mean_seconds']:.4f} s/fit")
    log(f"done in {elapsed / 60:.1f} min"
        + (f"; JSON {args.json}" if args.json else "") + (f"; table {args.markdown}" if args.markdown else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
