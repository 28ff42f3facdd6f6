"""Local-DP collection on the data owner's side: :func:`randomize`.

The same mechanism as ``privboost randomize`` (docs/privacy.md, "Local DP
collection"): every cell is encoded with the public schema (trimmed, numbers
clamped to the bounds and put in their interval, missing tokens, unknown
categories by the column's policy), then replaced by k-ary randomized
response over every value the column can take, and written back as a value
of the same schema (a category, an interval's midpoint, the first missing
token); the label gets binary randomized response; ignored columns are
emptied. Each row is then ``epsilon``-local DP by basic composition over its
columns. That is the ``all-columns`` protocol (the default).

The ``sampled-column`` protocol (``protocol="sampled-column"``; docs/privacy.md,
"Local DP collection: sampled-column"; Wang et al., ICDE 2019) is much more
accurate: each row draws one feature column uniformly (independently of its
values) and reports only that column's (value, label) pair, by randomized
response over the column's ``2 k`` pairs at the FULL epsilon; the other
columns are not reported. The output has one row per input row with the
columns ``reported_column``, ``reported_value`` and the label; train on it
with ``ldp-naive-bayes``.

Noise comes from :class:`random.SystemRandom` (the OS CSPRNG) unless a test
passes its own ``rng``.

Sampling is exact, as in the Rust CLI (``local_dp::randomized_response``): epsilon is rounded
down to a multiple of 2^-30 (the rational the server's debiasing assumes), and the rejection of a
wrong candidate is a Bernoulli(exp(-epsilon)) drawn with integer arithmetic only (Canonne, Kamath
and Steinke 2020, Algorithm 1), so the ratio bound holds exactly, not up to float rounding.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Any, Mapping

import pandas as pd

# Significant digits of equal-width cut points (the server's CUT_DIGITS).
_CUT_DIGITS = 12
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def _cut_points(column: Mapping[str, Any]) -> list[float]:
    if column.get("thresholds") is not None:
        return [float(c) for c in column["thresholds"]]
    bins = column.get("bins")
    if not isinstance(bins, int):
        raise ValueError(
            f"column {column['name']!r}: local DP needs public bins or thresholds "
            "(private bins would be chosen from the randomized values at a central cost)"
        )
    lo, hi = float(column["min"]), float(column["max"])
    return [float(f"{lo + (hi - lo) * k / bins:.{_CUT_DIGITS - 1}e}") for k in range(1, bins)]


class _Column:
    """One feature column's domain: its values' cells and how a raw cell maps to one."""

    def __init__(self, column: Mapping[str, Any]):
        self.name = column["name"]
        self.kind = column["type"]
        self.missing = list(column.get("missing") or [])
        if self.kind == "numeric":
            self.lo, self.hi = float(column["min"]), float(column["max"])
            self.cuts = _cut_points(column)
            edges = [self.lo, *self.cuts, self.hi]
            self.cells = [repr(a + (b - a) / 2) for a, b in zip(edges, edges[1:])]
        elif self.kind == "categorical":
            self.categories = list(column["categories"])
            self.unknown = column.get("unknown", "error")
            self.cells = list(self.categories)
            if self.unknown == "other":
                other = "other"
                while other in self.categories or other in self.missing:
                    other += "_"
                self.cells.append(other)
        elif self.kind == "boolean":
            self.cells = ["false", "true"]
        else:
            raise ValueError(f"column {self.name!r}: unknown type {self.kind!r}")
        self.missing_index = None
        if self.missing:
            self.missing_index = len(self.cells)
            self.cells.append(self.missing[0])

    def index(self, value: Any, row: int) -> int:
        """The domain index of a raw cell, as the server's encoder reads it."""
        text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value).strip()
        where = f"row {row}, column {self.name!r}"
        if self.missing_index is not None and text in self.missing:
            return self.missing_index
        if self.kind == "numeric":
            try:
                x = float(text)
            except ValueError:
                raise ValueError(f"{where}: not a number") from None
            if not math.isfinite(x):
                raise ValueError(f"{where}: not a finite number")
            x = min(max(x, self.lo), self.hi)
            return sum(1 for c in self.cuts if c < x)
        if self.kind == "categorical":
            if text in self.categories:
                return self.categories.index(text)
            if self.unknown == "other":
                return len(self.categories)
            if self.unknown == "missing" and self.missing_index is not None:
                return self.missing_index
            raise ValueError(f"{where}: unknown category (not in the schema)")
        lowered = text.lower()
        if lowered in _TRUE:
            return 1
        if lowered in _FALSE:
            return 0
        raise ValueError(f"{where}: not a boolean (expected true/false, yes/no, 1/0)")


# Bits of the rational that epsilon is rounded down to (the server's EPSILON_BITS).
_EPSILON_BITS = 30


