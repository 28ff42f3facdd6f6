"""scikit-learn estimators that train differentially private privboost models.

``PrivboostClassifier`` (binary; multiclass with a learner of
``MULTICLASS_LEARNERS``, e.g. ``algorithm="dp-linear"``) and
``PrivboostRegressor`` fit either

- **locally**, by running the ``privboost`` binary (``privboost train`` and
  ``privboost predict``) on a CSV file and a schema that the estimator
  writes to a temporary directory (``client=None``, the default), or
- **on a server**, through a :class:`privboost.Client`: ``dataset=`` the id
  of a dataset already on the server (call ``fit()`` without ``X``/``y``:
  the rows never leave the server), or ``dataset=None`` / a dict
  ``{"name", "epsilon", "delta"}`` to upload ``X, y`` first as a new
  dataset with that total budget (an owner key).

Privacy caveats (read before calling ``fit`` in a loop):

- Every ``fit`` is a new private release and spends ``epsilon`` (and
  ``delta``) of the data's budget. ``cross_val_score`` with 5 folds, a grid
  search over 10 settings, ``check_estimator``: each spends once per fit.
  On a server the ledger enforces the dataset's total; locally nobody does.
- The schema (feature bounds, bins, categories, label bounds) must be
  public, data-independent knowledge: pass it as ``schema=``,
  ``feature_bounds=`` and (regression) ``label_bounds=``. Bounds are never
  read from the data unless ``infer_bounds=True``, which **leaks** the
  minimum and maximum of every column (and the categories seen) outside the
  privacy guarantee; it warns with :class:`PrivacyLeakWarning`.
- The class names are released in the model. Without a schema label
  ``{"classes": [...]}`` they are y's distinct values (as the two classes
  of a binary y are); declare the public class list in ``schema=`` to keep
  a class that y happens to lack, in the schema's order.
- Training draws fresh noise from the OS on every fit; there is no seed
  (``random_state``) on purpose, so two fits on the same data differ.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from .errors import BinaryError

__all__ = ["PrivboostClassifier", "PrivboostRegressor", "PrivacyLeakWarning", "find_binary"]

_WEAK_LEARNERS = {  # accepted spelling -> (CLI value, API value)
    "one-rule": ("one-rule", "dp-1r"),
    "dp-1r": ("one-rule", "dp-1r"),
    "top-down": ("top-down", "dp-top-down"),
    "dp-top-down": ("top-down", "dp-top-down"),
}


# The learners this client trains on a multiclass label (the server and the binary refuse the others
# by name; "auto" runs the prior's multiclass order). DPBoost trains k classes one-vs-rest. The
# server's LazyBB also trains k classes (one-vs-rest); the client keeps it binary, as the
# scikit-learn checks of the default classifier are written for it.
MULTICLASS_LEARNERS = frozenset({"dp-linear", "dp-ebm", "dpboost", "auto"})


class PrivacyLeakWarning(UserWarning):
    """Something was read from the private data outside the privacy guarantee (e.g. ``infer_bounds=True``)."""


def find_binary(binary: str | os.PathLike | None = None) -> str:
    """The ``privboost`` executable: ``binary``, else ``$PRIVBOOST_BINARY``, else ``privboost`` on ``PATH``."""
    candidate = binary or os.environ.get("PRIVBOOST_BINARY")
    if candidate:
        path = Path(candidate)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise FileNotFoundError(f"privboost binary {str(path)!r} is not an executable file")
    found = shutil.which("privboost")
    if found:
        return found
    raise FileNotFoundError(
        "no privboost binary: pass binary=..., set PRIVBOOST_BINARY, or put `privboost` on PATH "
        "(cargo build --release builds target/release/privboost); or pass client= to train on a server"
    )


def _public_float(value: Any, what: str) -> float:
    number = float(value)
    if not np.isfinite(number):
        raise ValueError(f"{what} must be finite, got {value!r}")
    return number


def _bounds_pair(bounds: Any, what: str) -> tuple[float, float]:
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a (min, max) pair, got {bounds!r}") from None
    lo, hi = _public_float(lo, what), _public_float(hi, what)
    if not lo < hi:
        raise ValueError(f"{what} must have min < max, got ({lo}, {hi})")
    return lo, hi


def _class_text(value: Any) -> str:
    text = str(value.item() if hasattr(value, "item") else value)
    if not text or text != text.strip():
        raise ValueError(f"class label {value!r} is empty or has surrounding whitespace; privboost cannot name it")
    return text


class _Uploads:
    """The datasets this process uploaded from estimators, per server and key.

    Every upload gets its own, fresh budget. ``cross_val_score(cv=3)`` on an
    estimator with ``dataset={"name": ..., "epsilon": 10}`` used to upload
    three overlapping training sets with 10 each, so the rows they share were
    spent up to three times with nothing to say so (issue 29). A fit in
    upload mode now
    - reuses the dataset when the same rows and schema were uploaded before
      (its one budget then bounds every fit), and
    - refuses rows that overlap an earlier upload's, telling how to proceed,
      unless ``dataset={"allow_overlap": True}`` says the caller accepts
      that the guarantees of the two datasets compose.
    Rows are compared by a 64-bit hash of their cells (pandas'
    ``hash_pandas_object``), kept in this process only.
    """

    def __init__(self) -> None:
        # (base_url, api_key) -> list of (content digest, dataset id, name, epsilon, row hashes)
        self._by_key: dict[tuple[str, str], list[tuple[str, str, str, float, set[int]]]] = {}

    @staticmethod
    def _key(client: Any) -> tuple[str, str]:
        return (getattr(client, "base_url", ""), getattr(client, "api_key", ""))

    @staticmethod
    def _digest(train: pd.DataFrame, schema: dict) -> tuple[str, set[int]]:
        rows = pd.util.hash_pandas_object(train, index=False)
        content = hashlib.sha256(json.dumps(schema, sort_keys=True).encode())
        content.update(rows.to_numpy().tobytes())
        return content.hexdigest(), set(int(h) for h in rows.to_numpy())

    def check(self, client: Any, train: pd.DataFrame, schema: dict, *,
              allow_overlap: bool) -> tuple[str | None, tuple[str, set[int]]]:
        """The id of an earlier upload of the same content (or None), and the content's fingerprint
        for :meth:`record`; raises if the rows overlap an earlier upload's."""
        digest, rows = self._digest(train, schema)
        for known, dataset_id, name, epsilon, seen in self._by_key.get(self._key(client), []):
            if known == digest:
                return dataset_id, (digest, rows)
            shared = len(rows & seen)
            if shared and not allow_overlap:
                raise ValueError(
                    f"{shared} of these {len(rows)} rows were already uploaded by this process as dataset "
                    f"{dataset_id} ({name!r}, total epsilon {epsilon}); every upload gets a fresh budget, so "
                    "those rows would be spent again under a second one (cross-validation and grid searches "
                    "in upload mode do this). Upload the whole table once and fit with dataset=<its id>, or "
                    "pass dataset={..., 'allow_overlap': True} if you accept that the two datasets' "
                    "guarantees add up for the shared rows.")
        return None, (digest, rows)

    def record(self, client: Any, fingerprint: tuple[str, set[int]], dataset_id: str, name: str,
               epsilon: float) -> None:
        digest, rows = fingerprint
        self._by_key.setdefault(self._key(client), []).append((digest, dataset_id, name, float(epsilon), rows))


