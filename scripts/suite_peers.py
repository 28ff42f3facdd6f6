#!/usr/bin/env python3
"""Peer learners for scripts/suite.py, run inside the pinned venv (scripts/suite-requirements.txt).

Not meant to be run by hand: suite.py writes one job as JSON on stdin and reads one JSON object per
run from stdout. A job is one (data set, fold): train and test CSV files in privboost's format, the
schema, the task, the methods and the epsilons.

Honesty rules (the same as ../shared/tools/peers/peers.py):
  * every peer sees only public information besides the training rows: the schema's numeric bounds
    and category domains. Numerics are clipped to the bounds and scaled to [0, 1] (a missing value
    becomes the middle of the range); categoricals and booleans are one-hot over the schema's domain,
    plus one column for `missing` and one for `unknown: "other"` when the schema declares them.
    `data_norm` is the exact maximum L2 norm of a row of that encoding: sqrt(number of features).
  * hyperparameters are the libraries' defaults (listed in HYPERPARAMS), never tuned;
  * the noise is seeded (seed given by suite.py per fold and repeat) so a run can be reproduced;
  * regression predictions are clamped into the label's public bounds (post-processing, free), as
    privboost does.
"""

from __future__ import annotations

import functools
import json
import math
import sys
import time
import warnings

import numpy as np
import pandas as pd

HYPERPARAMS = {
    "diffprivlib": {
        "binary": "diffprivlib.models.LogisticRegression(epsilon, data_norm=sqrt(features), "
                  "C=1.0, max_iter=100, tol=1e-4): pure epsilon-DP (objective perturbation)",
        "regression": "diffprivlib.models.LinearRegression(epsilon, bounds_X=([0]*d, [1]*d), "
                      "bounds_y=(label min, label max)): pure epsilon-DP (functional mechanism)",
        "multiclass": "diffprivlib.models.LogisticRegression(epsilon, data_norm=sqrt(features), "
                      "C=1.0, max_iter=100, tol=1e-4): one-vs-rest inside diffprivlib, pure epsilon-DP",
    },
    "diffprivlib-nb": {
        "multiclass": "diffprivlib.models.GaussianNB(epsilon, bounds=([0]*d, [1]*d)): pure "
                      "epsilon-DP (Laplace on the per-class means and variances)",
    },
    "interpret-ebm": {
        "binary": "interpret.privacy.DPExplainableBoostingClassifier(epsilon, delta, "
                  "privacy_bounds=schema bounds, feature_types continuous/nominal, defaults "
                  "max_bins=32, learning_rate=0.01, max_rounds=300, max_leaves=3, "
                  "bin_budget_frac=0.1, composition='gdp', n_jobs=1)",
        "regression": "interpret.privacy.DPExplainableBoostingRegressor(same, plus "
                      "privacy_target_min/max = the label's public bounds)",
    },
    "gbdt": {
        "binary": "sklearn.ensemble.GradientBoostingClassifier() defaults (non-private)",
        "regression": "sklearn.ensemble.GradientBoostingRegressor() defaults (non-private)",
        "multiclass": "sklearn.ensemble.GradientBoostingClassifier() defaults (non-private)",
    },
    "constant": {
        "binary": "sklearn.dummy.DummyClassifier(strategy='prior'): the majority class (non-private)",
        "regression": "sklearn.dummy.DummyRegressor(strategy='mean'): the mean (non-private)",
        "multiclass": "sklearn.dummy.DummyClassifier(strategy='prior'): the majority class "
                      "(non-private)",
    },
}
PRIVATE = {"diffprivlib", "diffprivlib-nb", "interpret-ebm", "interpret-ebm-sub"}


def gdp_mu(eps: float, delta: float) -> float:
    """The largest mu whose mu-GDP implies (eps, delta)-DP (Dong, Roth and Su 2019, Cor. 2.13), by
    bisection on InterpretML's own `delta_eps_mu` (increasing in mu)."""
    from interpret.utils._privacy import delta_eps_mu
    lo, hi = 1e-9, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if delta_eps_mu(eps, mid) > delta:
            hi = mid
        else:
            lo = mid
    return lo