def run_epsilon(epsilon: float) -> Fraction:
    """``epsilon`` as the sampler runs it: rounded down to a multiple of 2^-30, exactly (never above
    ``epsilon``, so the stated guarantee holds)."""
    return Fraction(math.floor(Fraction(epsilon) * 2**_EPSILON_BITS), 2**_EPSILON_BITS)


def keep_probability(k: int, epsilon: float) -> float:
    """k-ary randomized response at the run epsilon ``e`` (:func:`run_epsilon`) reports the true
    value with ``e^e / (e^e + k - 1)``: what the server debiases with."""
    return 1.0 / (1.0 + (k - 1) * math.exp(-float(run_epsilon(epsilon))))


def _bernoulli_exp(gamma: Fraction, rng: random.Random) -> bool:
    """True with probability ``exp(-gamma)`` for a rational ``gamma >= 0``, from exact uniform
    integers only (CKS20 Algorithm 1): for ``gamma <= 1``, draw Bernoulli(gamma / k) for k = 1, 2, ...
    until the first failure and return whether that k is odd; above 1, ``exp(-gamma)`` is
    ``exp(-1)^floor(gamma) exp(-frac)``."""
    if gamma > 1:
        whole = math.floor(gamma)
        for _ in range(whole):
            if not _bernoulli_exp(Fraction(1), rng):
                return False
        return _bernoulli_exp(gamma - whole, rng)
    k = 1
    while rng.randrange(gamma.denominator * k) < gamma.numerator:
        k += 1
    return k % 2 == 1


def randomized_response(value: int, k: int, epsilon: float, rng: random.Random) -> int:
    """One report of ``value`` in ``range(k)``: a uniform candidate, accepted always if it is the
    true value and otherwise with probability ``exp(-e)`` at the run epsilon ``e`` (so the true
    value is reported with :func:`keep_probability`, each other value with ``(1 - p) / (k - 1)``).
    Each attempt is accepted with ``(1 + (k - 1) exp(-e)) / k`` whatever the value, so the number
    of attempts does not depend on it."""
    gamma = run_epsilon(epsilon)
    while True:
        candidate = rng.randrange(k)
        if candidate == value or _bernoulli_exp(gamma, rng):
            return candidate


def _check_epsilon(name: str, value: float) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    if value < 2.0**-_EPSILON_BITS:
        raise ValueError(f"{name} must be at least 2^-30 (the sampler's resolution), got {value}")
    return value


REPORTED_COLUMN = "reported_column"
REPORTED_VALUE = "reported_value"
PROTOCOLS = ("all-columns", "sampled-column")


def _classifier_label(schema, protocol):
    """The schema's label, refused where local DP does not cover it: a numeric (regression) label,
    and a class list under the all-columns protocol (its label is one randomized bit). The
    server and ``privboost randomize`` refuse the same schemas."""
    label = schema["label"]
    if label.get("type") == "numeric":
        raise ValueError(
            "local DP covers binary classification only: a numeric (regression) label cannot be "
            "randomized and debiased by the learners yet"
        )
    if "classes" in label and protocol == "all-columns":
        raise ValueError(
            f"the all-columns local-DP protocol covers binary classification only: a label with "
            f"{len(label['classes'])} classes needs the sampled-column protocol, or upload the rows centrally"
        )
    return label


