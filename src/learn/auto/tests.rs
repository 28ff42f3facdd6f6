//! Tests of `auto`: the candidate rule, the plan's charge by hand, the
//! refusals before any charge, the partition sizes, the model file, and
//! seeded end-to-end runs on shipped data.

use serde_json::json;

use super::file::Score;
use super::{AutoSpec, candidates, default_validation_share};
use crate::data::Task;
use crate::data::shipped::load_one as shipped;
use crate::learn::family::{AlgorithmName, AlgorithmSpec, ColumnKinds, PublicFacts};
use crate::learn::{Model, Output};
use crate::privacy::{Budget, NoiseRng, PrivacyCost};

fn facts(n_rows: usize, task: Task) -> PublicFacts {
    PublicFacts::adult_shaped(n_rows, task)
}

/// A schema with private bins is refused before any charge: the candidates
/// would each need the one binning phase's derived schema, not built yet.
#[test]
fn a_schema_with_private_bins_is_refused() {
    let with_bins = PublicFacts {
        private_bins: 1,
        ..facts(32_561, Task::Binary)
    };
    let e = AlgorithmSpec::Auto(Default::default())
        .plan(budget(1.0, 0.0), with_bins)
        .unwrap_err();
    assert!(e.to_string().contains("private bins"), "{e}");
    assert_eq!(e.field(), "algorithm");
}

fn budget(epsilon: f64, delta: f64) -> Budget {
    Budget::new(epsilon, delta).unwrap()
}

const REGRESSION: Task = Task::Regression {
    min: 0.0,
    max: 30.0,
};

fn labels(task: Task, b: Budget) -> Vec<&'static str> {
    labels_for(&facts(32_561, task), b)
}

fn labels_for(facts: &PublicFacts, b: Budget) -> Vec<&'static str> {
    candidates(facts, b).into_iter().map(|(l, _)| l).collect()
}

/// Facts with `numeric` numeric and `categorical` categorical columns.
fn shaped(n_rows: usize, task: Task, numeric: usize, categorical: usize) -> PublicFacts {
    PublicFacts {
        kinds: ColumnKinds {
            numeric,
            categorical,
        },
        ..facts(n_rows, task)
    }
}

/// On binary classification a small budget for the data keeps only the
/// learner the column kinds favour; a large one, or mixed kinds, keeps the
/// whole list. The boundary is each candidate's share of `n * epsilon` at
/// `SELECTION_PAYS` (10,000): Mushroom's folds (6,499 rows) at epsilon 1
/// and 3 are below it, at 3.1 above; breast cancer's (455) always below.
#[test]
fn column_kinds_pick_the_favourite_when_selection_does_not_pay() {
    let mushroom = shaped(6499, Task::Binary, 0, 22);
    assert_eq!(labels_for(&mushroom, budget(1.0, 0.0)), ["lazybb"]);
    assert_eq!(labels_for(&mushroom, budget(1.0, 1e-6)), ["lazybb"]);
    assert_eq!(labels_for(&mushroom, budget(3.0, 0.0)), ["lazybb"]);
    assert_eq!(
        labels_for(&mushroom, budget(3.1, 0.0)),
        ["dp-linear", "lazybb"]
    );
    // Exactly at the boundary (20,000 / 2 = 10,000): selection pays.
    let boundary = shaped(20_000, Task::Binary, 0, 22);
    assert_eq!(
        labels_for(&boundary, budget(1.0, 0.0)),
        ["dp-linear", "lazybb"]
    );
    assert_eq!(
        labels_for(&boundary, budget(1.0f64.next_down(), 0.0)),
        ["lazybb"]
    );
    let breast = shaped(455, Task::Binary, 30, 0);
    assert_eq!(labels_for(&breast, budget(1.0, 0.0)), ["dp-linear"]);
    assert_eq!(labels_for(&breast, budget(5.0, 0.0)), ["dp-linear"]);
    assert_eq!(labels_for(&breast, budget(1.0, 1e-6)), ["dp-ebm"]);
    // Mixed kinds (Adult's shape at Mushroom's size): the whole list.
    let mixed = shaped(6499, Task::Binary, 6, 8);
    assert_eq!(
        labels_for(&mixed, budget(1.0, 0.0)),
        ["dp-linear", "lazybb"]
    );
    // "Mostly" is three quarters: 3 of 4 is, 2 of 3 is not.
    assert_eq!(
        labels_for(&shaped(6499, Task::Binary, 3, 1), budget(1.0, 0.0)),
        ["dp-linear"]
    );
    assert_eq!(
        labels_for(&shaped(6499, Task::Binary, 1, 3), budget(1.0, 0.0)),
        ["lazybb"]
    );
    assert_eq!(
        labels_for(&shaped(6499, Task::Binary, 2, 1), budget(1.0, 0.0)),
        ["dp-linear", "lazybb"]
    );
    assert_eq!(
        labels_for(&shaped(6499, Task::Binary, 1, 2), budget(1.0, 0.0)),
        ["dp-linear", "lazybb"]
    );
    // Regression: no favourite, whatever the kinds.
    let numeric_regression = shaped(455, REGRESSION, 30, 0);
    assert_eq!(
        labels_for(&numeric_regression, budget(1.0, 1e-6)),
        ["dp-linear", "dp-ebm"]
    );
    // A favourite takes the whole budget and every row: nothing to score.
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(budget(1.0, 1e-6), breast)
        .unwrap();
    // DP-EBM alone is charged as DP-EBM: its rho, proved to (1, 1e-6), so
    // that a zCDP-filter dataset can compose it.
    let PrivacyCost::Zcdp {
        rho,
        epsilon,
        delta,
    } = plan.cost
    else {
        panic!(
            "DP-EBM alone should cost its zCDP description, got {:?}",
            plan.cost
        );
    };
    assert!(
        epsilon <= 1.0 && delta == 1e-6 && rho > 0.0,
        "{:?}",
        plan.cost
    );
    let noise = plan.noise();
    assert_eq!(noise["candidates"][0]["noise"]["rho"], rho);
    assert_eq!(noise["n_validation"], 0);
    assert_eq!(noise["n_train"], 455);
    assert_eq!(noise["candidates"][0]["label"], "dp-ebm");
    assert_eq!(noise["candidates"][0]["epsilon"], 1.0);
    assert_eq!(noise["candidates"][0]["delta"], 1e-6);
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(budget(1.0, 1e-6), mushroom)
        .unwrap();
    // LazyBB alone is pure: the job's delta is not charged.
    assert_eq!(plan.cost, PrivacyCost::Pure { epsilon: 1.0 });
}

