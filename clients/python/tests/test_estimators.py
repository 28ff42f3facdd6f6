"""PrivboostClassifier / PrivboostRegressor on the shipped data: the local binary and a real server."""

from __future__ import annotations

import json
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import train_test_split

from privboost import BinaryError, PrivacyLeakWarning, PrivboostClassifier, PrivboostRegressor

from conftest import DATA


def load(name: str, csv: str, **read):
    schema = json.loads((DATA / name / "schema.json").read_text())
    frame = pd.read_csv(DATA / name / csv, **read)
    label = schema["label"]["column"]
    return frame.drop(columns=[label]), frame[label], schema


@pytest.fixture(scope="module")
def mushroom_split():
    X, y, schema = load("mushroom", "mushroom.csv", dtype=str, keep_default_na=False)
    return (*train_test_split(X, y, test_size=0.25, random_state=0), schema)


def test_local_classifier_on_mushroom(binary, mushroom_split):
    X_train, X_test, y_train, y_test, schema = mushroom_split
    clf = PrivboostClassifier(epsilon=1.0, schema=schema, binary=binary)
    assert clf.fit(X_train, y_train) is clf
    assert list(clf.classes_) == ["e", "p"]
    assert clf.n_features_in_ == 22 and list(clf.feature_names_in_) == list(X_train.columns)
    assert clf.privacy_["epsilon"] == 1.0
    predicted = clf.predict(X_test)
    assert predicted.shape == (len(X_test),) and set(predicted) <= {"e", "p"}
    accuracy = (predicted == y_test.to_numpy()).mean()
    assert accuracy > 0.85, accuracy  # 0.955 on average at epsilon = 1 (docs/accuracy.md)
    proba = clf.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # predict is classes_[1] exactly when its probability is >= 0.5, and the score has the same sign.
    np.testing.assert_array_equal(predicted == "p", proba[:, 1] >= 0.5)
    np.testing.assert_array_equal(clf.decision_function(X_test) >= 0, proba[:, 1] >= 0.5)
    assert clf.score(X_test, y_test) == pytest.approx(accuracy)


def test_a_tied_vote_sum_reads_as_the_predicted_class_everywhere(binary, mushroom_split):
    # LazyBB predicts classes_[1] when its vote sum plus the vote offset is >= 0, so a row can sit exactly on
    # the boundary (score 0, probability 0.5). decision_function and predict_proba must still agree with
    # predict there, as scikit-learn's checks read them (decision > 0, the larger probability).
    X_train, X_test, y_train, _, schema = mushroom_split
    clf = PrivboostClassifier(epsilon=1.0, schema=schema, binary=binary).fit(X_train, y_train)
    rounds = clf.model_["params"]["rounds"]
    offset = clf.model_.get("vote_offset", 0)  # not written when 0
    sums = np.rint(clf.decision_function(X_test) * (rounds + abs(offset))) - offset
    # Move the threshold onto the first row's vote sum: that row ties and is predicted classes_[1].
    clf.model_["vote_offset"] = int(-sums[0])
    predicted = clf.predict(X_test)
    assert predicted[0] == clf.classes_[1]
    decision = clf.decision_function(X_test)
    proba = clf.predict_proba(X_test)
    assert decision[0] > 0 and proba[0, 1] > proba[0, 0]
    assert list(clf.classes_[(decision > 0).astype(int)]) == list(predicted)
    assert list(clf.classes_[np.argmax(proba, axis=1)]) == list(predicted)


def test_fitted_estimator_pickles_and_predicts_the_same(binary, mushroom_split):
    X_train, X_test, y_train, _, schema = mushroom_split
    clf = PrivboostClassifier(epsilon=0.5, rounds=9, schema=schema, binary=binary).fit(X_train, y_train)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X_test), clf.predict_proba(X_test))


def test_two_fits_draw_fresh_noise(binary, mushroom_split):
    X_train, X_test, y_train, _, schema = mushroom_split
    a = PrivboostClassifier(epsilon=0.5, schema=schema, binary=binary).fit(X_train, y_train)
    b = clone(a).fit(X_train, y_train)
    assert not np.array_equal(a.predict_proba(X_test), b.predict_proba(X_test))