def randomize(
    data: pd.DataFrame,
    schema: Mapping[str, Any],
    epsilon: float,
    label_epsilon: float | None = None,
    *,
    protocol: str = "all-columns",
    rng: random.Random | None = None,
) -> tuple[pd.DataFrame, dict]:
    """Randomize rows on the owner's side: ``(randomized frame, local_dp declaration)``.

    ``epsilon`` is the per-row local epsilon. With ``protocol="all-columns"`` (the default) the
    label gets ``label_epsilon`` (default an equal share, ``epsilon / (feature columns + 1)``) and
    each feature column an equal share of the rest. With ``protocol="sampled-column"`` each row
    reports one uniformly drawn column with its label at the full epsilon (no ``label_epsilon``;
    module docs): the frame has the columns ``reported_column``, ``reported_value`` and the label.
    Upload the frame with ``Client.upload_dataset(..., local_dp=declaration)``; jobs on it then
    spend no central budget. Raises ``ValueError`` for a bad epsilon or protocol, a column the
    schema does not declare (or a declared one that is absent), a regression label, private bins,
    or a cell the server would refuse (the message names the row and column, never the value).
    """
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    epsilon = _check_epsilon("epsilon", epsilon)
    if protocol == "sampled-column":
        if label_epsilon is not None:
            raise ValueError(
                "label_epsilon is for the all-columns protocol: sampled-column reports the label "
                "jointly with one column at the full epsilon"
            )
        return _randomize_sampled(data, schema, epsilon, rng or random.SystemRandom())
    label = _classifier_label(schema, "all-columns")
    features = [c for c in schema["columns"] if c["type"] != "ignore"]
    if label_epsilon is None:
        label_epsilon = epsilon / (len(features) + 1)
    label_epsilon = _check_epsilon("label_epsilon", label_epsilon)
    if features and label_epsilon >= epsilon:
        raise ValueError(f"label_epsilon must leave a part of epsilon {epsilon} for the feature columns")
    column_epsilon = (epsilon - label_epsilon) / max(len(features), 1)
    declared = {c["name"]: c for c in schema["columns"]}
    unknown = [c for c in data.columns if c != label["column"] and c not in declared]
    if unknown:
        raise ValueError(f"columns not in the schema: {unknown} (declare them with \"type\": \"ignore\")")
    absent = [n for n in [label["column"], *declared] if n not in data.columns]
    if absent:
        raise ValueError(f"columns declared in the schema but not in the data: {absent}")
    rng = rng or random.SystemRandom()
    negative = label.get("negative") or f"not {label['positive']}"
    out = pd.DataFrame(index=data.index)
    for name in data.columns:
        cells = []
        if name == label["column"]:
            for row, value in enumerate(data[name], start=1):
                text = "" if value is None else str(value).strip()
                if text == "":
                    raise ValueError(f"row {row}, column {name!r}: empty label")
                positive = text == label["positive"]
                if not positive and label.get("negative") is not None and text != label["negative"]:
                    raise ValueError(f"row {row}, column {name!r}: label is neither the positive nor the negative value")
                report = randomized_response(0 if positive else 1, 2, label_epsilon, rng)
                cells.append(label["positive"] if report == 0 else negative)
        elif declared[name]["type"] == "ignore":
            cells = [""] * len(data)
        else:
            column = _Column(declared[name])
            k = len(column.cells)
            for row, value in enumerate(data[name], start=1):
                cells.append(column.cells[randomized_response(column.index(value, row), k, column_epsilon, rng)])
        out[name] = cells
    return out, {"protocol": "all-columns", "epsilon": epsilon, "label_epsilon": label_epsilon}


def _randomize_sampled(
    data: pd.DataFrame, schema: Mapping[str, Any], epsilon: float, rng: random.Random
) -> tuple[pd.DataFrame, dict]:
    """The sampled-column protocol (module docs): per row, ``j`` uniform among the feature
    columns (independent of the row, so it is reported in the clear), then randomized response
    of the pair ``L v + y`` over ``L k_j`` values at the full epsilon (``L = 2``, ``y`` 0 for the
    positive class; or ``L`` classes, ``y`` the class's index in the schema's list). epsilon-local
    DP per row: one randomized response of one pair, the draw of ``j`` reading nothing of the row."""
    label = _classifier_label(schema, "sampled-column")
    if label["column"] in (REPORTED_COLUMN, REPORTED_VALUE):
        raise ValueError(f"the label column may not be named {REPORTED_COLUMN!r} or {REPORTED_VALUE!r}")
    declared = {c["name"]: c for c in schema["columns"]}
    unknown = [c for c in data.columns if c != label["column"] and c not in declared]
    if unknown:
        raise ValueError(f"columns not in the schema: {unknown} (declare them with \"type\": \"ignore\")")
    absent = [n for n in [label["column"], *declared] if n not in data.columns]
    if absent:
        raise ValueError(f"columns declared in the schema but not in the data: {absent}")
    features = [_Column(c) for c in schema["columns"] if c["type"] != "ignore"]
    if not features:
        raise ValueError("the sampled-column protocol needs at least one feature column")
    if "classes" in label:
        labels = [str(c) for c in label["classes"]]
    else:
        labels = [label["positive"], label.get("negative") or f"not {label['positive']}"]
    n_labels = len(labels)
    columns, values, reported = [], [], []
    for row, record in enumerate(data.itertuples(index=False), start=1):
        cells = dict(zip(data.columns, record))
        # Every cell is checked first, so a bad row is refused whatever the draw.
        indices = [column.index(cells[column.name], row) for column in features]
        text = "" if cells[label["column"]] is None else str(cells[label["column"]]).strip()
        if text == "":
            raise ValueError(f"row {row}, column {label['column']!r}: empty label")
        if "classes" in label:
            if text not in labels:
                raise ValueError(f"row {row}, column {label['column']!r}: label is not one of the schema's classes")
            y = labels.index(text)
        else:
            positive = text == label["positive"]
            if not positive and label.get("negative") is not None and text != label["negative"]:
                raise ValueError(
                    f"row {row}, column {label['column']!r}: label is neither the positive nor the negative value"
                )
            y = 0 if positive else 1
        j = rng.randrange(len(features))
        column = features[j]
        k = len(column.cells)
        pair = randomized_response(n_labels * indices[j] + y, n_labels * k, epsilon, rng)
        columns.append(column.name)
        values.append(column.cells[pair // n_labels])
        reported.append(labels[pair % n_labels])
    out = pd.DataFrame(
        {REPORTED_COLUMN: columns, REPORTED_VALUE: values, label["column"]: reported}, index=data.index
    )
    return out, {"protocol": "sampled-column", "epsilon": epsilon}
