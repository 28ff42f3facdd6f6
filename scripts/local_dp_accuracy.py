#!/usr/bin/env python3
"""Test accuracy on Adult (or another split) of models trained on rows randomized on the client
(local DP).

Usage: scripts/local_dp_accuracy.py BINARY [--epsilon 1,2,4,8] [--repeats 5]
       [--label-epsilon L] [--protocol all-columns|sampled-column]
       [--train CSV --test CSV --schema JSON]   (default: Adult's canonical split)

For each local epsilon and repeat: `privboost randomize` the canonical training
split (data/adult/adult-train.csv) with fresh OS noise, `privboost train
--local-dp-epsilon` on it (all-columns: LazyBB + dp-1r, debiased, default rule;
sampled-column: `--protocol sampled-column` reports and ldp-naive-bayes),
`privboost predict` the untouched canonical test split, and compare with its
labels.
Prints one Markdown row per epsilon: mean and sample standard deviation of
the test accuracy over the repeats. Python 3 standard library only; the
temporary files are deleted.
"""

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAIN = os.path.join(REPO, "data", "adult", "adult-train.csv")
TEST = os.path.join(REPO, "data", "adult", "adult-test.csv")
SCHEMA = os.path.join(REPO, "data", "adult", "schema.json")


def run(args):
    subprocess.run(args, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def accuracy(binary, workdir, epsilon, label_epsilon, protocol, TRAIN=TRAIN, TEST=TEST, SCHEMA=SCHEMA):
    randomized = os.path.join(workdir, "randomized.csv")
    model = os.path.join(workdir, "model.json")
    predictions = os.path.join(workdir, "predictions.csv")
    extra = ["--label-epsilon", str(label_epsilon)] if label_epsilon else []
    extra += ["--protocol", protocol]
    run([binary, "randomize", "--schema", SCHEMA, "--epsilon", str(epsilon), *extra,
         TRAIN, "-o", randomized])
    extra = ["--local-dp-label-epsilon", str(label_epsilon)] if label_epsilon else []
    extra += ["--local-dp-protocol", protocol]
    if protocol == "sampled-column":
        extra += ["--algorithm", "ldp-naive-bayes"]
    run([binary, "train", "--data", randomized, "--schema", SCHEMA,
         "--local-dp-epsilon", str(epsilon), *extra, "--out", model])
    run([binary, "predict", "--model", model, "--data", TEST, "--out", predictions])
    with open(SCHEMA) as f:
        label = json.load(f)["label"]["column"]
    with open(TEST, newline="") as f:
        truth = [row[label].strip() for row in csv.DictReader(f)]
    with open(predictions, newline="") as f:
        predicted = [row["class"] for row in csv.DictReader(f)]
    assert len(truth) == len(predicted)
    return sum(t == p for t, p in zip(truth, predicted)) / len(truth)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--epsilon", default="1,2,4,8")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--label-epsilon", type=float, default=None)
    parser.add_argument("--protocol", default="all-columns",
                        choices=["all-columns", "sampled-column"])
    parser.add_argument("--train", default=TRAIN)
    parser.add_argument("--test", default=TEST)
    parser.add_argument("--schema", default=SCHEMA)
    args = parser.parse_args()
    if args.protocol == "sampled-column":
        if args.label_epsilon:
            parser.error("--label-epsilon is for --protocol all-columns")
        label = "full epsilon, with one column"
    else:
        label = args.label_epsilon if args.label_epsilon else "equal share"
    print(f"| local epsilon | label epsilon | runs | test accuracy |")
    print(f"|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for epsilon in [float(e) for e in args.epsilon.split(",")]:
            accs = [accuracy(args.binary, workdir, epsilon, args.label_epsilon, args.protocol,
                             args.train, args.test, args.schema)
                    for _ in range(args.repeats)]
            sd = statistics.stdev(accs) if len(accs) > 1 else 0.0
            print(f"| {epsilon:g} | {label} | {len(accs)} | {statistics.mean(accs):.4f} ± {sd:.4f} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