def test_params_round_trip(binary):
    clf = PrivboostClassifier(epsilon=2.0, rounds=15, density=0.3, binary=binary)
    params = clf.get_params()
    assert params["epsilon"] == 2.0 and params["rounds"] == 15 and params["density"] == 0.3
    clf.set_params(epsilon=0.5, weak_learner="top-down", internal_nodes=3)
    assert clf.epsilon == 0.5 and clf.weak_learner == "top-down"
    assert clone(clf).get_params() == clf.get_params()


def test_top_down_weak_learner_on_mushroom(binary, mushroom_split):
    X_train, X_test, y_train, y_test, schema = mushroom_split
    clf = PrivboostClassifier(epsilon=1.0, weak_learner="top-down", internal_nodes=2, schema=schema, binary=binary)
    clf.fit(X_train, y_train)
    assert clf.model_["params"]["weak_learner"] in ("top-down", "dp-top-down")
    # 0.77-0.94 over 10 fits at epsilon = 1; the majority class is 0.52.
    assert (clf.predict(X_test) == y_test.to_numpy()).mean() > 0.65


def test_dp_ebm_classifier_on_breast_cancer(binary):
    X, y, schema = load("breast-cancer", "wdbc.csv")
    clf = PrivboostClassifier(algorithm="dp-ebm", epsilon=2.0, delta=1e-6, epochs=30, schema=schema, binary=binary)
    clf.fit(X, y)  # the schema's `id` column is ignored
    assert list(clf.classes_) == ["B", "M"]
    # 0.82-0.92 over 16 fits at epsilon = 2; the majority class (B) is 0.63.
    assert (clf.predict(X) == y.to_numpy()).mean() > 0.75


def test_regressor_on_abalone(binary):
    X, y, schema = load("abalone", "abalone.csv")
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0)
    reg = PrivboostRegressor(epsilon=4.0, delta=1e-6, epochs=100, schema=schema, binary=binary)
    reg.fit(X_train, y_train)
    values = reg.predict(X_test)
    assert values.shape == (len(X_test),)
    assert ((values >= 0) & (values <= 30)).all()
    rmse = float(np.sqrt(np.mean((values - y_test.to_numpy()) ** 2)))
    midpoint_rmse = float(np.sqrt(np.mean((15.0 - y_test.to_numpy()) ** 2)))  # the untrained start
    assert rmse < midpoint_rmse, (rmse, midpoint_rmse)


def test_regressor_refuses_lazybb_with_the_binary_error(binary):
    X, y, schema = load("abalone", "abalone.csv")
    reg = PrivboostRegressor(algorithm="lazybb", delta=0.0, schema=schema, binary=binary)
    with pytest.raises(BinaryError, match="exited"):
        reg.fit(X.head(200), y.head(200))


def test_unknown_algorithm_is_refused_by_the_binary_not_the_package(binary):
    X, y, schema = load("mushroom", "mushroom.csv", dtype=str, keep_default_na=False)
    with pytest.raises(BinaryError, match="nope"):
        PrivboostClassifier(algorithm="nope", schema=schema, binary=binary).fit(X.head(100), y.head(100))
    with pytest.raises(ValueError, match="learner's name"):
        PrivboostClassifier(algorithm="--help", schema=schema, binary=binary).fit(X.head(100), y.head(100))


def test_bounds_must_be_public_or_explicitly_inferred(binary):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="no public bounds for feature 'x0'.*infer_bounds=True"):
        PrivboostClassifier(binary=binary).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="read from the training data"):
        clf = PrivboostClassifier(infer_bounds=True, epsilon=4, binary=binary).fit(X, y)
    assert clf.schema_["columns"][0]["min"] == pytest.approx(X[:, 0].min())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # explicit bounds: no warning
        clf = PrivboostClassifier(feature_bounds=(-4, 4), epsilon=4, binary=binary).fit(X, y)
    assert clf.schema_["columns"][0] == {"name": "x0", "type": "numeric", "min": -4.0, "max": 4.0, "bins": 10}
    assert (clf.predict(X) == y).mean() > 0.9  # 0.99-1.0 over 15 fits
    with pytest.raises(ValueError, match="no public bounds for the target"):
        PrivboostRegressor(feature_bounds=(-4, 4), binary=binary).fit(X, X[:, 0])