_UPLOADS = _Uploads()


class _PrivboostBase(BaseEstimator):
    """Shared fitting and prediction; subclasses define ``__init__`` (sklearn reads its signature)."""

    _task = "binary"

    # -------------------------------------------------------------- parameters

    def _learner_params(self) -> dict[str, Any]:
        """The learner's parameters under the estimator's names (None = the learner's default)."""
        names = ["rounds", "learning_rate", "density", "weak_learner", "internal_nodes",
                 "epochs", "max_bins", "max_leaves", "binning_share"]
        return {n: getattr(self, n) for n in names if getattr(self, n) is not None}

    def _check_params(self) -> None:
        # Known learners are lazybb and dp-ebm; any other name is passed on, so that the binary or the
        # server (which may have more learners than this package knows) accepts or refuses it.
        if not isinstance(self.algorithm, str) or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", self.algorithm):
            raise ValueError(
                f"algorithm must be a learner's name such as 'lazybb' or 'dp-ebm', got {self.algorithm!r}")
        _public_float(self.epsilon, "epsilon")
        if not float(self.epsilon) > 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon!r}")
        if not 0 <= float(self.delta) < 1:
            raise ValueError(f"delta must be in [0, 1), got {self.delta!r}")
        if self.weak_learner is not None and self.weak_learner not in _WEAK_LEARNERS:
            raise ValueError(f"weak_learner must be one of {sorted(_WEAK_LEARNERS)}, got {self.weak_learner!r}")
        if self.dataset is not None and self.client is None:
            raise ValueError("dataset= needs client= (a privboost.Client for the server holding it)")

    def _cli_flags(self) -> list[str]:
        flags = ["--algorithm", self.algorithm]
        for name, value in self._learner_params().items():
            if name == "weak_learner":
                value = _WEAK_LEARNERS[value][0]
            flags += ["--" + name.replace("_", "-"), repr(value) if isinstance(value, float) else str(value)]
        return flags

    def _api_params(self) -> dict[str, Any]:
        # The API and the CLI use the same parameter names (rounds, learning_rate, density).
        params = {}
        for name, value in self._learner_params().items():
            if name == "weak_learner":
                value = _WEAK_LEARNERS[value][1]
            params[name] = value
        return params

    # -------------------------------------------------------------- schema and data

    def _declared_columns(self) -> list[dict] | None:
        if self.schema is None:
            return None
        columns = self.schema.get("columns") if isinstance(self.schema, dict) else None
        if not isinstance(columns, list) or not columns:
            raise ValueError("schema must be a dict with a non-empty 'columns' list (the privboost schema format)")
        return [c for c in columns if c.get("type") != "ignore"]

    def _feature_frame(self, X: Any, *, reset: bool) -> tuple[pd.DataFrame, list[dict] | None]:
        """X as a DataFrame with the feature columns in order, and (on reset) their schema columns."""
        declared = self._declared_columns()
        is_frame = isinstance(X, pd.DataFrame)
        mixed = is_frame and not all(
            pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t) for t in X.dtypes
        )
        if declared is None and not mixed:
            # All numeric: sklearn's own checks (finite, 2-D, feature names and count).
            arr = validate_data(self, X, reset=reset, dtype=np.float64)
            names = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else [
                f"x{i}" for i in range(arr.shape[1])]
            frame = pd.DataFrame(arr, columns=[str(n) for n in names])
            return frame, (self._numeric_columns(frame) if reset else None)
        # A declared schema or non-numeric columns: keep the cells as they are.
        validate_data(self, X, reset=reset, skip_check_array=True)
        if not is_frame:
            arr = np.asarray(X, dtype=object)
            if arr.ndim != 2:
                raise ValueError(f"Expected 2D array, got {arr.ndim}D array instead")
            if declared is None or arr.shape[1] != len(declared):
                raise ValueError(
                    f"X has {arr.shape[1]} columns but the schema declares {len(declared or [])} feature columns; "
                    "pass a DataFrame with the schema's column names")
            X = pd.DataFrame(arr, columns=[c["name"] for c in declared])
        if X.shape[0] == 0:
            raise ValueError("Found array with 0 sample(s) (shape=(0, ...)) while a minimum of 1 is required.")
        if declared is None:
            if not reset:
                declared = self.schema_["columns"]
            else:
                declared = self._inferred_mixed_columns(X)
        names = [c["name"] for c in declared]
        missing = [n for n in names if n not in X.columns]
        if missing:
            raise ValueError(f"X has no column(s) {missing} that the schema declares")
        frame = X[names].copy()
        for column in declared:
            name = column["name"]
            if frame[name].isna().any():
                tokens = column.get("missing") or []
                if not tokens:
                    raise ValueError(
                        f"column {name!r} has missing values (NaN/None) but the schema declares no "
                        "'missing' tokens for it")
                frame[name] = frame[name].astype(object).where(frame[name].notna(), tokens[0])
        return frame, (declared if reset else None)

    def _numeric_columns(self, frame: pd.DataFrame) -> list[dict]:
        bins = int(self.bins)
        columns = []
        leaked = []
        for name in frame.columns:
            bounds = self.feature_bounds
            if isinstance(bounds, dict):
                bounds = bounds.get(name)
            if bounds is None:
                if not self.infer_bounds:
                    raise ValueError(
                        f"no public bounds for feature {name!r}: pass feature_bounds=(min, max) (all features) or "
                        "{name: (min, max)}, or a schema=; bounds read from the data leak it, so that needs "
                        "infer_bounds=True")
                lo, hi = float(frame[name].min()), float(frame[name].max())
                if lo == hi:
                    lo, hi = lo - 1.0, hi + 1.0
                bounds = (lo, hi)
                leaked.append(name)
            lo, hi = _bounds_pair(bounds, f"feature_bounds for {name!r}")
            columns.append({"name": name, "type": "numeric", "min": lo, "max": hi, "bins": bins})
        if leaked:
            warnings.warn(
                f"infer_bounds=True: the bounds of {len(leaked)} feature(s) were read from the training data; "
                "they are released in the model outside the privacy guarantee",
                PrivacyLeakWarning, stacklevel=4)
        return columns

    def _inferred_mixed_columns(self, X: pd.DataFrame) -> list[dict]:
        numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c]) and not
                   pd.api.types.is_bool_dtype(X[c])]
        other = [c for c in X.columns if c not in numeric]
        if not self.infer_bounds:
            raise ValueError(
                f"column(s) {other} are not numeric: declare them in schema= (categorical with their public "
                "categories, or boolean); categories read from the data leak it, so that needs infer_bounds=True")
        columns = {c["name"]: c for c in self._numeric_columns(X[numeric].astype(float))} if numeric else {}
        for name in other:
            if pd.api.types.is_bool_dtype(X[name]):
                columns[name] = {"name": name, "type": "boolean"}
            else:
                values = sorted({str(v) for v in X[name].dropna()})
                columns[name] = {"name": name, "type": "categorical", "categories": values}
        if other:
            warnings.warn(
                f"infer_bounds=True: the categories of {len(other)} column(s) were read from the training data; "
                "they are released in the model outside the privacy guarantee",
                PrivacyLeakWarning, stacklevel=4)
        return [columns[c] for c in X.columns]

    def _label_name(self, feature_names: list[str]) -> str:
        declared = (self.schema or {}).get("label", {}).get("column") if isinstance(self.schema, dict) else None
        name = declared or "label"
        while name in feature_names:
            name += "_"
        return name

    # -------------------------------------------------------------- fit

    def fit(self, X: Any = None, y: Any = None) -> _PrivboostBase:
        """Train a private model (spends ``epsilon``, ``delta`` of the data's budget on every call)."""
        self._check_params()
        if isinstance(self.dataset, str):
            if X is not None or y is not None:
                raise ValueError(
                    f"dataset={self.dataset!r} names rows already on the server: call fit() without X and y")
            return self._fit_server_dataset()
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None.")
        frame, columns = self._feature_frame(X, reset=True)
        label_column, labels = self._encode_target(y, frame)
        if len(labels) != len(frame):
            raise ValueError(f"X and y have different numbers of rows ({len(frame)} and {len(labels)})")
        schema = {"label": label_column, "columns": columns}
        train = frame.copy()
        train[label_column["column"]] = labels
        if self.client is None:
            self._fit_local(train, schema)
        else:
            self._fit_server_upload(train, schema)
        self.schema_ = schema
        return self

    def _fit_local(self, train: pd.DataFrame, schema: dict) -> None:
        binary = find_binary(self.binary)
        with tempfile.TemporaryDirectory(prefix="privboost-") as tmp:
            data_path, schema_path, model_path = (os.path.join(tmp, n) for n in ("train.csv", "schema.json",
                                                                                  "model.json"))
            train.to_csv(data_path, index=False)
            Path(schema_path).write_text(json.dumps(schema), encoding="utf-8")
            command = [binary, "train", "--data", data_path, "--schema", schema_path,
                       "--epsilon", repr(float(self.epsilon)), "--delta", repr(float(self.delta)),
                       *self._cli_flags(), "--out", model_path]
            self._run(command)
            self.model_ = json.loads(Path(model_path).read_text(encoding="utf-8"))
        self.model_id_ = None
        self.job_ = None

    def _fit_server_upload(self, train: pd.DataFrame, schema: dict) -> None:
        spec = dict(self.dataset or {})
        unknown = set(spec) - {"name", "epsilon", "delta", "allow_overlap"}
        if unknown:
            raise ValueError(f"dataset= takes name, epsilon, delta and allow_overlap; unknown {sorted(unknown)}")
        name = spec.get("name") or f"sklearn-{uuid.uuid4().hex[:12]}"
        total_epsilon = spec.get("epsilon", self.epsilon)
        total_delta = spec.get("delta", self.delta)
        known, fingerprint = _UPLOADS.check(self.client, train, schema,
                                            allow_overlap=bool(spec.get("allow_overlap")))
        if known is not None:
            # The same rows and schema were uploaded by this process with
            # this key: train on that dataset, under its one budget.
            self.dataset_id_ = known
        else:
            created = self.client.upload_dataset(name, train, schema, total_epsilon, total_delta)
            self.dataset_id_ = created["dataset"]["id"]
            _UPLOADS.record(self.client, fingerprint, self.dataset_id_, name, total_epsilon)
        self._train_on_server(self.dataset_id_)

    def _fit_server_dataset(self) -> _PrivboostBase:
        dataset = self.client.get_dataset(self.dataset)
        schema = dataset["schema"]
        columns = [c for c in schema["columns"] if c.get("type") != "ignore"]
        label = schema["label"]
        self._set_target_from_schema(label)
        self.feature_names_in_ = np.array([c["name"] for c in columns], dtype=object)
        self.n_features_in_ = len(columns)
        self.schema_ = {"label": label, "columns": columns}
        self.dataset_id_ = dataset["id"]
        self._train_on_server(self.dataset_id_)
        return self

    def _train_on_server(self, dataset_id: str) -> None:
        job = self.client.submit_job(dataset_id, self.epsilon, self.delta, self.algorithm, **self._api_params())
        job = self.client.wait(job, timeout=self.timeout, progress=self.progress)
        self.job_ = job
        self.model_id_ = job["model_id"]
        self.model_ = self.client.get_model(self.model_id_)["model"]

    @staticmethod
    def _run(command: list[str], timeout: float | None = None) -> None:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if result.returncode != 0:
            raise BinaryError(command, result.returncode, result.stderr)

    # -------------------------------------------------------------- predict

    def _raw_predict(self, X: Any) -> pd.DataFrame:
        check_is_fitted(self, "model_")
        if getattr(self, "dataset_id_", None) is not None and isinstance(self.dataset, str) and X is not None:
            frame = self._server_frame(X)
        else:
            frame, _ = self._feature_frame(X, reset=False)
        if self.client is not None:
            out = self.client.predict_model(self.model_id_, frame.reset_index(drop=True))
            return out
        binary = find_binary(self.binary)
        with tempfile.TemporaryDirectory(prefix="privboost-") as tmp:
            data_path, model_path, out_path = (os.path.join(tmp, n) for n in ("rows.csv", "model.json", "out.csv"))
            frame.to_csv(data_path, index=False)
            Path(model_path).write_text(json.dumps(self.model_), encoding="utf-8")
            self._run([binary, "predict", "--model", model_path, "--data", data_path, "--out", out_path])
            return pd.read_csv(out_path, dtype={"class": str}, keep_default_na=False)

    def _server_frame(self, X: Any) -> pd.DataFrame:
        """X for a model trained on a server dataset, checked against its columns with scikit-learn's
        messages (a wrong column set raised raw pandas errors before, issue 29)."""
        names = list(self.feature_names_in_)
        cls = type(self).__name__
        if isinstance(X, pd.DataFrame):
            missing = [n for n in names if n not in X.columns]
            if missing:
                raise ValueError(
                    "The feature names should match those that were passed during fit.\n"
                    "Feature names missing:\n" + "\n".join(f"- {n}" for n in missing))
            return X[names]
        arr = np.asarray(X, dtype=object)
        if arr.ndim != 2:
            raise ValueError(f"Expected 2D array, got {arr.ndim}D array instead")
        if arr.shape[1] != len(names):
            raise ValueError(
                f"X has {arr.shape[1]} features, but {cls} is expecting {len(names)} features as input.")
        return pd.DataFrame(arr, columns=names)

    @property
    def privacy_(self) -> dict:
        """The trained model's privacy statement."""
        check_is_fitted(self, "model_")
        return self.model_.get("privacy", {})