def interpret_mu(eps: float, delta: float, bin_frac: float = 0.1) -> float:
    """The GDP parameter of InterpretML's DP-EBM run at (eps, delta), under its add/remove relation.
    interpret-core 0.7.8 (`_ebm.py`, `_privacy.py`) spends (bin_frac eps, delta / 2) on private
    binning and the rest on boosting, each as mu-GDP Gaussian noise (`calc_gdp_noise_multi`); the
    two compose to sqrt(mu_bin^2 + mu_boost^2)-GDP (Dong, Roth and Su 2019, Cor. 3.3)."""
    return math.hypot(gdp_mu(bin_frac * eps, delta / 2),
                      gdp_mu((1 - bin_frac) * eps, delta - delta / 2))


@functools.lru_cache(maxsize=None)  # fit and the output line of every repeat ask for it
def substitution_epsilon(eps: float, delta: float) -> float:
    """The epsilon' at which InterpretML's DP-EBM (delta unchanged) guarantees (eps, delta) under
    privboost's relation, substitution of one row (SPEC §2). A substitution is a removal and an
    addition, so a mu-GDP mechanism under add/remove is 2 mu-GDP under substitution (group privacy,
    Dong, Roth and Su 2019, Thm 2.14): epsilon' is the largest with 2 interpret_mu(epsilon') <=
    gdp_mu(eps, delta), by bisection (interpret_mu increases with epsilon')."""
    target = gdp_mu(eps, delta)
    lo, hi = 0.0, eps
    for _ in range(100):
        mid = (lo + hi) / 2
        if 2 * interpret_mu(mid, delta) <= target:
            lo = mid
        else:
            hi = mid
    return lo


