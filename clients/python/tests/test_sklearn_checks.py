"""scikit-learn's estimator checks on the local-binary mode: a binary classifier (LazyBB), a
multiclass one (dp-linear) and a regressor.

Every check that sklearn yields runs, except the ones listed in SKIPPED, each
with the reason it cannot apply (the same list is in the package README).
The estimators are configured as a user must configure them: public feature
bounds wide enough for the checks' data (feature_bounds), label bounds for
the regressor, and a large epsilon so that the accuracy thresholds of
check_classifiers_train / check_regressors_train measure the learner rather
than the noise.
"""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import (
    check_methods_sample_order_invariance,
    check_methods_subset_invariance,
    parametrize_with_checks,
)

from privboost import PrivboostClassifier, PrivboostRegressor

from conftest import binary_path

# check name -> why it cannot apply to privboost.
SKIPPED = {
    "check_fit_idempotent": (
        "DP: every fit draws fresh noise from the OS CSPRNG and there is no seed on purpose, "
        "so two fits on the same data give different models"),
    "check_estimators_data_not_an_array": (
        "DP: compares the predictions of two separate fits (arrays vs. array-likes), "
        "which differ by their noise"),
    "check_classifier_data_not_an_array": "DP: two separate fits, as check_estimators_data_not_an_array",
    "check_regressor_data_not_an_array": "DP: two separate fits, as check_estimators_data_not_an_array",
    "check_supervised_y_2d": "DP: compares the predictions of a fit on y and a separate fit on y[:, None]",
    "check_regressors_int": "DP: compares the predictions of a fit on integer y and a separate fit on float y",
}


def _estimators():
    binary = binary_path()
    return [
        PrivboostClassifier(epsilon=100.0, rounds=15, feature_bounds=(-10.0, 10.0), bins=20, binary=binary),
        # Multiclass (issue 27): dp-linear trains k classes, so the checks' multiclass data apply to it.
        PrivboostClassifier(algorithm="dp-linear", epsilon=100.0, feature_bounds=(-10.0, 10.0), bins=20,
                            binary=binary),
        PrivboostRegressor(epsilon=1000.0, delta=1e-6, feature_bounds=(-10.0, 10.0),
                           label_bounds=(-4.0, 4.0), bins=20, binary=binary),
    ]


def _check_name(check) -> str:
    return getattr(check, "func", check).__name__


@parametrize_with_checks(_estimators())
def test_sklearn_compatible(estimator, check):
    name = _check_name(check)
    if name in SKIPPED:
        pytest.skip(SKIPPED[name])
    check(estimator)


@pytest.mark.parametrize("estimator", _estimators(), ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("check", [check_methods_sample_order_invariance, check_methods_subset_invariance],
                         ids=lambda c: c.__name__)
def test_predictions_of_one_fit_are_deterministic(estimator, check):
    """sklearn skips these for non-deterministic estimators, but they compare predictions of ONE fitted
    model (on permuted rows and on subsets), which must not depend on the noise: they apply."""
    check(type(estimator).__name__, estimator)
