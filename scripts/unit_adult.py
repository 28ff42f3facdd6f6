#!/usr/bin/env python3
"""Adult with a synthetic privacy-unit column (issue 28), for docs/accuracy.md "Privacy unit".

Usage: scripts/unit_adult.py OUT_DIR

Writes into OUT_DIR:
- adult-train-units.csv: the canonical training split (data/adult/adult-train.csv)
  with a first column `person`: the rows, in an order shuffled with the fixed
  seed 28, are cut into consecutive groups whose sizes are drawn uniformly
  from 1..5 (same seed); each group is one synthetic person `p<i>`. So every
  unit has 1 to 5 rows (mean 3) and nothing is dropped at max_rows = 5. The
  persons are synthetic: rows of different real people share an id, which is
  what a table with several rows per person looks like to the learners.
- adult-test-units.csv: the canonical test split with `person` = `t<row>`
  (one row per unit: the test set is public-style held-out data, and a unit
  of one row is never cut).
- schema-units.json: data/adult/schema.json plus
  `"privacy_unit": {"column": "person", "max_rows": 5}`.

Python 3 standard library only. Not privacy noise: the seed only makes the
synthetic grouping reproducible.
"""

import csv
import json
import os
import random
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADULT = os.path.join(REPO, "data", "adult")
SEED = 28
MAX_ROWS = 5


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(ADULT, "adult-train.csv"), newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    rng = random.Random(SEED)
    order = list(range(len(body)))
    rng.shuffle(order)
    person = [""] * len(body)
    i, unit, sizes = 0, 0, []
    while i < len(order):
        size = rng.randint(1, MAX_ROWS)
        for j in order[i : i + size]:
            person[j] = f"p{unit}"
        sizes.append(min(size, len(order) - i))
        i += size
        unit += 1
    with open(os.path.join(out, "adult-train-units.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["person"] + header)
        for p, r in zip(person, body):
            w.writerow([p] + r)
    with open(os.path.join(ADULT, "adult-test.csv"), newline="") as f:
        test = list(csv.reader(f))
    with open(os.path.join(out, "adult-test-units.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["person"] + test[0])
        for k, r in enumerate(test[1:]):
            w.writerow([f"t{k}"] + r)
    with open(os.path.join(ADULT, "schema.json")) as f:
        schema = json.load(f)
    schema["privacy_unit"] = {"column": "person", "max_rows": MAX_ROWS}
    with open(os.path.join(out, "schema-units.json"), "w") as f:
        json.dump(schema, f, indent=2)
        f.write("\n")
    counts = {s: sizes.count(s) for s in range(1, MAX_ROWS + 1)}
    print(f"{len(body)} rows in {unit} units; units by size: {counts}")


if __name__ == "__main__":
    main()
