"""Python client and scikit-learn estimators for privboost, differentially private boosted models.

- :class:`Client`: every route of the privboost REST service (``openapi.yaml``).
- :func:`randomize`: local-DP collection on the owner's side (k-ary randomized response per column).
- :class:`PrivboostClassifier`, :class:`PrivboostRegressor`: scikit-learn estimators that train with the
  local ``privboost`` binary or on a server. Every ``fit`` spends privacy budget.
"""

__version__ = "0.1.0"

from .client import Client, rows_to_records  # noqa: E402
from .errors import (  # noqa: E402
    ApiError,
    BadRequest,
    BinaryError,
    BudgetExceeded,
    Conflict,
    Forbidden,
    JobFailed,
    NotFound,
    PayloadTooLarge,
    PrivboostError,
    RateLimited,
    ServerError,
    Unauthorized,
    ValidationError,
    WaitTimeout,
)
from .local_dp import randomize  # noqa: E402
from .estimators import PrivacyLeakWarning, PrivboostClassifier, PrivboostRegressor, find_binary  # noqa: E402

__all__ = [
    "ApiError",
    "BadRequest",
    "BinaryError",
    "BudgetExceeded",
    "Client",
    "Conflict",
    "Forbidden",
    "JobFailed",
    "NotFound",
    "PayloadTooLarge",
    "PrivacyLeakWarning",
    "PrivboostClassifier",
    "PrivboostError",
    "PrivboostRegressor",
    "RateLimited",
    "ServerError",
    "Unauthorized",
    "ValidationError",
    "WaitTimeout",
    "find_binary",
    "randomize",
    "rows_to_records",
]