def test_categorical_columns_need_a_schema(binary):
    X, y, _ = load("adult", "adult-test.csv")
    with pytest.raises(ValueError, match="not numeric: declare them in schema="):
        PrivboostClassifier(feature_bounds=(0, 1), binary=binary).fit(X, y)


def test_multiclass_is_refused(binary):
    X = np.arange(30, dtype=float).reshape(10, 3)
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        PrivboostClassifier(feature_bounds=(0, 30), binary=binary).fit(X, np.arange(10) % 3)


# ---------------------------------------------------------------- server mode


@pytest.fixture(scope="module")
def adult_on_server(owner, analyst):
    X, y, schema = load("adult", "adult-train.csv", dtype=str, keep_default_na=False)
    frame = X.assign(income=y)
    created = owner.upload_dataset("adult", frame, schema, epsilon=3.0)
    owner.grant(created["dataset"]["id"], analyst.key_id)
    return created["dataset"]["id"]


def test_server_classifier_trains_on_rows_it_never_sees(analyst, owner, adult_on_server):
    clf = PrivboostClassifier(epsilon=1.0, client=analyst, dataset=adult_on_server, progress=True)
    clf.fit()
    assert list(clf.classes_) == ["<=50K", ">50K"]
    assert clf.job_["state"] == "succeeded" and clf.model_id_ == clf.job_["model_id"]
    X_test, y_test, _ = load("adult", "adult-test.csv", dtype=str, keep_default_na=False)
    accuracy = (clf.predict(X_test) == y_test.to_numpy()).mean()
    assert accuracy > 0.78, accuracy  # 0.825 on average at epsilon = 1; the majority class is 0.76
    # Every fit spends: the ledger holds this fit's charge.
    ledger = owner.ledger(adult_on_server)
    assert ledger.loc[ledger["job_id"] == clf.job_["id"], "epsilon"].tolist() == [1.0]
    with pytest.raises(ValueError, match="without X and y"):
        clf.fit(X_test, y_test)


def test_server_classifier_uploads_x_y_with_a_dataset_spec(owner):
    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.uniform(0, 10, size=(3000, 2)), columns=["a", "b"])
    y = np.where(X["a"] > 5, "yes", "no")
    clf = PrivboostClassifier(epsilon=4.0, feature_bounds=(0, 10), client=owner, dataset={"epsilon": 5.0})
    clf.fit(X, y)
    budget = owner.budget(clf.dataset_id_)
    assert budget.loc["total", "epsilon"] == 5.0 and budget.loc["spent", "epsilon"] == 4.0
    assert (clf.predict(X) == y).mean() > 0.8  # 0.99-1.0 over 20 local fits
    assert clf.predict_proba(X).shape == (3000, 2)


def test_upload_mode_reuses_identical_rows_and_refuses_overlapping_ones(owner):
    """cross_val_score in upload mode once made one dataset per fold, each with a fresh budget, so the
    rows the folds share were spent several times (issue 29): now identical rows reuse their dataset and
    overlapping ones are refused with the way out."""
    from sklearn.model_selection import cross_val_score

    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.uniform(0, 10, size=(600, 2)), columns=["a", "b"])
    y = np.where(X["a"] > 5, "yes", "no")
    spec = {"name": "cv-shared", "epsilon": 10.0}
    clf = PrivboostClassifier(epsilon=2.0, feature_bounds=(0, 10), client=owner, dataset=spec)
    clf.fit(X, y)
    first = clf.dataset_id_
    clf.fit(X, y)
    assert clf.dataset_id_ == first, "the same rows went up as a second dataset"
    assert owner.budget(first).loc["spent", "epsilon"] == 4.0, "both fits are charged to the one budget"
    with pytest.raises(ValueError, match="already uploaded by this process as dataset"):
        cross_val_score(PrivboostClassifier(epsilon=2.0, feature_bounds=(0, 10), client=owner, dataset=spec),
                        X, y, cv=3, error_score="raise")
    # The caller who accepts the composition says so.
    ok = PrivboostClassifier(epsilon=2.0, feature_bounds=(0, 10), client=owner,
                             dataset={**spec, "allow_overlap": True})
    ok.fit(X.iloc[:400], y[:400])
    assert ok.dataset_id_ != first