/// The list is a pure function of the public facts: the same facts give the
/// same list (and plan), and it changes exactly as the documented rule
/// says with the task and delta.
#[test]
fn candidate_rule() {
    assert_eq!(
        labels(Task::Binary, budget(1.0, 0.0)),
        ["dp-linear", "lazybb"]
    );
    assert_eq!(
        labels(Task::Binary, budget(1.0, 1e-6)),
        ["dp-linear", "lazybb", "dp-ebm"]
    );
    assert_eq!(labels(REGRESSION, budget(1.0, 0.0)), ["dp-linear"]);
    assert_eq!(
        labels(REGRESSION, budget(0.3, 1e-6)),
        ["dp-linear", "dp-ebm"]
    );
    let spec = AlgorithmSpec::Auto(AutoSpec::default());
    let a = spec
        .plan(budget(1.0, 0.0), facts(32_561, Task::Binary))
        .unwrap();
    let b = spec
        .plan(budget(1.0, 0.0), facts(32_561, Task::Binary))
        .unwrap();
    assert_eq!(a, b);
}

/// The charge is the composition theorem's total, by hand: two pure
/// candidates at epsilon 1 run with 0.5 each and the ledger is charged 1;
/// with delta, three candidates at 1/3 each, DP-EBM takes the whole delta.
#[test]
fn charge_is_the_theorem_total() {
    let spec = AlgorithmSpec::Auto(AutoSpec::default());
    let plan = spec
        .plan(budget(1.0, 0.0), facts(32_561, Task::Binary))
        .unwrap();
    assert_eq!(plan.cost, PrivacyCost::Pure { epsilon: 1.0 });
    assert_eq!(plan.cost.charge(), budget(1.0, 0.0));
    let noise = plan.noise();
    let cands = noise["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 2);
    for c in cands {
        assert_eq!(c["epsilon"], 0.5);
        assert_eq!(c["delta"], 0.0);
    }
    // Each candidate is planned on the training part only.
    assert_eq!(noise["n_validation"], 3256);
    assert_eq!(noise["n_train"], 32_561 - 3256);
    assert_eq!(cands[0]["noise"]["n_rows"], 32_561 - 3256);

    let approx = spec
        .plan(budget(0.9, 1e-6), facts(32_561, Task::Binary))
        .unwrap();
    assert_eq!(
        approx.cost,
        PrivacyCost::Approx {
            epsilon: 0.9,
            delta: 1e-6
        }
    );
    let noise = approx.noise();
    assert_eq!(noise["candidates"][2]["label"], "dp-ebm");
    assert_eq!(noise["candidates"][2]["delta"], 1e-6);
    assert_eq!(noise["candidates"][0]["delta"], 0.0);

    // One candidate (pure regression): it takes every row and the budget.
    let single = spec
        .plan(budget(1.0, 0.0), facts(3341, REGRESSION))
        .unwrap();
    assert_eq!(single.cost, PrivacyCost::Pure { epsilon: 1.0 });
    let noise = single.noise();
    assert_eq!(noise["n_validation"], 0);
    assert_eq!(noise["candidates"][0]["epsilon"], 1.0);
    // The stored form re-plans to the same plan.
    let stored = serde_json::to_value(plan.resolved).unwrap();
    assert_eq!(
        stored,
        json!({"algorithm": "auto", "validation_share": 0.1})
    );
    // (`defaults_used` is stored with the job, not in the parameters.)
    let back: AlgorithmSpec = serde_json::from_value(stored).unwrap();
    let replanned = back
        .plan(budget(1.0, 0.0), facts(32_561, Task::Binary))
        .unwrap();
    assert_eq!(
        (replanned.cost, replanned.steps, replanned.noise()),
        (plan.cost, plan.steps, plan.noise())
    );
}

#[test]
fn partition_sizes_follow_the_public_rule() {
    assert_eq!(default_validation_share(32_561), 0.1);
    assert_eq!(default_validation_share(3341), 0.25);
    assert!((default_validation_share(6500) - 1000.0 / 6500.0).abs() < 1e-15);
    let spec = AlgorithmSpec::Auto(AutoSpec {
        validation_share: Some(0.3),
    });
    let noise = spec
        .plan(budget(1.0, 1e-6), facts(1000, REGRESSION))
        .unwrap()
        .noise();
    assert_eq!(noise["n_validation"], 300);
    assert_eq!(noise["n_train"], 700);
}

/// Refused in `plan`, before any charge, naming the field.
#[test]
fn refusals_before_any_charge() {
    let plan = |share: Option<f64>, b: Budget, f: PublicFacts| {
        AlgorithmSpec::Auto(AutoSpec {
            validation_share: share,
        })
        .plan(b, f)
    };
    for bad in [0.0, 1.0, -0.2, f64::NAN] {
        let e = plan(Some(bad), budget(1.0, 0.0), facts(1000, Task::Binary)).unwrap_err();
        assert_eq!(e.field(), "validation_share", "{e}");
    }
    // A share of the budget a candidate cannot use (its own plan refuses).
    let e = plan(None, budget(1e-300, 0.0), facts(1000, Task::Binary)).unwrap_err();
    assert_eq!(e.field(), "epsilon", "{e}");
    assert!(e.to_string().contains("candidate"), "{e}");
    // Too few rows to split.
    assert!(plan(None, budget(1.0, 0.0), facts(1, Task::Binary)).is_err());
    // Request parsing: the field is auto's, others are refused by name,
    // unknown ones as `body`.
    let fields = |v: serde_json::Value| {
        AlgorithmSpec::from_fields(AlgorithmName::Auto, v.as_object().unwrap().clone())
    };
    assert_eq!(
        fields(json!({"validation_share": 0.2})).unwrap(),
        AlgorithmSpec::Auto(AutoSpec {
            validation_share: Some(0.2)
        })
    );
    assert_eq!(fields(json!({"rounds": 9})).unwrap_err()[0].field, "rounds");
    assert_eq!(
        fields(json!({"candidates": 2})).unwrap_err()[0].field,
        "body"
    );
}

/// Higher accuracy wins, lower clipped MSE wins, ties keep the earlier.
#[test]
fn the_better_score_wins() {
    let acc = |v| Score::Accuracy {
        value: v,
        n_rows: 10,
        epsilon: 1.0,
    };
    let mse = |v| Score::ClippedMse {
        value: v,
        clip: 1.0,
        n_rows: 10,
        epsilon: 1.0,
    };
    assert!(acc(0.9).better_than(&acc(0.8)));
    assert!(!acc(0.8).better_than(&acc(0.9)));
    assert!(!acc(0.8).better_than(&acc(0.8)));
    assert!(mse(2.0).better_than(&mse(3.0)));
    assert!(!mse(3.0).better_than(&mse(2.0)));
}

/// Mushroom, first four fifths train, pure epsilon = 4 in total (large
/// enough for selection to pay: 6,499 x 4 / 2 >= 10,000), seeded: the
/// winner is on the list, the file says so and round-trips, the statement
/// states the total, and the held-out accuracy is well above the majority
/// class (0.52) and the single 1-Rule (0.89), with a margin below the
/// measured means of both candidates at epsilon 0.5.
#[test]
fn mushroom_end_to_end() {
    let (encoder, all) = shipped("mushroom", "mushroom.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..all.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (all.subset(&train_rows), all.subset(&test_rows));
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(budget(4.0, 0.0), PublicFacts::new(&encoder, train.n_rows()))
        .unwrap();
    let mut steps = 0;
    let model = plan
        .fit(&train, &encoder, &mut NoiseRng::seeded(7), &mut |d| {
            steps = d;
            true
        })
        .unwrap();
    assert_eq!(steps, plan.steps);
    let Model::Auto(file) = &model else {
        panic!("an auto model")
    };
    let s = &file.selection;
    assert_eq!(s.candidates.len(), 2);
    assert_eq!(
        s.n_validation,
        (train.n_rows() as f64 * 1000.0 / 6499.0).round() as usize
    );
    assert_eq!(s.n_train + s.n_validation, train.n_rows());
    assert_eq!(file.winner.algorithm(), s.candidates[s.winner].label);
    let Some(Score::Accuracy {
        value,
        n_rows,
        epsilon,
    }) = s.score
    else {
        panic!("an accuracy score")
    };
    assert_eq!(n_rows, s.n_validation);
    assert_eq!(epsilon, 2.0);
    assert!(value > 0.85, "{value}");
    let privacy = model.privacy_json();
    assert_eq!(privacy["epsilon"], 4.0);
    assert_eq!(privacy["delta"], 0.0);
    assert_eq!(privacy["winner"]["epsilon"], 2.0);
    assert_eq!(model.params_json()["algorithm"], "auto");
    // The file round-trips and predicts as the winner.
    let back = Model::from_json(&model.to_json()).unwrap();
    assert_eq!(back, model);
    let labels = test.labels.as_ref().unwrap();
    let outputs = model.predictor().predict_all(&test);
    let winner_outputs = file.winner.predictor().predict_all(&test);
    assert_eq!(outputs, winner_outputs);
    let correct = outputs
        .iter()
        .enumerate()
        .filter(|(i, o)| matches!(o, Output::Class(p) if p.positive == labels.get(*i)))
        .count();
    let accuracy = correct as f64 / test.n_rows() as f64;
    assert!(accuracy > 0.90, "{accuracy}");
}

/// Mushroom at epsilon 1: selection would not pay, so the column kinds'
/// favourite (LazyBB; categorical columns only) runs alone on every row
/// with the whole budget, no score is released, and it predicts well
/// (LazyBB's measured mean there is 0.968 +- 0.011; margin 4 sigma).
#[test]
fn mushroom_at_epsilon_1_runs_the_favourite_alone() {
    let (encoder, all) = shipped("mushroom", "mushroom.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..all.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (all.subset(&train_rows), all.subset(&test_rows));
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(budget(1.0, 0.0), PublicFacts::new(&encoder, train.n_rows()))
        .unwrap();
    let model = plan
        .fit(&train, &encoder, &mut NoiseRng::seeded(7), &mut |_| true)
        .unwrap();
    let Model::Auto(file) = &model else {
        panic!("an auto model")
    };
    let s = &file.selection;
    assert_eq!(s.candidates.len(), 1);
    assert_eq!(s.candidates[0].label, "lazybb");
    assert_eq!((s.n_train, s.n_validation), (train.n_rows(), 0));
    assert_eq!(s.score, None);
    assert_eq!(model.privacy_json()["winner"]["epsilon"], 1.0);
    let labels = test.labels.as_ref().unwrap();
    let correct = model
        .predictor()
        .predict_all(&test)
        .iter()
        .enumerate()
        .filter(|(i, o)| matches!(o, Output::Class(p) if p.positive == labels.get(*i)))
        .count();
    let accuracy = correct as f64 / test.n_rows() as f64;
    assert!(accuracy > 0.92, "{accuracy}");
}

/// Abalone with delta > 0: two candidates, a clipped-MSE score, RMSE on
/// held-out rows below the mean predictor's 3.22 with a margin.
#[test]
fn abalone_end_to_end() {
    let (encoder, all) = shipped("abalone", "abalone.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..all.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (all.subset(&train_rows), all.subset(&test_rows));
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(
            budget(2.0, 1e-6),
            PublicFacts::new(&encoder, train.n_rows()),
        )
        .unwrap();
    let model = plan
        .fit(&train, &encoder, &mut NoiseRng::seeded(3), &mut |_| true)
        .unwrap();
    let Model::Auto(file) = &model else {
        panic!("an auto model")
    };
    assert!(matches!(
        file.selection.score,
        Some(Score::ClippedMse { clip, .. }) if clip == 7.5
    ));
    let actual = test.targets.as_ref().unwrap();
    let se: f64 = model
        .predictor()
        .predict_all(&test)
        .iter()
        .zip(actual)
        .map(|(o, y)| match o {
            Output::Value(v) => (v - y).powi(2),
            Output::Class(_) => panic!("a regressor"),
        })
        .sum();
    let rmse = (se / test.n_rows() as f64).sqrt();
    assert!(rmse < 3.1, "{rmse}");
}
