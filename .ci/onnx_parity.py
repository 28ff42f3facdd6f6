"""ONNX export parity (issue 29): every exportable learner trained on every
shipped data set, exported with `privboost export --format onnx`, run with
onnxruntime on the test rows, and checked against `privboost predict`:
classes exactly, probabilities and values within 1e-6.

Usage: onnx_parity.py PRIVBOOST_BINARY WORK_DIR [--sets adult,mushroom,...]

The inputs are fed as docs/export.md says a caller must: one [N, 1] array
per feature column, strings for categorical columns (trimmed, as privboost
trims), doubles for numeric and boolean columns (boolean 1/0, NaN for a
declared missing token).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

TOLERANCE = 1e-6

# Shipped sets: (folder, schema, train file, test file or None = hold out
# the last fifth of the one file). `encodings` is generated here (every
# column kind and encoding rule the shipped sets do not use).
SETS = {
    "adult": ("adult", "schema.json", "adult-train.csv", "adult-test.csv"),
    "adult-private-bins": ("adult", "schema-private-bins.json", "adult-train.csv",
                           "adult-test.csv"),
    "mushroom": ("mushroom", "schema.json", "mushroom.csv", None),
    "breast-cancer": ("breast-cancer", "schema.json", "wdbc.csv", None),
    "abalone": ("abalone", "schema.json", "abalone.csv", None),
    "encodings": (None, None, None, None),
}

# Learners that refuse a schema with private bins (their plans say so).
NO_PRIVATE_BINS = {"auto", "ldp-naive-bayes"}

ENCODINGS_SCHEMA = {
    "label": {"column": "y", "positive": "yes", "negative": "no"},
    "columns": [
        {"name": "skip", "type": "ignore"},
        {"name": "num_i", "type": "numeric", "min": 0, "max": 10, "bins": 5,
         "missing": ["?", "NA"]},
        {"name": "num_t", "type": "numeric", "min": -1, "max": 1,
         "thresholds": [-0.5, 0.1, 0.3], "encoding": "thresholds"},
        {"name": "cat_o", "type": "categorical", "categories": ["a", "b", "c"],
         "unknown": "other", "missing": ["NA"]},
        {"name": "cat_m", "type": "categorical", "categories": ["x", "y"],
         "unknown": "missing", "missing": ["?"]},
        {"name": "cat_e", "type": "categorical", "categories": ["p", "q"]},
        {"name": "flag", "type": "boolean", "missing": ["?"]},
        {"name": "flag2", "type": "boolean"},
    ],
}


def encodings_set(work):
    """A deterministic table with values on cuts, out of bounds, missing
    tokens and unknown categories; the test rows have more of them."""
    import random
    rng = random.Random(29)
    header = ["skip", "num_i", "num_t", "cat_o", "cat_m", "cat_e", "flag", "flag2", "y"]

    def row():
        num_i = rng.choice(["?", "NA", "2", "4", "10", "-3", "12.5", str(rng.uniform(0, 10))])
        num_t = rng.choice(["0.1", "-0.5", "0.3", "5", "-7", str(rng.uniform(-1, 1))])
        cat_o = rng.choice(["a", "b", "c", "zz", "NA", " b "])
        cat_m = rng.choice(["x", "y", "?", "unseen"])
        cat_e = rng.choice(["p", "q"])
        flag = rng.choice(["1", "0", "yes", "no", "?", "true"])
        flag2 = rng.choice(["1", "0"])
        score = (num_i not in ("?", "NA") and float(num_i) > 5) + (cat_o == "a") + (flag in ("1", "yes", "true"))
        y = "yes" if score + rng.random() > 1.5 else "no"
        return [str(rng.random()), num_i, num_t, cat_o, cat_m, cat_e, flag, flag2, y]

    paths = []
    for part, n in (("train", 4000), ("test", 1000)):
        p = os.path.join(work, f"encodings-{part}.csv")
        with open(p, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(row() for _ in range(n))
        paths.append(p)
    schema_path = os.path.join(work, "encodings-schema.json")
    with open(schema_path, "w") as f:
        json.dump(ENCODINGS_SCHEMA, f)
    return schema_path, paths[0], paths[1]

# (name, train arguments, binary only)
LEARNERS = [
    ("lazybb-1r", ["--algorithm", "lazybb"], True),
    ("lazybb-topdown", ["--algorithm", "lazybb", "--weak-learner", "dp-top-down"], True),
    ("dp-ebm", ["--algorithm", "dp-ebm", "--delta", "1e-6"], False),
    ("dp-linear", ["--algorithm", "dp-linear"], False),
    ("dpboost", ["--algorithm", "dpboost"], False),
    ("auto", ["--algorithm", "auto"], False),
    # Trained on sampled-column local-DP reports of the training rows.
    ("ldp-naive-bayes", ["--algorithm", "ldp-naive-bayes", "--local-dp-epsilon", "2",
                         "--local-dp-protocol", "sampled-column"], True),
]

TRUE = {"true", "yes", "1", "t", "y"}
FALSE = {"false", "no", "0", "f", "n"}


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def split(path, work, name):
    """The first four fifths of `path` to train on, the last fifth to test."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    cut = len(body) * 4 // 5
    out = []
    for part, chunk in (("train", body[:cut]), ("test", body[cut:])):
        p = os.path.join(work, f"{name}-{part}.csv")
        with open(p, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(chunk)
        out.append(p)
    return out


def inputs(schema, test_csv):
    with open(test_csv, newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
    feeds = {}
    for col in schema["columns"]:
        kind, name = col["type"], col["name"]
        if kind == "ignore":
            continue
        missing = set(col.get("missing") or [])
        values = [r[name].strip() for r in rows]
        if kind == "categorical":
            feeds[name] = np.array(values, dtype=object).reshape(-1, 1)
        elif kind == "numeric":
            feeds[name] = np.array(
                [np.nan if v in missing else float(v) for v in values], dtype=np.float64
            ).reshape(-1, 1)
        elif kind == "boolean":
            def b(v):
                if v in missing:
                    return np.nan
                if v.lower() in TRUE:
                    return 1.0
                if v.lower() in FALSE:
                    return 0.0
                raise ValueError(f"{name}: not a boolean")
            feeds[name] = np.array([b(v) for v in values], dtype=np.float64).reshape(-1, 1)
        else:
            raise ValueError(f"{name}: unknown column type {kind}")
    return feeds


def check(binary, work, set_name, learner, args, schema_path, train, test, schema):
    stem = os.path.join(work, f"{set_name}-{learner}")
    if learner == "ldp-naive-bayes":
        reports = stem + "-reports.csv"
        run([binary, "randomize", "--schema", schema_path, "--epsilon", "2",
             "--protocol", "sampled-column", "--out", reports, train])
        run([binary, "train", "--data", reports, "--schema", schema_path,
             "--out", stem + ".json", *args])
    else:
        run([binary, "train", "--data", train, "--schema", schema_path, "--epsilon", "1",
             "--out", stem + ".json", *args])
    run([binary, "export", "--model", stem + ".json", "--format", "onnx", "--out", stem + ".onnx"])
    run([binary, "predict", "--model", stem + ".json", "--data", test, "--out", stem + ".csv"])
    with open(stem + ".csv", newline="") as f:
        expected = list(csv.DictReader(f))
    session = ort.InferenceSession(stem + ".onnx", providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    # The statement as the model gives it (auto's adds its selection and winner).
    stated = json.loads(meta["privboost.privacy"])
    written = json.load(open(stem + ".json"))["privacy"]
    assert all(stated[k] == v for k, v in written.items()), "metadata privacy statement differs"
    feeds = inputs(schema, test)
    names = [o.name for o in session.get_outputs()]
    got = dict(zip(names, session.run(None, feeds)))
    n = len(expected)
    worst = 0.0
    if "label" in got:
        labels, probs = got["label"], got["probabilities"]
        assert labels.shape == (n,) and probs.shape == (n, 2), (labels.shape, probs.shape)
        for i, e in enumerate(expected):
            if labels[i] != e["class"]:
                raise AssertionError(f"row {i}: class {labels[i]!r} != {e['class']!r}")
            d = max(abs(probs[i, 1] - float(e["probability"])),
                    abs(probs[i, 0] - (1.0 - float(e["probability"]))))
            worst = max(worst, d)
    else:
        values = got["variable"]
        assert values.shape == (n, 1), values.shape
        for i, e in enumerate(expected):
            worst = max(worst, abs(values[i, 0] - float(e["value"])))
    if worst > TOLERANCE:
        raise AssertionError(f"largest difference {worst:.3g} > {TOLERANCE}")
    return n, worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("work")
    ap.add_argument("--data", default="data")
    ap.add_argument("--sets", default=",".join(SETS))
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    failures = 0
    checked = 0
    start = time.time()
    for set_name in a.sets.split(","):
        folder, schema_file, train_file, test_file = SETS[set_name]
        if folder is None:
            schema_path, train, test = encodings_set(a.work)
        else:
            schema_path = os.path.join(a.data, folder, schema_file)
        schema = json.load(open(schema_path))
        regression = schema["label"].get("type") == "numeric"
        private_bins = any(isinstance(c.get("bins"), dict) for c in schema["columns"])
        if folder is None:
            pass
        elif test_file is None:
            train, test = split(os.path.join(a.data, folder, train_file), a.work, set_name)
        else:
            train = os.path.join(a.data, folder, train_file)
            test = os.path.join(a.data, folder, test_file)
        for learner, args, binary_only in LEARNERS:
            if (binary_only and regression) or (private_bins and learner in NO_PRIVATE_BINS):
                continue
            t = time.time()
            try:
                n, worst = check(a.binary, a.work, set_name, learner, args, schema_path,
                                 train, test, schema)
                checked += 1
                print(f"ok   {set_name:14} {learner:15} {n:6} rows, largest difference "
                      f"{worst:.2g} ({time.time() - t:.1f} s)", flush=True)
            except Exception as e:  # report every failure, then fail
                failures += 1
                print(f"FAIL {set_name:14} {learner:15} {e}", flush=True)
    print(f"{checked} models checked, {failures} failures, {time.time() - start:.0f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