class PrivboostClassifier(ClassifierMixin, _PrivboostBase):
    """A differentially private classifier (binary: LazyBB or DP-EBM; k classes: dp-linear), scikit-learn
    compatible. ``classes_`` is the class list (y's sorted distinct values, or the schema label's
    ``classes`` in their order) and ``predict_proba`` has one column per class.

    Parameters
    ----------
    algorithm : str
        The learner: ``"lazybb"`` or ``"dp-ebm"`` (needs ``delta > 0``); another name is passed to the binary
        or server as is (they refuse the learners they do not have).
    epsilon, delta : float
        The privacy cost of one ``fit`` (every fit spends it again).
    rounds, learning_rate, density, weak_learner, internal_nodes :
        LazyBB's tau, lambda, kappa, weak learner (``"one-rule"``/``"dp-1r"`` or
        ``"top-down"``/``"dp-top-down"``) and tree size; None = the data-independent default rule.
    epochs, max_bins, max_leaves, binning_share, learning_rate :
        DP-EBM's parameters; None = its defaults.
    schema : dict, optional
        A privboost schema (``{"columns": [...]}``; its ``label`` column name is used, its class values are
        taken from ``y``). Needed for categorical or boolean features (pass a DataFrame with those columns).
    feature_bounds : (min, max) or {name: (min, max)}, optional
        Public bounds of numeric features when no schema is given (values outside are clamped).
    bins : int
        Equal-width bins per numeric feature when no schema is given.
    infer_bounds : bool
        Read missing bounds and categories from the training data. This **leaks** them (not covered by the
        privacy guarantee) and warns with :class:`PrivacyLeakWarning`. Off by default.
    client : privboost.Client, optional
        Train on a server instead of the local binary.
    dataset : str or dict, optional
        With ``client``: a dataset id on the server (``fit()`` without X, y), or ``{"name", "epsilon",
        "delta"}`` for the dataset that ``fit(X, y)`` uploads (default: a fresh name, total = this fit's cost).
    binary : str, optional
        The ``privboost`` executable (default ``$PRIVBOOST_BINARY`` or ``privboost`` on PATH).
    timeout : float
        Seconds to wait for a server job.
    progress : bool
        Show a progress bar while waiting for a server job.
    """

    def __init__(
        self,
        algorithm: str = "lazybb",
        epsilon: float = 1.0,
        delta: float = 0.0,
        rounds: int | None = None,
        learning_rate: float | None = None,
        density: float | None = None,
        weak_learner: str | None = None,
        internal_nodes: int | None = None,
        epochs: int | None = None,
        max_bins: int | None = None,
        max_leaves: int | None = None,
        binning_share: float | None = None,
        schema: dict | None = None,
        feature_bounds: Any = None,
        bins: int = 10,
        infer_bounds: bool = False,
        client: Any = None,
        dataset: Any = None,
        binary: str | None = None,
        timeout: float = 600.0,
        progress: bool = False,
    ) -> None:
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.rounds = rounds
        self.learning_rate = learning_rate
        self.density = density
        self.weak_learner = weak_learner
        self.internal_nodes = internal_nodes
        self.epochs = epochs
        self.max_bins = max_bins
        self.max_leaves = max_leaves
        self.binning_share = binning_share
        self.schema = schema
        self.feature_bounds = feature_bounds
        self.bins = bins
        self.infer_bounds = infer_bounds
        self.client = client
        self.dataset = dataset
        self.binary = binary
        self.timeout = timeout
        self.progress = progress

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # fresh noise from the OS on every fit, by design
        # Only the learners that train k classes take a multiclass y (the others refuse it by name).
        tags.classifier_tags.multi_class = self.algorithm in MULTICLASS_LEARNERS
        return tags

    def _declared_classes(self) -> list[str] | None:
        """The class list of the schema= label (``{"classes": [...]}``), if it declares one."""
        label = self.schema.get("label") if isinstance(self.schema, dict) else None
        classes = label.get("classes") if isinstance(label, dict) else None
        if classes is None:
            return None
        if not isinstance(classes, list) or len(classes) < 2:
            raise ValueError("schema label 'classes' must be a list of at least 2 class names")
        return [_class_text(c) for c in classes]

    def _encode_target(self, y: Any, frame: pd.DataFrame) -> tuple[dict, np.ndarray]:
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
                "(n_samples,), for example using ravel().", _data_conversion_warning(), stacklevel=3)
            y = y.ravel()
        check_classification_targets(y)
        y_type = type_of_target(y, input_name="y", raise_unknown=True)
        declared = self._declared_classes()
        column = self._label_name(list(frame.columns))
        if declared is not None:
            # The schema's public class list, in its order: classes_ are its names.
            if len(set(declared)) != len(declared):
                raise ValueError(f"the schema's classes {declared!r} repeat a name")
            texts = [_class_text(v) for v in y.tolist()]
            unknown = sorted(set(texts) - set(declared))
            if unknown:
                raise ValueError(f"y has {len(unknown)} value(s) that are not among the schema's classes")
            self.classes_ = np.array(declared, dtype=object)
            self._class_names = declared
            return {"column": column, "classes": declared}, np.array(texts, dtype=object)
        if self.algorithm not in MULTICLASS_LEARNERS and y_type != "binary":
            # scikit-learn's wording (check_classifier_not_supporting_multiclass matches it).
            raise ValueError(
                f"Only binary classification is supported. The type of the target is {y_type}. "
                f"algorithm={self.algorithm!r} is binary; multiclass learners: "
                f"{', '.join(sorted(MULTICLASS_LEARNERS))}")
        if y_type not in ("binary", "multiclass"):
            raise ValueError(
                f"Only binary and multiclass classification are supported. The type of the target is {y_type}.")
        self.classes_ = np.unique(y)
        if len(self.classes_) < 2:
            raise ValueError(f"privboost needs at least 2 classes in y; got {len(self.classes_)} class")
        names = [_class_text(c) for c in self.classes_]
        if len(set(names)) != len(names):
            raise ValueError(f"the classes {self.classes_!r} have the same text; privboost cannot tell them apart")
        self._class_names = names
        if len(names) == 2:
            label = {"column": column, "positive": names[1], "negative": names[0]}
        else:
            label = {"column": column, "classes": names}
        lookup = dict(zip(self.classes_.tolist(), names))
        return label, np.array([lookup[v] for v in y.tolist()], dtype=object)

    def _set_target_from_schema(self, label: dict) -> None:
        if label.get("type") == "numeric":
            raise ValueError("this dataset has a numeric label: use PrivboostRegressor")
        if label.get("classes"):
            self.classes_ = np.array(label["classes"], dtype=object)
            self._class_names = list(label["classes"])
            return
        positive = label["positive"]
        negative = label.get("negative") or f"not {positive}"
        self.classes_ = np.array([negative, positive], dtype=object)
        self._class_names = [negative, positive]

    def _is_multiclass(self) -> bool:
        return "classes" in self.schema_["label"]

    def _positive_probability(self, X: Any) -> tuple[pd.DataFrame, np.ndarray]:
        raw = self._raw_predict(X)
        return raw, self._break_ties(raw, raw["probability"].to_numpy(dtype=float), 0.5)

    def _break_ties(self, raw: pd.DataFrame, values: np.ndarray, tie: float) -> np.ndarray:
        """``values`` (a binary model's scores, or its probabilities of ``classes_[1]``) with each row that sits
        exactly on the boundary ``tie`` and was predicted ``classes_[1]`` moved to the next double above it.
        The model predicts ``classes_[1]`` at score >= 0 (a LazyBB vote sum that ties, which its vote threshold
        makes possible for any number of rounds); scikit-learn reads only decision > 0 and the larger
        probability as ``classes_[1]``, so without this the methods would disagree with :meth:`predict`."""
        positive = raw["class"].astype(str).to_numpy() == self._class_names[1]
        return np.where((values == tie) & positive, np.nextafter(tie, 1.0), values)

    def _class_probabilities(self, raw: pd.DataFrame) -> np.ndarray:
        """A multiclass model's (n, k) probabilities, columns in ``classes_`` order: the server answers a
        ``probabilities`` list per row, the binary's ``predict`` one ``probability_<class>`` column each."""
        if "probabilities" in raw.columns:
            out = np.array(raw["probabilities"].tolist(), dtype=float)
        else:
            out = raw[[f"probability_{c}" for c in self._class_names]].to_numpy(dtype=float)
        return out.reshape(len(raw), len(self._class_names))

    def predict(self, X: Any) -> np.ndarray:
        """The predicted class of each row (``classes_[1]`` when the model's probability is >= 0.5)."""
        raw = self._raw_predict(X)
        lookup = dict(zip(self._class_names, self.classes_.tolist()))
        unknown = set(raw["class"]) - set(lookup)
        if unknown:
            raise RuntimeError(f"the model predicted classes {sorted(unknown)} that were not in y")
        return np.array([lookup[c] for c in raw["class"]], dtype=self.classes_.dtype)

    def predict_proba(self, X: Any) -> np.ndarray:
        """One column per class of ``classes_``, in its order: for a binary model the probability of
        ``classes_[0]`` and of ``classes_[1]``; for a multiclass model the k softmax probabilities."""
        check_is_fitted(self, "model_")
        if self._is_multiclass():
            return self._class_probabilities(self._raw_predict(X))
        _, p = self._positive_probability(X)
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log of :meth:`predict_proba`."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def decision_function(self, X: Any) -> np.ndarray:
        """Binary: the model's score in [-1, 1]; > 0 exactly when :meth:`predict` says ``classes_[1]``. Multiclass: shape (n, k), the log
        of each class's probability (the model's logits less each row's log-sum-exp; the largest is the
        predicted class)."""
        check_is_fitted(self, "model_")
        if self._is_multiclass():
            with np.errstate(divide="ignore"):
                return np.log(self._class_probabilities(self._raw_predict(X)))
        raw = self._raw_predict(X)
        return self._break_ties(raw, raw["score"].to_numpy(dtype=float), 0.0)


