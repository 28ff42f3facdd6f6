"""HTTP client for the privboost service: one method per route of openapi.yaml.

Results are plain dicts (the service's JSON), except where a table reads
better: the budget, the ledger and predictions are pandas DataFrames.
Errors raise :class:`privboost.errors.ApiError` subclasses with the problem
document's fields.
"""

from __future__ import annotations

import io
import json
import math
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Union
from urllib.parse import quote

import pandas as pd
import requests
from tqdm.auto import tqdm

from . import __version__
from .errors import ApiError, JobFailed, WaitTimeout, error_class

DEFAULT_URL = "http://127.0.0.1:8080"
FINAL_STATES = ("succeeded", "failed", "cancelled")
# The service's default --max-predict-rows; predict() sends batches of at most this many rows.
DEFAULT_BATCH_ROWS = 10_000

CsvSource = Union[pd.DataFrame, str, os.PathLike, bytes, BinaryIO]
Rows = Union[pd.DataFrame, Iterable[Mapping[str, Any]]]

# Python names for the API's job fields that are not valid identifiers.
_PARAM_ALIASES = {"lambda_": "lambda"}


def _job_body(dataset_id: str, epsilon: float | None, delta: float | None, algorithm: str | None, params: dict) -> dict:
    # A local-DP dataset's jobs take no epsilon (nothing central is spent).
    body: dict[str, Any] = {"dataset_id": dataset_id}
    if epsilon is not None:
        body["epsilon"] = float(epsilon)
    if delta is not None:
        body["delta"] = float(delta)
    if algorithm is not None:
        body["algorithm"] = algorithm
    for name, value in params.items():
        if value is not None:
            body[_PARAM_ALIASES.get(name, name)] = value
    return body


def _frame_as_parquet(frame: pd.DataFrame, schema: Mapping[str, Any]) -> bytes | None:
    """``frame`` as Parquet bytes, or ``None`` (send CSV) when pyarrow is not
    installed or a column's type does not fit the schema the way the server
    checks it (docs/service.md, "Parquet and Arrow"). Numeric columns held
    as strings are converted when every value is a number or empty."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    kinds = {c.get("name"): c.get("type") for c in schema.get("columns", [])}
    label = schema.get("label", {})
    if label.get("column") is not None:
        kinds[label["column"]] = "label-numeric" if label.get("type") == "numeric" else "label"
    frame = frame.reset_index(drop=True)
    columns = {}
    for name in frame.columns:
        column = frame[name]
        kind = kinds.get(str(name))
        dtype = column.dtype
        is_bool = pd.api.types.is_bool_dtype(dtype)
        is_int = pd.api.types.is_integer_dtype(dtype) and not is_bool
        is_float = pd.api.types.is_float_dtype(dtype)
        is_text = pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype) or isinstance(
            dtype, pd.CategoricalDtype
        )
        if kind in ("numeric", "label-numeric") and is_text:
            text = column.astype("string").str.strip()
            converted = pd.to_numeric(text.replace("", pd.NA), errors="coerce")
            if (converted.isna() & text.notna() & (text != "")).any():
                return None  # a value that is not a number (a missing token): CSV says it
            column, is_float, is_text = converted.astype("float64"), True, False
        fits = {
            "numeric": is_float or is_int,
            "label-numeric": is_float or is_int,
            "categorical": is_text or is_int,
            "label": is_text or is_int or is_bool,
            "boolean": is_bool,
        }.get(kind, True)
        if not fits:
            return None
        columns[str(name)] = column
    try:
        table = pa.Table.from_pandas(pd.DataFrame(columns), preserve_index=False)
    except (pa.ArrowException, TypeError, ValueError):
        return None  # mixed types in a column: CSV
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()


def _local_dp_fields(local_dp: Mapping[str, Any] | float | None) -> list:
    """The upload's ``local_dp_epsilon`` / ``local_dp_label_epsilon`` / ``local_dp_protocol``
    fields."""
    if local_dp is None:
        return []
    if isinstance(local_dp, Mapping):
        fields = [("local_dp_epsilon", (None, repr(float(local_dp["epsilon"]))))]
        protocol = local_dp.get("protocol")
        if protocol is not None:
            fields.append(("local_dp_protocol", (None, str(protocol))))
        # The sampled-column protocol has no label share (the server refuses one).
        if local_dp.get("label_epsilon") is not None and protocol != "sampled-column":
            fields.append(("local_dp_label_epsilon", (None, repr(float(local_dp["label_epsilon"])))))
        return fields
    return [("local_dp_epsilon", (None, repr(float(local_dp))))]


def _json_value(value: Any) -> Any:
    """A cell as JSON: NaN/NA become null (a missing value where the column declares one)."""
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value


def rows_to_records(rows: Rows) -> list[dict[str, Any]]:
    """Rows as a list of JSON objects keyed by column; NaN becomes null."""
    if isinstance(rows, pd.DataFrame):
        columns = [str(c) for c in rows.columns]
        return [
            {c: _json_value(v) for c, v in zip(columns, values)}
            for values in rows.itertuples(index=False, name=None)
        ]
    return [{str(k): _json_value(v) for k, v in row.items()} for row in rows]


def job_progress(job: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(steps done, steps in all) of a job: ``progress.rounds_done`` of ``progress.tau``, falling back to the
    job's top-level fields; None where the server sends neither (the bar then shows no total)."""
    progress = job.get("progress") if isinstance(job.get("progress"), Mapping) else {}

    def first(*names: str) -> int | None:
        for source in (progress, job):
            for name in names:
                value = source.get(name)
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    return int(value)
        return None

    return first("rounds_done", "steps_done", "done"), first("tau", "rounds", "steps", "total")


