#!/usr/bin/env python3
"""Regenerate the shipped data sets in data/ from the raw UCI files.

Usage: scripts/prepare_data.py [SOURCE]   (SOURCE defaults to ../shared/data,
relative to the repository root; it holds adult/, mushroom/, breast-cancer/ and
SHA256SUMS).

Steps, in order:
1. Verify the sha256 of every raw file used against SOURCE/SHA256SUMS (and of the
   .names files against the values recorded in data/*/PROVENANCE.md); stop on any
   mismatch.
2. Write clean CSVs with a header row (UTF-8, comma separated, "\n" line ends,
   RFC 4180 quoting where needed, which none of these files needs):
   - data/adult/adult-train.csv from adult.data and data/adult/adult-test.csv from
     adult.test: fields split on "," and stripped of the space after each comma,
     blank lines dropped, adult.test's first line "|1x3 Cross validator" dropped and
     the trailing "." of its labels removed. "?" is kept.
   - data/mushroom/mushroom.csv: the 8,124 rows unchanged, under a header naming the
     class and the 22 attributes of agaricus-lepiota.names.
   - data/breast-cancer/wdbc.csv: the 569 rows unchanged, under a header
     id, diagnosis and the 30 feature names (10 measures x mean, se, worst).
3. Write each data/<name>/schema.json: Adult and Mushroom from the public
   descriptions (.names files); WDBC with bounds rounded outward from the data (the
   owner's declaration; the rule of `propose_schema` in src/data/propose.rs).
4. Check the row and label counts and print the sha256 of every output file (these
   are recorded in data/*/PROVENANCE.md).

Python 3 standard library only.
"""

import csv
import hashlib
import io
import json
import math
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(REPO, "data")

# sha256 of the .names files (SHA256SUMS covers only the data files); from the
# source PROVENANCE.md.
NAMES_SHA256 = {
    "adult/adult.names": "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    "mushroom/agaricus-lepiota.names": "79e440566900901a5900febc1f3c9659e3746e306a5fa1aed4d084a1e4da76fd",
}

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]

# Public bounds of Adult's numeric columns (the owner's declaration). adult.names
# gives no ranges; these are the ranges of the published files (train and test),
# which is what the LazyBB paper's 10 equal-width bins imply.
ADULT_BOUNDS = {
    "age": (17, 90),
    "fnlwgt": (12285, 1490400),
    "education-num": (1, 16),
    "capital-gain": (0, 99999),
    "capital-loss": (0, 4356),
    "hours-per-week": (1, 99),
}

# Columns where adult.data or adult.test contain "?" (adult.names: 'Convert Unknown
# to "?"').
ADULT_MISSING = {"workclass", "occupation", "native-country"}

WDBC_MEASURES = [
    "radius", "texture", "perimeter", "area", "smoothness", "compactness",
    "concavity", "concave_points", "symmetry", "fractal_dimension",
]
WDBC_COLUMNS = ["id", "diagnosis"] + [
    f"{m}_{s}" for s in ("mean", "se", "worst") for m in WDBC_MEASURES
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 16), b""):
            h.update(block)
    return h.hexdigest()


def verify_sources(src):
    sums = {}
    with open(os.path.join(src, "SHA256SUMS")) as f:
        for line in f:
            if line.strip():
                digest, name = line.split()
                sums[name] = digest
    sums.update(NAMES_SHA256)
    for name, digest in sorted(sums.items()):
        got = sha256(os.path.join(src, name))
        if got != digest:
            sys.exit(f"sha256 mismatch for {name}: expected {digest}, got {got}")
        print(f"ok  {name}")


def write_csv(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return path


def read_adult(path, test):
    rows = []
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("|"):
                continue
            fields = [x.strip() for x in line.split(",")]
            assert len(fields) == 15, f"{path}: {len(fields)} fields"
            if test:
                assert fields[-1].endswith("."), path
                fields[-1] = fields[-1][:-1]
            rows.append(fields)
    return rows


def parse_adult_names(path):
    """Attribute -> list of values (None for continuous), from the attribute list."""
    attrs = {}
    with open(path, encoding="ascii") as f:
        for line in f:
            if line.startswith("|") or ":" not in line:
                continue
            name, values = line.split(":", 1)
            values = values.strip().rstrip(".")
            attrs[name.strip()] = (
                None if values == "continuous" else [v.strip() for v in values.split(",")]
            )
    return attrs


def parse_mushroom_names(path):
    """[(attribute, [codes])] from section 7 of agaricus-lepiota.names."""
    with open(path, encoding="ascii") as f:
        text = f.read()
    section = text.split("7. Attribute Information:")[1].split("8. Missing")[0]
    attrs = []
    for line in section.splitlines()[1:]:
        line = line.strip()
        if not line:
            continue
        head = line.split(":", 1)
        if len(head) == 2 and head[0].split(".")[0].isdigit():
            name = head[0].split(".", 1)[1].strip().rstrip("?")
            attrs.append((name, []))
            line = head[1]
        for pair in line.split(","):
            if pair.strip():
                attrs[-1][1].append(pair.split("=")[1].strip())
    assert len(attrs) == 22, len(attrs)
    return attrs


def nice_bounds(lo, hi):
    """Round [lo, hi] outward to two significant digits of the larger magnitude
    (the rule of propose_schema in src/data/propose.rs)."""
    step = 10.0 ** (math.floor(math.log10(max(abs(lo), abs(hi)))) - 1)
    a = float(f"{math.floor(lo / step) * step:.11e}")
    b = float(f"{math.ceil(hi / step) * step:.11e}")
    return min(a, lo), max(b, hi)


def number(x):
    """A bound as JSON: integers without a fractional part."""
    return int(x) if float(x).is_integer() else x


def write_schema(path, label, columns):
    """One column per line, so that the owner can read and edit it."""
    lines = ["{", f'  "label": {json.dumps(label)},', '  "columns": [']
    for i, c in enumerate(columns):
        lines.append("    " + json.dumps(c) + ("," if i + 1 < len(columns) else ""))
    lines += ["  ]", "}", ""]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines))
    return path