class PrivboostRegressor(RegressorMixin, _PrivboostBase):
    """A differentially private regressor (DP-EBM on a numeric label with public bounds), scikit-learn compatible.

    Parameters are those of :class:`PrivboostClassifier` (``algorithm`` defaults to ``"dp-ebm"``, the learner
    that does regression, and ``delta`` to ``1e-6``), plus:

    label_bounds : (min, max)
        Public bounds of the target; labels outside are clamped. Required unless the schema's label declares
        them, or ``infer_bounds=True`` (which leaks the target's minimum and maximum).
    """

    _task = "regression"

    def __init__(
        self,
        algorithm: str = "dp-ebm",
        epsilon: float = 1.0,
        delta: float = 1e-6,
        rounds: int | None = None,
        learning_rate: float | None = None,
        density: float | None = None,
        weak_learner: str | None = None,
        internal_nodes: int | None = None,
        epochs: int | None = None,
        max_bins: int | None = None,
        max_leaves: int | None = None,
        binning_share: float | None = None,
        schema: dict | None = None,
        feature_bounds: Any = None,
        label_bounds: Any = None,
        bins: int = 10,
        infer_bounds: bool = False,
        client: Any = None,
        dataset: Any = None,
        binary: str | None = None,
        timeout: float = 600.0,
        progress: bool = False,
    ) -> None:
        self.algorithm = algorithm
        self.epsilon = epsilon
        self.delta = delta
        self.rounds = rounds
        self.learning_rate = learning_rate
        self.density = density
        self.weak_learner = weak_learner
        self.internal_nodes = internal_nodes
        self.epochs = epochs
        self.max_bins = max_bins
        self.max_leaves = max_leaves
        self.binning_share = binning_share
        self.schema = schema
        self.feature_bounds = feature_bounds
        self.label_bounds = label_bounds
        self.bins = bins
        self.infer_bounds = infer_bounds
        self.client = client
        self.dataset = dataset
        self.binary = binary
        self.timeout = timeout
        self.progress = progress

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True  # fresh noise from the OS on every fit, by design
        return tags

    def _encode_target(self, y: Any, frame: pd.DataFrame) -> tuple[dict, np.ndarray]:
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected. Please change the shape of y to "
                "(n_samples,), for example using ravel().", _data_conversion_warning(), stacklevel=3)
            y = y.ravel()
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D (one target), got shape {y.shape}")
        try:
            values = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("y must be numeric for PrivboostRegressor") from None
        if not np.all(np.isfinite(values)):
            raise ValueError("Input y contains NaN or infinity.")
        declared = (self.schema or {}).get("label") if isinstance(self.schema, dict) else None
        if self.label_bounds is not None:
            lo, hi = _bounds_pair(self.label_bounds, "label_bounds")
        elif declared and declared.get("type") == "numeric":
            lo, hi = _bounds_pair((declared.get("min"), declared.get("max")), "the schema's label bounds")
        elif self.infer_bounds:
            lo, hi = float(values.min()), float(values.max())
            if lo == hi:
                lo, hi = lo - 1.0, hi + 1.0
            warnings.warn(
                "infer_bounds=True: the label bounds were read from the training data; they are released in the "
                "model outside the privacy guarantee", PrivacyLeakWarning, stacklevel=3)
        else:
            raise ValueError(
                "no public bounds for the target: pass label_bounds=(min, max) or a schema with a numeric label; "
                "bounds read from y leak it, so that needs infer_bounds=True")
        label = {"column": self._label_name(list(frame.columns)), "type": "numeric", "min": lo, "max": hi}
        return label, values

    def _set_target_from_schema(self, label: dict) -> None:
        if label.get("type") != "numeric":
            raise ValueError("this dataset has a class label: use PrivboostClassifier")

    def predict(self, X: Any) -> np.ndarray:
        """The predicted value of each row, in label units."""
        return self._raw_predict(X)["value"].to_numpy(dtype=float)


def _data_conversion_warning() -> type[Warning]:
    from sklearn.exceptions import DataConversionWarning

    return DataConversionWarning
