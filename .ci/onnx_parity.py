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
# the last fifth of the one file).
SETS = {
    "adult": ("adult", "schema.json", "adult-train.csv", "adult-test.csv"),
    "mushroom": ("mushroom", "schema.json", "mushroom.csv", None),
    "breast-cancer": ("breast-cancer", "schema.json", "wdbc.csv", None),
    "abalone": ("abalone", "schema.json", "abalone.csv", None),
}

# (name, train arguments, binary only)
LEARNERS = [
    ("lazybb-1r", ["--algorithm", "lazybb"], True),
    ("lazybb-topdown", ["--algorithm", "lazybb", "--weak-learner", "dp-top-down"], True),
    ("dp-ebm", ["--algorithm", "dp-ebm", "--delta", "1e-6"], False),
    ("dp-linear", ["--algorithm", "dp-linear"], False),
    ("dpboost", ["--algorithm", "dpboost"], False),
    ("auto", ["--algorithm", "auto"], False),
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
    run([binary, "train", "--data", train, "--schema", schema_path, "--epsilon", "1",
         "--out", stem + ".json", *args])
    run([binary, "export", "--model", stem + ".json", "--format", "onnx", "--out", stem + ".onnx"])
    run([binary, "predict", "--model", stem + ".json", "--data", test, "--out", stem + ".csv"])
    with open(stem + ".csv", newline="") as f:
        expected = list(csv.DictReader(f))
    session = ort.InferenceSession(stem + ".onnx", providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert json.loads(meta["privboost.privacy"]) == json.load(open(stem + ".json"))["privacy"] \
        or learner == "auto", "metadata privacy statement differs from the model's"
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
        schema_path = os.path.join(a.data, folder, schema_file)
        schema = json.load(open(schema_path))
        regression = schema["label"].get("type") == "numeric"
        if test_file is None:
            train, test = split(os.path.join(a.data, folder, train_file), a.work, set_name)
        else:
            train = os.path.join(a.data, folder, train_file)
            test = os.path.join(a.data, folder, test_file)
        for learner, args, binary_only in LEARNERS:
            if binary_only and regression:
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