def versions() -> dict:
    import platform
    out = {"python": platform.python_version()}
    for mod in ("numpy", "pandas", "sklearn", "scipy", "diffprivlib", "interpret"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception as e:  # pragma: no cover
            out[mod] = f"unavailable ({e.__class__.__name__})"
    return out


class Encoding:
    """The public encoding of one schema (see the module docstring)."""

    def __init__(self, schema: dict):
        self.schema = schema
        self.features = [c for c in schema["columns"] if c.get("type") != "ignore"]
        self.width = 0
        for c in self.features:
            self.width += 1 if c["type"] == "numeric" else len(self.domain(c))
        self.data_norm = math.sqrt(len(self.features))

    @staticmethod
    def domain(col: dict) -> list:
        if col["type"] == "boolean":
            dom = ["true", "false"]
        else:
            dom = list(col["categories"])
        if col.get("missing"):
            dom.append("\0missing")
        if col.get("unknown") == "other":
            dom.append("\0other")
        return dom

    @staticmethod
    def _bool(v: str):
        v = v.strip().lower()
        if v in ("true", "t", "yes", "y", "1"):
            return "true"
        if v in ("false", "f", "no", "n", "0"):
            return "false"
        return None

    def _category(self, col: dict, v: str) -> str:
        v = v.strip()
        if col.get("missing") and v in col["missing"]:
            return "\0missing"
        if col["type"] == "boolean":
            b = self._bool(v)
            if b is not None:
                return b
        elif v in col["categories"]:
            return v
        unknown = col.get("unknown", "error")
        if unknown == "other":
            return "\0other"
        if unknown == "missing":
            return "\0missing"
        raise SystemExit(f"suite_peers: value {v!r} of {col['name']!r} outside the schema's domain")

    def _number(self, col: dict, v: str) -> float:
        lo, hi = float(col["min"]), float(col["max"])
        v = v.strip()
        if col.get("missing") and v in col["missing"]:
            return 0.5 * (lo + hi)
        return min(max(float(v), lo), hi)

    def clean(self, df: pd.DataFrame) -> pd.DataFrame:
        """Numerics clipped to their bounds, categoricals as their domain value."""
        out = {}
        for c in self.features:
            raw = df[c["name"]].astype(str)
            if c["type"] == "numeric":
                out[c["name"]] = np.array([self._number(c, v) for v in raw], dtype=np.float64)
            else:
                out[c["name"]] = np.array([self._category(c, v) for v in raw], dtype=object)
        return pd.DataFrame(out, columns=[c["name"] for c in self.features])

    def matrix(self, clean: pd.DataFrame) -> np.ndarray:
        """Numerics scaled to [0, 1]; one-hot categoricals. Row norm <= self.data_norm."""
        m = np.zeros((len(clean), self.width), dtype=np.float64)
        j = 0
        for c in self.features:
            v = clean[c["name"]].to_numpy()
            if c["type"] == "numeric":
                lo, hi = float(c["min"]), float(c["max"])
                m[:, j] = (v.astype(np.float64) - lo) / (hi - lo)
                j += 1
            else:
                dom = self.domain(c)
                index = {d: i for i, d in enumerate(dom)}
                m[np.arange(len(v)), j + np.array([index[x] for x in v])] = 1.0
                j += len(dom)
        return m

    def ebm_types(self) -> list:
        return ["continuous" if c["type"] == "numeric" else "nominal" for c in self.features]

    def ebm_bounds(self) -> dict:
        return {c["name"]: (float(c["min"]), float(c["max"]))
                for c in self.features if c["type"] == "numeric"}


def labels(df: pd.DataFrame, schema: dict, task: str) -> np.ndarray:
    lab = schema["label"]
    raw = df[lab["column"]].astype(str).str.strip()
    if task == "binary":
        return (raw == lab["positive"]).to_numpy().astype(np.int64)
    if task == "multiclass":
        index = {c: i for i, c in enumerate(lab["classes"])}
        unknown = sorted(set(raw) - set(index))
        if unknown:
            raise SystemExit(f"suite_peers: label values outside the schema's classes: {unknown[:5]}")
        return raw.map(index).to_numpy().astype(np.int64)
    lo, hi = float(lab["min"]), float(lab["max"])
    return np.clip(raw.astype(np.float64).to_numpy(), lo, hi)


def fit(method: str, task: str, eps, delta: float, seed: int, enc: Encoding, schema: dict,
        Ctr: pd.DataFrame, Mtr: np.ndarray, ytr: np.ndarray):
    """A fitted model and the representation (clean frame or matrix) it predicts from."""
    lab = schema["label"]
    if method == "diffprivlib-nb":
        if task != "multiclass":
            raise ValueError("diffprivlib-nb runs on multiclass sets only")
        from diffprivlib.models import GaussianNB
        d = Mtr.shape[1]
        model = GaussianNB(epsilon=eps, bounds=(np.zeros(d), np.ones(d)), random_state=seed)
        model.fit(Mtr, ytr)
        return model, "matrix"
    if method == "diffprivlib":
        if task in ("binary", "multiclass"):
            from diffprivlib.models import LogisticRegression
            model = LogisticRegression(epsilon=eps, data_norm=enc.data_norm, random_state=seed)
        else:
            from diffprivlib.models import LinearRegression
            d = Mtr.shape[1]
            model = LinearRegression(epsilon=eps, bounds_X=(np.zeros(d), np.ones(d)),
                                     bounds_y=(float(lab["min"]), float(lab["max"])),
                                     random_state=seed)
        model.fit(Mtr, ytr)
        return model, "matrix"
    if method in ("interpret-ebm", "interpret-ebm-sub"):
        if method == "interpret-ebm-sub":
            eps = substitution_epsilon(eps, delta)
        kw = dict(feature_names=list(Ctr.columns), feature_types=enc.ebm_types(), epsilon=eps,
                  delta=delta, privacy_bounds=enc.ebm_bounds(), n_jobs=1, random_state=seed)
        if task == "multiclass":
            raise ValueError("InterpretML's DP-EBM has no multiclass classifier")
        if task == "binary":
            from interpret.privacy import DPExplainableBoostingClassifier
            model = DPExplainableBoostingClassifier(**kw)
        else:
            from interpret.privacy import DPExplainableBoostingRegressor
            model = DPExplainableBoostingRegressor(
                privacy_target_min=float(lab["min"]), privacy_target_max=float(lab["max"]), **kw)
        model.fit(Ctr, ytr)
        return model, "clean"
    if method == "gbdt":
        from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
        cls = GradientBoostingRegressor if task == "regression" else GradientBoostingClassifier
        model = cls(random_state=seed)
        model.fit(Mtr, ytr)
        return model, "matrix"
    if method == "constant":
        from sklearn.dummy import DummyClassifier, DummyRegressor
        model = DummyRegressor() if task == "regression" else DummyClassifier(strategy="prior")
        model.fit(Mtr, ytr)
        return model, "matrix"
    raise SystemExit(f"suite_peers: unknown method {method!r}")


def score(model, task: str, X, y: np.ndarray, schema: dict) -> dict:
    from sklearn.metrics import f1_score, roc_auc_score
    if task == "multiclass":
        # The predicted class; macro-F1 over the classes seen in the labels or the predictions
        # (scikit-learn's default, and privboost's `metrics::macro_f1`).
        pred = np.asarray(model.predict(X)).astype(np.int64)
        return {"accuracy": float(np.mean(pred == y)),
                "macro_f1": float(f1_score(y, pred, average="macro", zero_division=0))}
    if task == "binary":
        pos = list(model.classes_).index(1)
        p = model.predict_proba(X)[:, pos]
        pred = p > 0.5
        positives = y == 1
        return {
            "accuracy": float(np.mean(pred == positives)),
            "auc": float(roc_auc_score(y, p)) if 0 < positives.sum() < len(y) else float("nan"),
            "positive_rate": float(np.mean(pred)),
            "true_positive_rate": float(np.mean(pred[positives])) if positives.any() else float("nan"),
        }
    lab = schema["label"]
    pred = np.clip(model.predict(X), float(lab["min"]), float(lab["max"]))
    err = pred - y
    return {"rmse": float(np.sqrt(np.mean(err ** 2))), "mae": float(np.mean(np.abs(err)))}


def self_test() -> int:
    """The budget conversion of interpret-ebm-sub, against InterpretML's own functions."""
    from interpret.utils._privacy import calc_gdp_noise_multi, delta_eps_mu
    for eps in (0.1, 0.5, 1.0, 5.0):
        mu = gdp_mu(eps, 1e-6)
        assert abs(delta_eps_mu(eps, mu) - 1e-6) < 1e-9, eps
        # InterpretML's noise for one query is 1/mu (times the sensitivity): the same mu.
        assert abs(1 / calc_gdp_noise_multi(1, eps, 1e-6) - mu) < 1e-6 * mu, eps
        sub = substitution_epsilon(eps, 1e-6)
        assert abs(2 * interpret_mu(sub, 1e-6) - mu) < 1e-9 * mu, eps
        # Group privacy halves mu, and composing binning with boosting costs a little more than
        # one release at the whole budget: epsilon' is a bit above half of epsilon.
        assert eps / 2 < sub < 0.6 * eps, (eps, sub)
        assert interpret_mu(eps, 1e-6) < mu
    print(json.dumps({f"{e:g}": round(substitution_epsilon(e, 1e-6), 4) for e in (0.1, 0.5, 1, 5)}))
    print("suite_peers.py self-test: ok")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:] == ["--versions"]:
        print(json.dumps({"versions": versions(), "hyperparameters": HYPERPARAMS}))
        return 0
    job = json.load(sys.stdin)
    # Import every library before the first timed fit, so no fit time includes an import.
    import diffprivlib.models  # noqa: F401
    import interpret.privacy  # noqa: F401
    import sklearn.dummy  # noqa: F401
    import sklearn.ensemble  # noqa: F401
    import sklearn.metrics  # noqa: F401
    schema = json.load(open(job["schema"]))
    task = job["task"]
    enc = Encoding(schema)
    read = dict(dtype=str, keep_default_na=False)
    tr, te = pd.read_csv(job["train"], **read), pd.read_csv(job["test"], **read)
    ytr, yte = labels(tr, schema, task), labels(te, schema, task)
    Ctr, Cte = enc.clean(tr), enc.clean(te)
    Mtr, Mte = enc.matrix(Ctr), enc.matrix(Cte)
    for run in job["runs"]:
        method, eps, rep = run["method"], run["epsilon"], run["repeat"]
        seed = int(job["seed"]) * 1000 + rep
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            try:
                model, rep_kind = fit(method, task, eps, float(job["ebm_delta"]), seed, enc, schema,
                                      Ctr, Mtr, ytr)
            except Exception as e:  # a refusal is a result (shown as a dash with the reason)
                print(json.dumps({**run, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
                continue
            fit_s = time.perf_counter() - t0
            metrics = score(model, task, Cte if rep_kind == "clean" else Mte, yte, schema)
        notes = sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in ws
                        if "random_state" not in str(w.message)})
        extra = ({"run_epsilon": substitution_epsilon(eps, float(job["ebm_delta"]))}
                 if method == "interpret-ebm-sub" else {})
        print(json.dumps({**run, **extra, "metrics": metrics, "fit_seconds": fit_s,
                          "warnings": notes}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