class Client:
    """A connection to one privboost service with one API key.

    ``base_url`` defaults to ``$PRIVBOOST_URL`` (else ``http://127.0.0.1:8080``)
    and ``api_key`` to ``$PRIVBOOST_API_KEY``. ``timeout`` bounds each HTTP
    request (seconds). Requests refused with 429 and a ``Retry-After`` header
    (the per-key rate limit: nothing was done) are retried up to
    ``max_retries`` times; job submissions carry an ``Idempotency-Key`` so
    that a retried submission can never be charged twice.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 3,
        session: requests.Session | None = None,
    ) -> None:
        base_url = base_url or os.environ.get("PRIVBOOST_URL") or DEFAULT_URL
        api_key = api_key if api_key is not None else os.environ.get("PRIVBOOST_API_KEY")
        if not api_key:
            raise ValueError(
                "no API key: pass api_key=... or set PRIVBOOST_API_KEY "
                "(the admin key is printed once when `privboost serve` first starts)"
            )
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.session = session or requests.Session()
        self.session.headers.update(
            {"Authorization": f"Bearer {api_key}", "User-Agent": f"privboost-python/{__version__}"}
        )

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, api_key='{self.api_key[:6]}...')"

    def __reduce__(self):
        # A copy (scikit-learn's clone deep-copies parameters) or a pickle
        # holds the configuration only, not the HTTP session, whose
        # connection pool and cookies change with every request: otherwise
        # an estimator's `client` parameter looked changed by `fit`
        # (check_estimators_overwrite_params, issue 29). A copy opens its own
        # session; a custom `session=` is not carried over.
        return (Client, (self.base_url, self.api_key), {"timeout": self.timeout, "max_retries": self.max_retries})

    def __setstate__(self, state: dict) -> None:
        self.timeout = state["timeout"]
        self.max_retries = state["max_retries"]

    def with_key(self, api_key: str) -> Client:
        """A client for the same server with another key."""
        return Client(self.base_url, api_key, timeout=self.timeout, max_retries=self.max_retries)

    # ------------------------------------------------------------------ transport

    def _request(
        self,
        method: str,
        route: str,
        path: Mapping[str, str] | None = None,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
        files: list | None = None,
        headers: Mapping[str, str] | None = None,
        expect_json: bool = True,
        ok_statuses: tuple[int, ...] = (),
        stream: bool = False,
    ) -> requests.Response:
        """Send one request to ``route`` (an openapi.yaml path template) and raise on errors."""
        url_path = route
        for name, value in (path or {}).items():
            url_path = url_path.replace("{" + name + "}", quote(str(value), safe=""))
        url = self.base_url + url_path
        for attempt in range(self.max_retries + 1):
            if files is not None:
                for _, part in files:  # rewind streams on a retry
                    stream = part[1] if isinstance(part, tuple) else None
                    if hasattr(stream, "seek"):
                        stream.seek(0)
            response = self.session.request(
                method,
                url,
                json=json_body,
                params=params,
                files=files,
                headers=dict(headers or {}),
                # A stream's reads wait for events (keep-alives every 15 s).
                timeout=(self.timeout, max(self.timeout, 30.0)) if stream else self.timeout,
                stream=stream,
            )
            retry_after = response.headers.get("Retry-After")
            if response.status_code == 429 and retry_after and attempt < self.max_retries:
                time.sleep(min(float(retry_after), 30.0))
                continue
            break
        if response.status_code >= 400 and response.status_code not in ok_statuses:
            raise self._error(response, method, url_path)
        return response

    @staticmethod
    def _error(response: requests.Response, method: str, url_path: str) -> ApiError:
        try:
            body = response.json()
        except ValueError:
            body = response.text
        problem = body if isinstance(body, dict) else {}
        detail = problem.get("detail") or problem.get("error") or (body if isinstance(body, str) else "")
        retry_after = response.headers.get("Retry-After")
        cls = error_class(response.status_code, problem.get("type"))
        return cls(
            response.status_code,
            title=problem.get("title") or response.reason or "",
            detail=str(detail)[:2000],
            type=problem.get("type"),
            errors=problem.get("errors") if isinstance(problem.get("errors"), list) else None,
            body=body,
            method=method,
            url=url_path,
            request_id=response.headers.get("x-request-id"),
            retry_after=float(retry_after) if retry_after else None,
        )

    def _json(self, method: str, route: str, path: Mapping[str, str] | None = None, **kw: Any) -> Any:
        response = self._request(method, route, path, **kw)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    def _pages(self, route: str, path: Mapping[str, str] | None = None, page_size: int = 1000) -> Iterator[dict]:
        token = None
        while True:
            params: dict[str, Any] = {"page_size": page_size}
            if token:
                params["page_token"] = token
            page = self._json("GET", route, path, params=params)
            yield from page["items"]
            token = page.get("next_page_token")
            if not token:
                return

    # ------------------------------------------------------------------ keys

    def create_key(self, role: str, name: str) -> dict:
        """Create an owner or analyst key (admin). ``key`` in the result is the secret, shown once."""
        return self._json("POST", "/v1/keys", json_body={"role": role, "name": name})

    def list_keys(self) -> list[dict]:
        """Every key (admin); never the secrets."""
        return list(self._pages("/v1/keys"))

    def revoke_key(self, key_id: str) -> None:
        """Revoke a key (admin)."""
        self._request("DELETE", "/v1/keys/{id}", {"id": key_id})

    def me(self) -> dict:
        """This key's id, role and name."""
        return self._json("GET", "/v1/me")

    # ------------------------------------------------------------------ datasets

    def upload_dataset(
        self,
        name: str,
        data: CsvSource,
        schema: Mapping[str, Any] | str | os.PathLike,
        epsilon: float,
        delta: float = 0.0,
        *,
        skip_bad_rows: bool = False,
        accounting: str | None = None,
        local_dp: Mapping[str, Any] | float | None = None,
        idempotency_key: str | None = None,
        allow_duplicate: bool = False,
    ) -> dict:
        """Upload rows with their schema and a total (epsilon, delta) budget (owner).

        ``local_dp`` declares that the rows were randomized on the client
        (:func:`privboost.randomize` or ``privboost randomize``): the
        declaration :func:`~privboost.randomize` returns (``{"protocol",
        "epsilon", "label_epsilon"}``, or ``{"protocol": "sampled-column",
        "epsilon"}`` for report frames) or the per-row local epsilon alone
        (all-columns, the label's share then defaulting to an equal one). Jobs
        on such a dataset take no epsilon and spend no central budget; on
        all-columns rows only LazyBB with the dp-1r weak learner trains, on
        sampled-column reports only ``ldp-naive-bayes`` (the default there).
        The server cannot check the randomization: it is the owner's
        declaration.

        ``accounting`` is how the ledger composes the jobs' charges:
        ``"basic"`` (the server's default) or ``"zcdp-filter"`` (more small jobs
        per budget; docs/privacy.md, "Accounting across jobs"). It is fixed
        for the dataset's life.

        ``data`` is a DataFrame, a path to a CSV, Parquet or Arrow file, its
        bytes or a binary file object (the server tells the format by its
        first bytes). A DataFrame is sent as Parquet when pyarrow is installed
        and its columns' types fit the schema (numbers for numeric columns,
        strings or integers for categorical ones, booleans for boolean ones;
        a NaN is a null, the column's missing value), else as CSV without its
        index (NaN as an empty cell, so declare ``"missing": [""]`` for such
        columns). ``schema`` is the
        schema dict or a path to its JSON file. The server refuses (409,
        :class:`Conflict` naming the first dataset) a second upload of the
        same schema and data by the same key, which would give the same rows a
        second, fresh budget; ``allow_duplicate=True`` stores it anyway.
        Returns ``{"dataset": ...,
        "accepted_rows", "rejected_rows", "rejected"}``.
        """
        if isinstance(schema, (str, os.PathLike)):
            schema_text = Path(schema).read_text(encoding="utf-8")
            json.loads(schema_text)  # fail here, not on the server, if it is not JSON
        else:
            schema_text = json.dumps(schema)
        part = ("data.csv", "text/csv")
        # A sampled-column report file is CSV only (the server refuses others).
        sampled = isinstance(local_dp, Mapping) and local_dp.get("protocol") == "sampled-column"
        if isinstance(data, pd.DataFrame):
            parquet = None if sampled else _frame_as_parquet(data, json.loads(schema_text))
            if parquet is not None:
                stream: Any = io.BytesIO(parquet)
                part = ("data.parquet", "application/vnd.apache.parquet")
            else:
                stream = io.BytesIO(data.to_csv(index=False).encode("utf-8"))
        elif isinstance(data, (str, os.PathLike)):
            stream = open(data, "rb")  # noqa: SIM115 - closed below
        elif isinstance(data, bytes):
            stream = io.BytesIO(data)
        else:
            stream = data
        # The service wants the text fields first and the file `data` last.
        files = [
            ("name", (None, name)),
            ("epsilon", (None, repr(float(epsilon)))),
            ("delta", (None, repr(float(delta)))),
            ("skip_bad_rows", (None, "true" if skip_bad_rows else "false")),
            *([("accounting", (None, accounting))] if accounting is not None else []),
            *_local_dp_fields(local_dp),
            *([("allow_duplicate", (None, "true"))] if allow_duplicate else []),
            ("schema", (None, schema_text, "application/json")),
            ("data", (part[0], stream, part[1])),
        ]
        headers = {"Idempotency-Key": idempotency_key or f"py-{uuid.uuid4()}"}
        try:
            return self._json("POST", "/v1/datasets", files=files, headers=headers)
        finally:
            if isinstance(data, (str, os.PathLike)):
                stream.close()

    def list_datasets(self) -> list[dict]:
        """Datasets this key owns or was granted (metadata only)."""
        return list(self._pages("/v1/datasets"))

    def get_dataset(self, dataset_id: str) -> dict:
        """A dataset's metadata and schema (never rows)."""
        return self._json("GET", "/v1/datasets/{id}", {"id": dataset_id})

    def mark_public_test_data(self, dataset_id: str) -> dict:
        """Declare the dataset's rows public test data (owner; one-way).

        Evaluations on it then return exact metrics, without noise and without a ledger charge
        (``"public": true``); the rows lose every privacy guarantee. Returns the dataset."""
        body = {"public_test_data": True}
        return self._json("PATCH", "/v1/datasets/{id}", {"id": dataset_id}, json_body=body)

    def delete_dataset(self, dataset_id: str) -> None:
        """Purge the rows (owner); the record and its ledger stay."""
        self._request("DELETE", "/v1/datasets/{id}", {"id": dataset_id})

    @staticmethod
    def _budget_frame(budget: dict) -> pd.DataFrame:
        frame = pd.DataFrame.from_dict(
            {k: budget[k] for k in ("total", "spent", "reserved", "remaining")}, orient="index"
        )
        return frame[["epsilon", "delta"]].astype(float)

    def budget(self, dataset_id: str) -> pd.DataFrame:
        """The budget as a DataFrame: rows total, spent, reserved, remaining; columns epsilon, delta."""
        return self._budget_frame(self._json("GET", "/v1/datasets/{id}/budget", {"id": dataset_id}))

    def budget_fits(self, dataset_id: str, *, job_epsilon: float | None = None, job_rho: float | None = None) -> dict:
        """The budget as the server states it (with ``filter`` in rho terms on a
        zcdp-filter dataset), and with ``job_epsilon`` (a pure job) or ``job_rho``
        (a zCDP job) ``fits["jobs"]``: how many more such jobs would be admitted now."""
        query = {k: v for k, v in {"job_epsilon": job_epsilon, "job_rho": job_rho}.items() if v is not None}
        return self._json("GET", "/v1/datasets/{id}/budget", {"id": dataset_id}, params=query)

    def set_budget(self, dataset_id: str, epsilon: float, delta: float = 0.0) -> pd.DataFrame:
        """Change the total budget (owner); recorded in the ledger. Returns the new budget."""
        body = {"epsilon": float(epsilon), "delta": float(delta)}
        return self._budget_frame(self._json("PATCH", "/v1/datasets/{id}/budget", {"id": dataset_id}, json_body=body))

    def ledger(self, dataset_id: str) -> pd.DataFrame:
        """The append-only ledger, oldest first: seq, kind (total/charge/refund), job_id, epsilon, delta, created_at."""
        items = list(self._pages("/v1/datasets/{id}/ledger", {"id": dataset_id}))
        columns = ["seq", "kind", "job_id", "epsilon", "delta", "created_at"]
        frame = pd.DataFrame(items, columns=columns)
        frame["created_at"] = pd.to_datetime(frame["created_at"], utc=True, format="ISO8601")
        frame = frame.astype({"seq": "int64", "epsilon": float, "delta": float})
        frame["job_id"] = frame["job_id"].astype(object).where(frame["job_id"].notna(), None)
        return frame

    def grants(self, dataset_id: str) -> list[str]:
        """The analyst key ids granted access (owner)."""
        return self._json("GET", "/v1/datasets/{id}/grants", {"id": dataset_id})["analysts"]

    def grant(self, dataset_id: str, key_id: str) -> None:
        """Grant an analyst key access to a dataset (owner)."""
        self._request("PUT", "/v1/datasets/{id}/grants/{key_id}", {"id": dataset_id, "key_id": key_id})

    def revoke_grant(self, dataset_id: str, key_id: str) -> None:
        """Revoke an analyst's access (owner)."""
        self._request("DELETE", "/v1/datasets/{id}/grants/{key_id}", {"id": dataset_id, "key_id": key_id})

    # ------------------------------------------------------------------ jobs

    def estimate(
        self, dataset_id: str, epsilon: float | None, delta: float | None = None, algorithm: str | None = None, **params: Any
    ) -> dict:
        """What a job would be charged and the noise it would get; spends nothing.

        ``params`` are the API's learner fields (``tau``, ``kappa``, ``lambda_``
        for ``lambda``, ``weak_learner``, ``internal_nodes``, ``max_bins``,
        ``learning_rate``, ``epochs``, ``max_leaves``, ``binning_share``).
        """
        body = _job_body(dataset_id, epsilon, delta, algorithm, params)
        return self._json("POST", "/v1/jobs/estimate", json_body=body)

    def submit_job(
        self,
        dataset_id: str,
        epsilon: float | None,
        delta: float | None = None,
        algorithm: str | None = None,
        *,
        idempotency_key: str | None = None,
        **params: Any,
    ) -> dict:
        """Submit a training job: its charge is admitted to the ledger first (409 :class:`BudgetExceeded` if it
        does not fit). Parameters as for :meth:`estimate`. Returns the queued job; see :meth:`wait`."""
        body = _job_body(dataset_id, epsilon, delta, algorithm, params)
        headers = {"Idempotency-Key": idempotency_key or f"py-{uuid.uuid4()}"}
        return self._json("POST", "/v1/jobs", json_body=body, headers=headers)

    def list_jobs(self) -> list[dict]:
        """Jobs on datasets this key can see, oldest first."""
        return list(self._pages("/v1/jobs"))

    def get_job(self, job_id: str) -> dict:
        """A job's state and progress (``rounds_done`` of ``tau``)."""
        return self._json("GET", "/v1/jobs/{id}", {"id": job_id})

    def cancel_job(self, job_id: str) -> dict:
        """Cancel a job: a queued one is refunded, a running one stops at its next step and keeps its charge."""
        return self._json("POST", "/v1/jobs/{id}/cancel", {"id": job_id})

    def wait(
        self,
        job: str | Mapping[str, Any],
        *,
        timeout: float = 600.0,
        poll_interval: float = 0.25,
        progress: bool = True,
        raise_on_failure: bool = True,
    ) -> dict:
        """Poll a job until it finishes, with a tqdm progress bar; at most ``timeout`` seconds.

        Returns the final job. Raises :class:`JobFailed` if it ended failed or
        cancelled (unless ``raise_on_failure=False``) and :class:`WaitTimeout`
        if it is still queued or running at the deadline (it keeps running on
        the server). A granted analyst sees progress in quarters of the steps.
        """
        job_id = job if isinstance(job, str) else job["id"]
        deadline = time.monotonic() + timeout
        state = self.get_job(job_id)
        done, total = job_progress(state)
        bar = tqdm(total=total, desc=f"{job_id} {state['state']}", unit="step", disable=not progress)
        try:
            while True:
                done, total = job_progress(state)
                if total is not None and bar.total != total:
                    bar.total = total
                bar.set_description(f"{job_id} {state['state']}", refresh=False)
                if done is not None and done != bar.n:
                    bar.update(done - bar.n)  # update(), not n=: tqdm's rate needs the increments
                bar.refresh()
                if state["state"] in FINAL_STATES:
                    break
                if time.monotonic() >= deadline:
                    raise WaitTimeout(state, timeout)
                time.sleep(min(poll_interval, max(0.0, deadline - time.monotonic())))
                state = self.get_job(job_id)
        finally:
            bar.close()
        if raise_on_failure and state["state"] != "succeeded":
            raise JobFailed(state)
        return state

    def job_events(self, job_id: str) -> Iterator[dict]:
        """The job's server-sent events as ``{"event": "progress" | "done" | "failed" | "cancelled", "job": {...}}``,
        ending after the final event (the server closes the stream)."""
        response = self._request(
            "GET", "/v1/jobs/{id}/events", {"id": job_id}, headers={"Accept": "text/event-stream"}, stream=True
        )
        with response:
            event, data = "message", []
            for line in response.iter_lines(decode_unicode=True):
                if line is None:
                    continue
                if line == "":
                    if data:
                        yield {"event": event, "job": json.loads("\n".join(data))}
                    event, data = "message", []
                elif line.startswith(":"):
                    continue  # keep-alive comment
                elif line.startswith("event:"):
                    event = line[len("event:"):].strip()
                elif line.startswith("data:"):
                    data.append(line[len("data:"):].lstrip())
            if data:
                yield {"event": event, "job": json.loads("\n".join(data))}

    def train(self, dataset_id: str, epsilon: float | None, delta: float | None = None, algorithm: str | None = None, *,
              timeout: float = 600.0, progress: bool = True, **params: Any) -> dict:
        """:meth:`submit_job` then :meth:`wait`; returns the finished job (its ``model_id``)."""
        job = self.submit_job(dataset_id, epsilon, delta, algorithm, **params)
        return self.wait(job, timeout=timeout, progress=progress)

    # ------------------------------------------------------------------ models

    def list_models(self) -> list[dict]:
        """Models trained on datasets this key can see (summaries)."""
        return list(self._pages("/v1/models"))

    def get_model(self, model_id: str) -> dict:
        """A model with its privacy statement, inspection and model file (``model``)."""
        return self._json("GET", "/v1/models/{id}", {"id": model_id})

    def export_model(self, model_id: str, path: str | os.PathLike | None = None, *, format: str = "onnx") -> bytes:
        """The model as a standard ONNX graph (one input per schema column; docs/export.md).

        Export is post-processing of the released model: it charges nothing. Returns the bytes
        and, with ``path``, writes them there (e.g. for ``onnxruntime.InferenceSession(path)``).
        """
        data = self._request("GET", "/v1/models/{id}/export", {"id": model_id}, params={"format": format}).content
        if path is not None:
            Path(path).write_bytes(data)
        return data

    def delete_model(self, model_id: str) -> None:
        """Delete a model (its dataset's owner, or an admin); its id answers 404 from then on.

        Refused (409) while a deployment serves it. A model listed with ``"unreadable": True``
        (stored before the server checked models) can only be deleted.
        """
        self._request("DELETE", "/v1/models/{id}", {"id": model_id})

    def inspect(self, model_id: str) -> dict:
        """The model's inspection: vote table (LazyBB) or shape functions (DP-EBM), features used."""
        return self.get_model(model_id)["inspection"]

    def vote_table(self, model_id: str) -> pd.DataFrame:
        """A LazyBB model's vote table as a DataFrame (one row per rule)."""
        inspection = self.inspect(model_id)
        if "vote_table" not in inspection:
            raise ValueError(f"model {model_id} has no vote table (it is not a LazyBB model)")
        return pd.DataFrame(inspection["vote_table"])

    def shape_functions(self, model_id: str) -> pd.DataFrame:
        """A DP-EBM model's shape functions as a long DataFrame: feature, importance, bin, label, count, value."""
        inspection = self.inspect(model_id)
        if "shapes" not in inspection:
            raise ValueError(f"model {model_id} has no shape functions (it is not a DP-EBM model)")
        rows = [
            {"feature": shape["feature"], "importance": shape.get("importance"), "bin": i, **b}
            for shape in inspection["shapes"]
            for i, b in enumerate(shape["bins"])
        ]
        return pd.DataFrame(rows, columns=["feature", "importance", "bin", "label", "count", "value"])

    def privacy(self, model_id: str) -> dict:
        """The model's privacy statement."""
        return self.get_model(model_id)["privacy"]

    def edit_model(
        self,
        model_id: str,
        kind: str,
        feature: str,
        *,
        increasing: bool | None = None,
        values: Iterable[float] | None = None,
    ) -> dict:
        """A new model version with a free post-processing edit of one feature's shape function (DP-EBM).

        ``kind="monotone"`` with ``increasing``, or ``kind="set_values"`` with ``values`` (one per bin)."""
        body: dict[str, Any] = {"kind": kind, "feature": feature}
        if increasing is not None:
            body["increasing"] = bool(increasing)
        if values is not None:
            body["values"] = [float(v) for v in values]
        return self._json("POST", "/v1/models/{id}/edits", {"id": model_id}, json_body=body)

    def evaluate(self, model_id: str, dataset_id: str, epsilon: float | None = None) -> dict:
        """Release the model's accuracy and ROC AUC (or RMSE) on ``dataset_id`` with epsilon-DP.

        **Spends** ``epsilon`` of that dataset's budget (409 ``BudgetExceeded`` when it does not fit);
        the dataset must have the model's schema. Returns the evaluation; its ``result`` holds the
        noisy metrics. On public test data (:meth:`mark_public_test_data`) ``epsilon`` may be
        ``None``: the result is exact, ``"public": true``, and nothing is charged."""
        body: dict[str, Any] = {"dataset_id": dataset_id}
        if epsilon is not None:
            body["epsilon"] = float(epsilon)
        return self._json("POST", "/v1/models/{id}/evaluate", {"id": model_id}, json_body=body)

    def get_evaluation(self, evaluation_id: str) -> dict:
        """An earlier evaluation and its released result."""
        return self._json("GET", "/v1/evaluations/{id}", {"id": evaluation_id})

    def make_monotone(self, model_id: str, feature: str, increasing: bool = True) -> dict:
        """Shortcut for ``edit_model(model_id, "monotone", feature, increasing=...)``."""
        return self.edit_model(model_id, "monotone", feature, increasing=increasing)

    def _predict(self, method: str, route: str, path: Mapping[str, str], rows: Rows, batch_rows: int) -> pd.DataFrame:
        records = rows_to_records(rows)
        if not records:
            raise ValueError("no rows to predict")
        out: list[dict] = []
        for start in range(0, len(records), batch_rows):
            body = {"rows": records[start : start + batch_rows]}
            out.extend(self._json(method, route, path, json_body=body)["predictions"])
        frame = pd.DataFrame(out)
        if isinstance(rows, pd.DataFrame):
            frame.index = rows.index
        return frame

    def predict_model(self, model_id: str, rows: Rows, *, batch_rows: int = DEFAULT_BATCH_ROWS) -> pd.DataFrame:
        """Predict with a model by id: a DataFrame with ``class, positive, score, probability`` (classifier)
        or ``value`` (regressor), one row per input row (the input's index is kept)."""
        return self._predict("POST", "/v1/models/{id}/predict", {"id": model_id}, rows, batch_rows)

    # ------------------------------------------------------------------ deployments

    def list_deployments(self) -> list[dict]:
        """Every deployment (any key)."""
        return list(self._pages("/v1/deployments"))

    def get_deployment(self, name: str) -> dict:
        """The model a deployment name points at."""
        return self._json("GET", "/v1/deployments/{name}", {"name": name})

    def deploy(self, name: str, model_id: str) -> dict:
        """Point a deployment name at a model (creates it, or re-points a name this key created)."""
        return self._json("PUT", "/v1/deployments/{name}", {"name": name}, json_body={"model_id": model_id})

    def deployment_versions(self, name: str) -> pd.DataFrame:
        """Every move of a deployment, oldest first: version, model_id, moved_by, created_at, rollback_of."""
        items = list(self._pages("/v1/deployments/{name}/versions", {"name": name}))
        return pd.DataFrame(items, columns=["version", "model_id", "moved_by", "created_at", "rollback_of"])

    def rollback(self, name: str, version: int | None = None) -> dict:
        """Serve an earlier version's model again (the previous one by default); appends a version."""
        body = {} if version is None else {"version": int(version)}
        return self._json("POST", "/v1/deployments/{name}/rollback", {"name": name}, json_body=body)

    def predict(self, deployment: str, rows: Rows, *, batch_rows: int = DEFAULT_BATCH_ROWS) -> pd.DataFrame:
        """Predict with a deployment; rows are a DataFrame or dicts keyed by column (NaN/None = missing).
        Returns a DataFrame as :meth:`predict_model` does."""
        return self._predict("POST", "/v1/deployments/{name}/predict", {"name": deployment}, rows, batch_rows)

    def invocations(self, deployment: str, frame: pd.DataFrame) -> pd.DataFrame:
        """MLflow-style scoring: posts ``frame.to_json(orient="split")`` and returns the predictions."""
        body = {"dataframe_split": json.loads(frame.to_json(orient="split", index=False))}
        result = self._json("POST", "/v1/deployments/{name}/invocations", {"name": deployment}, json_body=body)
        out = pd.DataFrame(result["predictions"])
        out.index = frame.index
        return out

    # ------------------------------------------------------------------ Open Inference Protocol v2

    def server_metadata(self) -> dict:
        """OIP server metadata (name, version, extensions)."""
        return self._json("GET", "/v2")

    def server_live(self) -> bool:
        """OIP liveness."""
        return self._request("GET", "/v2/health/live", ok_statuses=(503,)).status_code == 200

    def server_ready(self) -> bool:
        """OIP readiness (the database answers)."""
        return self._request("GET", "/v2/health/ready", ok_statuses=(503,)).status_code == 200

    def model_metadata(self, name: str, version: str | None = None) -> dict:
        """OIP model metadata of a deployment: inputs (column, datatype, shape) and outputs."""
        if version is None:
            return self._json("GET", "/v2/models/{name}", {"name": name})
        return self._json("GET", "/v2/models/{name}/versions/{version}", {"name": name, "version": version})

    def model_ready(self, name: str, version: str | None = None) -> bool:
        """OIP model readiness: True if the deployment (and version) exists for this key."""
        if version is None:
            response = self._request("GET", "/v2/models/{name}/ready", {"name": name}, ok_statuses=(404,))
        else:
            response = self._request(
                "GET", "/v2/models/{name}/versions/{version}/ready", {"name": name, "version": version},
                ok_statuses=(404,),
            )
        return response.status_code == 200

    def infer(
        self, name: str, frame: pd.DataFrame, *, version: str | None = None, outputs: list[str] | None = None
    ) -> pd.DataFrame:
        """OIP inference with JSON tensors, one per column of ``frame``; returns the outputs as columns."""
        inputs = []
        for column in frame.columns:
            series = frame[column]
            if pd.api.types.is_bool_dtype(series):
                datatype, data = "BOOL", [bool(v) for v in series]
            elif pd.api.types.is_numeric_dtype(series):
                datatype, data = "FP64", [_json_value(v) for v in series.astype(float)]
            else:
                datatype, data = "BYTES", [None if _json_value(v) is None else str(v) for v in series]
            inputs.append({"name": str(column), "shape": [len(frame)], "datatype": datatype, "data": data})
        body: dict[str, Any] = {"inputs": inputs}
        if outputs is not None:
            body["outputs"] = [{"name": o} for o in outputs]
        if version is None:
            result = self._json("POST", "/v2/models/{name}/infer", {"name": name}, json_body=body)
        else:
            result = self._json(
                "POST", "/v2/models/{name}/versions/{version}/infer", {"name": name, "version": version},
                json_body=body,
            )
        out = pd.DataFrame({o["name"]: o["data"] for o in result["outputs"]})
        out.index = frame.index
        return out

    # ------------------------------------------------------------------ operations

    def healthz(self) -> dict:
        """Liveness (``{"status": "ok"}``)."""
        return self._json("GET", "/healthz")

    def readyz(self) -> dict:
        """Readiness: the database answers."""
        return self._json("GET", "/readyz")

    def metrics(self) -> str:
        """Prometheus metrics text (admin key on the main port)."""
        return self._request("GET", "/metrics").text

    def openapi(self) -> str:
        """The service's OpenAPI document (YAML text)."""
        return self._request("GET", "/openapi.yaml").text