def adult(src):
    train = read_adult(os.path.join(src, "adult", "adult.data"), test=False)
    test = read_adult(os.path.join(src, "adult", "adult.test"), test=True)
    assert len(train) == 32561 and len(test) == 16281
    assert sum(r[-1] == ">50K" for r in train) == 7841
    assert sum(r[-1] == ">50K" for r in test) == 3846
    names = parse_adult_names(os.path.join(src, "adult", "adult.names"))
    columns = []
    for name in ADULT_COLUMNS[:-1]:
        values = names[name]
        if values is None:
            lo, hi = ADULT_BOUNDS[name]
            columns.append({"name": name, "type": "numeric", "min": lo, "max": hi, "bins": 10})
        else:
            col = {"name": name, "type": "categorical", "categories": values}
            if name in ADULT_MISSING:
                col["missing"] = ["?"]
            columns.append(col)
    # Every value in both files is declared (the encoder test checks this too).
    for i, col in enumerate(columns):
        if col["type"] == "categorical":
            allowed = set(col["categories"]) | set(col.get("missing", []))
            assert {r[i] for r in train + test} <= allowed, col["name"]
        else:
            values = [int(r[i]) for r in train + test]
            assert col["min"] <= min(values) and max(values) <= col["max"], col["name"]
    label = {"column": "income", "positive": ">50K", "negative": "<=50K"}
    return [
        write_csv(os.path.join(OUT, "adult", "adult-train.csv"), ADULT_COLUMNS, train),
        write_csv(os.path.join(OUT, "adult", "adult-test.csv"), ADULT_COLUMNS, test),
        write_schema(os.path.join(OUT, "adult", "schema.json"), label, columns),
    ]


def mushroom(src):
    attrs = parse_mushroom_names(os.path.join(src, "mushroom", "agaricus-lepiota.names"))
    with open(os.path.join(src, "mushroom", "agaricus-lepiota.data"), encoding="ascii") as f:
        rows = [line.rstrip("\n").split(",") for line in f if line.strip()]
    assert len(rows) == 8124 and all(len(r) == 23 for r in rows)
    assert sum(r[0] == "p" for r in rows) == 3916
    columns = []
    for i, (name, codes) in enumerate(attrs, start=1):
        col = {"name": name, "type": "categorical"}
        if "?" in codes:  # stalk-root: "missing=?"
            codes = [c for c in codes if c != "?"]
            col["categories"] = codes
            col["missing"] = ["?"]
        else:
            col["categories"] = codes
        assert {r[i] for r in rows} <= set(codes) | set(col.get("missing", [])), name
        columns.append(col)
    header = ["class"] + [name for name, _ in attrs]
    label = {"column": "class", "positive": "p", "negative": "e"}
    return [
        write_csv(os.path.join(OUT, "mushroom", "mushroom.csv"), header, rows),
        write_schema(os.path.join(OUT, "mushroom", "schema.json"), label, columns),
    ]


def breast_cancer(src):
    with open(os.path.join(src, "breast-cancer", "wdbc.data"), encoding="ascii") as f:
        rows = [line.rstrip("\n").split(",") for line in f if line.strip()]
    assert len(rows) == 569 and all(len(r) == 32 for r in rows)
    assert sum(r[1] == "M" for r in rows) == 212
    columns = [{"name": "id", "type": "ignore"}]
    for i, name in enumerate(WDBC_COLUMNS[2:], start=2):
        values = [float(r[i]) for r in rows]
        lo, hi = nice_bounds(min(values), max(values))
        columns.append(
            {"name": name, "type": "numeric", "min": number(lo), "max": number(hi), "bins": 10}
        )
    label = {"column": "diagnosis", "positive": "M", "negative": "B"}
    return [
        write_csv(os.path.join(OUT, "breast-cancer", "wdbc.csv"), WDBC_COLUMNS, rows),
        write_schema(os.path.join(OUT, "breast-cancer", "schema.json"), label, columns),
    ]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "..", "shared", "data")
    verify_sources(src)
    for path in adult(src) + mushroom(src) + breast_cancer(src):
        with open(path, "rb") as f:
            lines = f.read().count(b"\n")
        print(f"{sha256(path)}  {os.path.relpath(path, REPO)}  ({lines} lines)")


if __name__ == "__main__":
    main()