def test_server_dataset_model_checks_the_columns_like_sklearn(analyst, adult_on_server):
    clf = PrivboostClassifier(epsilon=0.5, client=analyst, dataset=adult_on_server).fit()
    X_test, _, _ = load("adult", "adult-test.csv", dtype=str, keep_default_na=False)
    with pytest.raises(ValueError, match="Feature names missing"):
        clf.predict(X_test.drop(columns=[X_test.columns[0]]))
    with pytest.raises(ValueError, match=f"X has 3 features, but PrivboostClassifier is expecting "
                                         f"{clf.n_features_in_} features as input"):
        clf.predict(np.zeros((2, 3)))


def test_a_fit_in_server_mode_leaves_the_client_parameter_unchanged(owner):
    """sklearn's check_estimators_overwrite_params in server mode: the client's HTTP session changes
    with every request, so the `client` parameter must hash by its configuration only."""
    from sklearn.utils.estimator_checks import check_estimators_overwrite_params

    clf = PrivboostClassifier(epsilon=50.0, feature_bounds=(-10.0, 10.0), client=owner,
                              dataset={"epsilon": 50.0})
    check_estimators_overwrite_params("PrivboostClassifier", clf)


def _three_grades(n: int):
    """`level` decides the grade (a -> low, b -> mid, c -> high), one row in ten moved to the next grade."""
    levels = [["a", "b", "c"][i % 3] for i in range(n)]
    grades = [["low", "mid", "high"][(i % 3 + (i % 10 == 0)) % 3] for i in range(n)]
    return pd.DataFrame({"level": levels}), pd.Series(grades, name="grade")


def test_local_multiclass_dpboost_classifier(binary):
    """k classes with DPBoost (one-vs-rest): classes_ in schema order, predict_proba (n, k) summing to 1,
    predict its argmax."""
    X, y = _three_grades(3000)
    schema = {"label": {"column": "grade", "classes": ["low", "mid", "high"]},
              "columns": [{"name": "level", "type": "categorical", "categories": ["a", "b", "c"]}]}
    clf = PrivboostClassifier(algorithm="dpboost", epsilon=5.0, schema=schema, binary=binary).fit(X, y)
    assert list(clf.classes_) == ["low", "mid", "high"]
    rows = pd.DataFrame({"level": ["a", "b", "c"]})
    proba = clf.predict_proba(rows)
    assert proba.shape == (3, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(clf.predict(rows)) == ["low", "mid", "high"]


def test_local_multiclass_classifier_takes_the_schema_class_order(binary):
    """k classes with dp-linear: classes_ is the schema's list in its (unsorted) order, predict_proba is
    (n, k) in that order and sums to 1, predict is its argmax; a binary learner refuses a multiclass y."""
    X, y = _three_grades(3000)
    schema = {"label": {"column": "grade", "classes": ["low", "mid", "high"]},
              "columns": [{"name": "level", "type": "categorical", "categories": ["a", "b", "c"]}]}
    clf = PrivboostClassifier(algorithm="dp-linear", epsilon=5.0, schema=schema, binary=binary).fit(X, y)
    assert list(clf.classes_) == ["low", "mid", "high"]
    rows = pd.DataFrame({"level": ["a", "b", "c"]})
    proba = clf.predict_proba(rows)
    assert proba.shape == (3, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert list(clf.predict(rows)) == ["low", "mid", "high"]
    assert list(clf.classes_[proba.argmax(axis=1)]) == ["low", "mid", "high"]
    assert clf.decision_function(rows).shape == (3, 3)
    # auto trains k classes too (with a delta its multiclass order puts DP-EBM first).
    auto = PrivboostClassifier(algorithm="auto", epsilon=5.0, delta=1e-6, schema=schema, binary=binary).fit(X, y)
    assert list(auto.classes_) == ["low", "mid", "high"]
    assert auto.predict_proba(rows).shape == (3, 3)
    assert list(auto.predict(rows)) == ["low", "mid", "high"]
    # Without a schema class list, classes_ is y's sorted distinct values.
    schema_no_classes = {"columns": schema["columns"]}
    clf = PrivboostClassifier(algorithm="dp-linear", epsilon=5.0, schema=schema_no_classes, binary=binary).fit(X, y)
    assert list(clf.classes_) == ["high", "low", "mid"]
    assert list(clf.predict(rows)) == ["low", "mid", "high"]
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        PrivboostClassifier(epsilon=5.0, schema=schema_no_classes, binary=binary).fit(X, y)
