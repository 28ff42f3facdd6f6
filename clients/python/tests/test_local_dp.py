"""Local-DP collection: randomize()'s distribution (seeded), its errors, and a local_dp upload that
trains without charging central budget."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest

from privboost import ValidationError, randomize
from fractions import Fraction

from privboost.local_dp import _bernoulli_exp, keep_probability, run_epsilon

from conftest import DATA

SCHEMA = {
    "label": {"column": "y", "positive": "1", "negative": "0"},
    "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
        {"name": "c", "type": "categorical", "categories": ["a", "b", "c"], "missing": ["?"]},
        {"name": "id", "type": "ignore"},
    ],
}


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "x": [(i * 37) % 100 for i in range(n)],
            "c": ["a" if i % 3 == 0 else "b" for i in range(n)],
            "id": [str(i) for i in range(n)],
            "y": ["1" if i % 2 else "0" for i in range(n)],
        }
    )


def z_scores(counts: dict, total: int, probabilities: dict) -> list[float]:
    return [
        (counts.get(v, 0) - total * p) / math.sqrt(total * p * (1 - p)) for v, p in probabilities.items()
    ]


def reports(epsilon: float, n: int, seed: int) -> pd.DataFrame:
    rows = pd.DataFrame({"x": [30] * n, "c": ["b"] * n, "id": ["7"] * n, "y": ["1"] * n})
    out, _ = randomize(rows, SCHEMA, epsilon, label_epsilon=epsilon / 3, rng=random.Random(seed))
    return out


# The sampled-column tests' rows: x = 30 (interval 1 of 4), c = "b" (value 1 of 4).
PAIR_CELLS = [("x", ["12.5", "37.5", "62.5", "87.5"]), ("c", ["a", "b", "c", "?"])]


def pair_z_scores(out, column, cells, labels, label, keep, wrong_keep):
    """The largest |z| of the reported (value, label) pairs of ``column`` against randomized
    response that keeps the true pair (value 1, ``label``) with ``keep`` and moves it to each of the
    other pairs equally, and the same against ``wrong_keep``."""
    part = out[out["reported_column"] == column]
    pairs = [f"{v}|{y}" for v, y in zip(part["reported_value"], part["y"])]
    counts = pd.Series(pairs).value_counts().to_dict()
    others = len(cells) * len(labels) - 1

    def law(p):
        expected = {f"{v}|{y}": (1 - p) / others for v in cells for y in labels}
        expected[f"{cells[1]}|{label}"] = p
        return max(abs(z) for z in z_scores(counts, len(part), expected))

    return law(keep), law(wrong_keep)


def test_reports_follow_the_rr_probabilities():
    # eps = 3: each column 1, the label 1. Column c has k = 4 (a, b, c, missing).
    n, eps = 40_000, 3.0
    out = reports(eps, n, seed=1)
    p, k = keep_probability(4, 1.0), 4
    q = (1 - p) / (k - 1)
    expected = {"a": q, "b": p, "c": q, "?": q}
    assert max(abs(z) for z in z_scores(out["c"].value_counts().to_dict(), n, expected)) < 5
    # x = 30 lies in (25, 50]: midpoints 12.5, 37.5, 62.5, 87.5.
    expected = {"12.5": q, "37.5": p, "62.5": q, "87.5": q}
    assert max(abs(z) for z in z_scores(out["x"].value_counts().to_dict(), n, expected)) < 5
    p2 = keep_probability(2, 1.0)
    assert max(abs(z) for z in z_scores(out["y"].value_counts().to_dict(), n, {"1": p2, "0": 1 - p2})) < 5
    assert set(out["id"]) == {""}, "ignored columns leave nothing"


def test_a_doubled_epsilon_is_detected():
    n = 40_000
    out = reports(6.0, n, seed=2)  # each column at 2 instead of 1
    p = keep_probability(4, 1.0)
    q = (1 - p) / 3
    z = z_scores(out["c"].value_counts().to_dict(), n, {"a": q, "b": p, "c": q, "?": q})
    assert max(abs(v) for v in z) > 10


def test_the_run_epsilon_is_rounded_down_to_the_servers_grid():
    assert run_epsilon(1.0) == 1
    assert run_epsilon(0.1) == Fraction(107374182, 2**30)  # floor(0.1 * 2^30) = 107374182
    assert run_epsilon(0.1) < Fraction(0.1)
    assert keep_probability(2, 0.1) == 1 / (1 + math.exp(-107374182 / 2**30))


def test_the_exact_bernoulli_follows_exp_minus_gamma():
    rng = random.Random(11)
    n = 60_000
    for gamma in [Fraction(1, 3), Fraction(1), Fraction(5, 2)]:
        p = math.exp(-gamma)
        hits = sum(_bernoulli_exp(gamma, rng) for _ in range(n))
        z = (hits - n * p) / math.sqrt(n * p * (1 - p))
        assert abs(z) < 5, (gamma, z)
        # Half or double the exponent would be far off.
        for wrong in [math.exp(-gamma / 2), math.exp(-2 * gamma)]:
            assert abs((hits - n * wrong) / math.sqrt(n * wrong * (1 - wrong))) > 10


def test_bad_input_is_refused():
    rows = frame(5)
    for bad in [0, -1, float("nan"), float("inf")]:
        with pytest.raises(ValueError, match="epsilon must be a finite number > 0"):
            randomize(rows, SCHEMA, bad)
    with pytest.raises(ValueError, match="at least 2\\^-30"):
        randomize(rows, SCHEMA, 1e-10)
    with pytest.raises(ValueError, match="not in the schema"):
        randomize(rows.assign(z=1), SCHEMA, 1.0)
    with pytest.raises(ValueError, match="not in the data"):
        randomize(rows.drop(columns=["c"]), SCHEMA, 1.0)
    with pytest.raises(ValueError, match="row 2, column 'c': unknown category"):
        randomize(rows.assign(c=["a", "secret", "a", "a", "a"]), SCHEMA, 1.0)
    regression = {**SCHEMA, "label": {"column": "y", "type": "numeric", "min": 0, "max": 1}}
    with pytest.raises(ValueError, match="binary classification only"):
        randomize(rows, regression, 1.0)
    multiclass = {**SCHEMA, "label": {"column": "y", "classes": ["0", "1", "2"]}}
    with pytest.raises(ValueError, match="a label with 3 classes"):
        randomize(rows, multiclass, 1.0)
    with pytest.raises(ValueError, match="not one of the schema's classes"):
        randomize(rows.assign(y=["0", "1", "7", "1", "0"]), multiclass, 1.0, protocol="sampled-column")


def test_a_local_dp_upload_trains_without_central_budget(owner):
    randomized, declaration = randomize(frame(300), SCHEMA, 4.0)
    assert declaration == {"protocol": "all-columns", "epsilon": 4.0, "label_epsilon": 4.0 / 3}
    created = owner.upload_dataset("ldp", randomized, SCHEMA, epsilon=1.0, local_dp=declaration)
    dataset = created["dataset"]
    assert dataset["local_dp"] == declaration
    with pytest.raises(ValidationError, match="randomized on the client"):
        owner.submit_job(dataset["id"], epsilon=1.0)
    job = owner.train(dataset["id"], None, rounds=5, progress=False)
    assert job["state"] == "succeeded"
    assert owner.budget(dataset["id"]).loc["remaining", "epsilon"] == 1.0
    model = owner.get_model(job["model_id"])
    assert model["privacy"]["accounting"].startswith("4-local DP, randomized on the client")


def test_sampled_column_reports_one_pair_at_the_full_epsilon():
    # x = 30 is interval 1 of 4, y = "1" the positive class (0): the pair 2 * 1 + 0 = 2 of x's
    # 8 pairs; c = "b" is value 1 of 4 (a, b, c, missing): pair 2 of 8 as well.
    n, eps = 60_000, 1.0
    rows = pd.DataFrame({"x": [30] * n, "c": ["b"] * n, "id": ["7"] * n, "y": ["1"] * n})
    out, declaration = randomize(rows, SCHEMA, eps, protocol="sampled-column", rng=random.Random(5))
    assert declaration == {"protocol": "sampled-column", "epsilon": eps}
    assert list(out.columns) == ["reported_column", "reported_value", "y"]
    # The column is drawn uniformly between the two feature columns (never the ignored one).
    draws = out["reported_column"].value_counts().to_dict()
    assert set(draws) == {"x", "c"}
    assert max(abs(z) for z in z_scores(draws, n, {"x": 0.5, "c": 0.5})) < 5
    for column, cells in PAIR_CELLS:
        # At half the epsilon the same reports would be far off.
        right, wrong = pair_z_scores(out, column, cells, ["1", "0"], "1", keep_probability(8, eps),
                                     keep_probability(8, eps / 2))
        assert right < 5 and wrong > 10
    with pytest.raises(ValueError, match="label_epsilon is for the all-columns protocol"):
        randomize(rows, SCHEMA, eps, 0.5, protocol="sampled-column")
    with pytest.raises(ValueError, match="protocol must be one of"):
        randomize(rows, SCHEMA, eps, protocol="one-column")


def test_a_sampled_column_upload_trains_naive_bayes(owner):
    reports_frame, declaration = randomize(frame(600), SCHEMA, 8.0, protocol="sampled-column")
    created = owner.upload_dataset("ldp-sc", reports_frame, SCHEMA, epsilon=1.0, local_dp=declaration)
    dataset = created["dataset"]
    assert dataset["local_dp"]["protocol"] == "sampled-column"
    job = owner.train(dataset["id"], None, progress=False)
    assert job["state"] == "succeeded"
    model = owner.get_model(job["model_id"])
    assert model["algorithm"] == "ldp-naive-bayes"
    assert model["privacy"]["accounting"].startswith("8-local DP, randomized on the client")
    assert owner.budget(dataset["id"]).loc["remaining", "epsilon"] == 1.0


MULTICLASS = {**SCHEMA, "label": {"column": "y", "classes": ["lo", "mid", "hi"]}}


def test_sampled_column_reports_pairs_over_the_class_list():
    # y = "hi" is class 2 of 3; x = 30 is interval 1 of 4: the pair 3 * 1 + 2 of x's 12 pairs
    # (c = "b", value 1 of 4: likewise), reported with the keep probability of 12 values.
    n, eps = 60_000, 1.0
    rows = pd.DataFrame({"x": [30] * n, "c": ["b"] * n, "id": ["7"] * n, "y": ["hi"] * n})
    out, _ = randomize(rows, MULTICLASS, eps, protocol="sampled-column", rng=random.Random(9))
    assert set(out["y"]) == {"lo", "mid", "hi"}
    for column, cells in PAIR_CELLS:
        # The binary width's keep probability (8 values) would be far off.
        right, wrong = pair_z_scores(out, column, cells, ["lo", "mid", "hi"], "hi",
                                     keep_probability(12, eps), keep_probability(8, eps))
        assert right < 5 and wrong > 10


def test_a_sampled_column_upload_trains_k_classes(owner):
    rows = frame(3000).assign(y=lambda f: [["lo", "mid", "hi"][x * 3 // 100] for x in f["x"]])
    reports_frame, declaration = randomize(rows, MULTICLASS, 8.0, protocol="sampled-column")
    created = owner.upload_dataset("ldp-sc-k", reports_frame, MULTICLASS, epsilon=1.0, local_dp=declaration)
    job = owner.train(created["dataset"]["id"], None, progress=False)
    assert job["state"] == "succeeded"
    model = owner.get_model(job["model_id"])
    assert model["algorithm"] == "ldp-naive-bayes"
    assert [c["class"] for c in model["inspection"]["classes"]] == ["lo", "mid", "hi"]
