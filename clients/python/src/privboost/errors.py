"""Exceptions raised by the privboost client and estimators.

Every HTTP error of the service is an :class:`ApiError` (or one of its
subclasses, chosen by status) that carries the fields of the problem
document (RFC 9457): ``status``, ``title``, ``detail``, ``type``, ``field``
(the first field error's field, if any), ``errors``, and for a budget
refusal ``requested`` and ``remaining``. The Open Inference Protocol routes
(``/v2``) answer ``{"error": "..."}``; that text becomes ``detail``.
"""

from __future__ import annotations

from typing import Any


class PrivboostError(Exception):
    """Base class of every error raised by this package."""


class ApiError(PrivboostError):
    """An error answer of the service (4xx or 5xx), with its problem document."""

    def __init__(
        self,
        status: int,
        *,
        title: str = "",
        detail: str = "",
        type: str | None = None,  # noqa: A002 - the problem document's field name
        errors: list[dict[str, Any]] | None = None,
        body: Any = None,
        method: str = "",
        url: str = "",
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.title = title
        self.detail = detail
        self.type = type
        self.errors = list(errors or [])
        self.field = self.errors[0].get("field") if self.errors else None
        self.body = body
        self.method = method
        self.url = url
        self.request_id = request_id
        self.retry_after = retry_after
        body_dict = body if isinstance(body, dict) else {}
        self.requested = body_dict.get("requested")
        self.remaining = body_dict.get("remaining")
        super().__init__(self._message())

    def _message(self) -> str:
        head = f"{self.status} {self.title}".strip()
        text = f"{head}: {self.detail}" if self.detail else head
        if self.errors:
            text += " [" + "; ".join(f"{e.get('field')}: {e.get('message')}" for e in self.errors) + "]"
        if self.requested is not None and self.remaining is not None:
            text += f" (requested {self.requested}, remaining {self.remaining})"
        if self.method:
            text += f" ({self.method} {self.url})"
        return text


class BadRequest(ApiError):
    """400: the request was malformed."""


class Unauthorized(ApiError):
    """401: no key, or an unknown or revoked key."""


class Forbidden(ApiError):
    """403: the key's role may not do this."""


class NotFound(ApiError):
    """404: missing, or not visible to this key (the service does not tell which)."""


class Conflict(ApiError):
    """409: conflicts with the resource's state."""


class BudgetExceeded(Conflict):
    """409 ``/problems/budget-exceeded``: the charge exceeds the remaining budget.

    ``requested`` and ``remaining`` are ``{"epsilon": ..., "delta": ...}``.
    """


class PayloadTooLarge(ApiError):
    """413: a body, upload or prediction batch is over the server's limit."""


class ValidationError(ApiError):
    """422: invalid fields (``errors``, ``field``) or invalid uploaded rows (``detail``)."""


class RateLimited(ApiError):
    """429: too many requests (``retry_after`` seconds) or too many active jobs."""


class ServerError(ApiError):
    """5xx: the service failed; the body is generic and the cause is in its log."""


_BY_STATUS = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationError,
    429: RateLimited,
}


def error_class(status: int, problem_type: str | None) -> type[ApiError]:
    """The exception class for a status and problem type."""
    if status == 409 and problem_type and problem_type.endswith("budget-exceeded"):
        return BudgetExceeded
    if status >= 500:
        return ServerError
    return _BY_STATUS.get(status, ApiError)


class JobFailed(PrivboostError):
    """A job ended ``failed`` or ``cancelled``; ``job`` is its last state."""

    def __init__(self, job: dict[str, Any]) -> None:
        self.job = job
        reason = job.get("error") or ""
        super().__init__(f"job {job.get('id')} ended {job.get('state')}" + (f": {reason}" if reason else ""))


class WaitTimeout(PrivboostError, TimeoutError):
    """A job did not finish within the wait's timeout; ``job`` is its last state.

    The job keeps running on the server (and keeps its charge); wait again or cancel it.
    """

    def __init__(self, job: dict[str, Any], timeout: float) -> None:
        self.job = job
        self.timeout = timeout
        progress = job.get("progress") or {}
        super().__init__(
            f"job {job.get('id')} still {job.get('state')} after {timeout:g} s "
            f"({progress.get('rounds_done')}/{progress.get('tau')} steps); it keeps running "
            "on the server: call wait() again or cancel_job()"
        )


class BinaryError(PrivboostError):
    """The local ``privboost`` command failed; ``stderr`` is its one-line error."""

    def __init__(self, command: list[str], returncode: int, stderr: str) -> None:
        self.command = command
        self.returncode = returncode
        self.stderr = stderr
        super().__init__(f"`privboost {command[1] if len(command) > 1 else ''}` exited {returncode}: {stderr.strip()}")
