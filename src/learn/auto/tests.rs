//! Tests of `auto`: the candidate rule, the plan's charge by hand, the
//! refusals before any charge, the partition sizes, the model file, and
//! seeded end-to-end runs on shipped data.

use serde_json::json;

use super::file::Score;
use super::{AutoSpec, candidates, default_validation_share, prior};
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

/// The prior's lookup: the finest key the table has, coarser keys when it
/// lacks one; purity, task, kind and the `n * epsilon` bucket all count.
#[test]
fn the_prior_takes_the_finest_key_and_falls_back() {
    let entry =
        |task: Option<&str>, kind: Option<&str>, bucket: Option<&str>, pure, first: &str| {
            prior::Entry {
                task: task.map(str::to_owned),
                kind: kind.map(str::to_owned),
                bucket: bucket.map(str::to_owned),
                pure,
                ranking: vec![first.to_owned()],
            }
        };
    let table = vec![
        entry(None, None, None, true, "coarsest"),
        entry(Some("binary"), None, None, true, "task"),
        entry(Some("binary"), None, Some("b3"), true, "bucket"),
        entry(
            Some("binary"),
            Some("categorical"),
            Some("b3"),
            true,
            "finest",
        ),
        entry(Some("binary"), None, None, false, "approx"),
    ];
    // Decades: 6,499 x 1 is in [1e3, 1e4), bucket b3.
    let decades = prior::Buckets {
        per_decade: 1.0,
        offset: 0.0,
    };
    let first = |f: &PublicFacts, b: Budget| prior::ranking_in(&table, decades, f, b)[0].clone();
    let categorical = shaped(6499, Task::Binary, 0, 22);
    let numeric = shaped(6499, Task::Binary, 22, 0);
    assert_eq!(first(&categorical, budget(1.0, 0.0)), "finest");
    assert_eq!(first(&numeric, budget(1.0, 0.0)), "bucket");
    assert_eq!(
        first(&numeric, budget(0.1, 0.0)),
        "task",
        "649.9 is below 1e3"
    );
    assert_eq!(first(&numeric, budget(1.0, 1e-6)), "approx");
    assert_eq!(
        first(&shaped(6499, REGRESSION, 1, 0), budget(1.0, 0.0)),
        "coarsest"
    );
    assert!(prior::ranking_in(&table, decades, &numeric, budget(1.0, 1e-6)).len() == 1);
    assert!(prior::ranking_in(&table[..1], decades, &numeric, budget(1.0, 1e-6)).is_empty());
    // Other buckets move the key: with 0.75 per decade 6,499 x 1 is in b2.
    let coarser = prior::Buckets {
        per_decade: 0.75,
        offset: 0.0,
    };
    assert_eq!(
        prior::ranking_in(&table, coarser, &categorical, budget(1.0, 0.0))[0],
        "task"
    );
    // Kinds: at least half numeric is numeric; booleans count as categorical.
    assert_eq!(
        prior::majority_kind(shaped(1, Task::Binary, 2, 2).kinds),
        "numeric"
    );
    assert_eq!(
        prior::majority_kind(shaped(1, Task::Binary, 2, 3).kinds),
        "categorical"
    );
}

/// The buckets by hand, the same values `scripts/suite_lodo.py
/// --self-test` pins for the script's `n_eps_bucket`, which wrote the
/// prior's keys: `floor(per_decade * log10(max(n epsilon, 1)) + offset)`.
#[test]
fn the_buckets_by_hand_agree_with_the_script() {
    let b = |per_decade, offset| prior::Buckets { per_decade, offset };
    let cases = [
        (1000, 1.0, b(1.0, 0.0), "b3"),
        (999, 1.0, b(1.0, 0.0), "b2"),
        (10_000, 1.0, b(0.75, 0.0), "b3"),
        (9_999, 1.0, b(0.75, 0.0), "b2"),
        (100, 1.0, b(0.75, 0.5), "b2"),
        (3, 0.1, b(0.75, 0.0), "b0"),
    ];
    for (n, eps, buckets, want) in cases {
        assert_eq!(buckets.label(n, eps), want, "{n} x {eps} with {buckets:?}");
    }
    // The shipped prior's buckets are one of the script's grid.
    let shipped = prior::buckets();
    assert!(
        [0.5, 0.75, 1.0, 1.5].contains(&shipped.per_decade),
        "{shipped:?}"
    );
    assert!(
        [0.0, 0.25, 0.5, 0.75].contains(&shipped.offset),
        "{shipped:?}"
    );
}

/// The shipped prior (generated by `scripts/suite_lodo.py --emit-prior`)
/// parses, answers every task at either purity through its coarse keys,
/// and names only learners `auto` runs, each at most once.
#[test]
fn the_shipped_prior_covers_every_job() {
    assert!(!prior::entries().is_empty());
    for task in [Task::Binary, REGRESSION] {
        for delta in [0.0, 1e-6] {
            for (n, eps) in [
                (10, 0.01),
                (500, 1.0),
                (5_000, 1.0),
                (50_000, 1.0),
                (1_000_000, 10.0),
            ] {
                for (num, cat) in [(5, 0), (0, 5), (3, 3)] {
                    let f = shaped(n, task, num, cat);
                    let list = labels_for(&f, budget(eps, delta));
                    assert!(!list.is_empty(), "{task:?} {n} {eps} {delta}");
                    assert!(list.iter().all(|l| *l != "lazybb" || task == Task::Binary));
                }
            }
        }
    }
    for e in prior::entries() {
        let mut seen = e.ranking.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), e.ranking.len(), "{e:?}");
        for l in &e.ranking {
            assert!(
                ["dp-linear", "lazybb", "dp-ebm", "dpboost"].contains(&l.as_str()),
                "{l}"
            );
        }
    }
}

/// The list is the prior's order, cut to one learner unless each of the
/// two best would get a share of `n * epsilon` of at least
/// `SELECTION_PAYS` (1,000,000); a pure function of the public facts.
#[test]
fn candidate_rule() {
    let prior_first = |f: &PublicFacts, b: Budget| -> Vec<String> {
        prior::ranking(f, b)
            .iter()
            .filter(|l| *l != "lazybb" || f.task == Task::Binary)
            .take(2)
            .cloned()
            .collect()
    };
    for task in [Task::Binary, REGRESSION] {
        for delta in [0.0, 1e-6] {
            // 2,000,000 x 1 / 2 = 1,000,000: selection, exactly at the boundary.
            let at = shaped(2_000_000, task, 6, 8);
            assert_eq!(
                labels_for(&at, budget(1.0, delta)),
                prior_first(&at, budget(1.0, delta))
            );
            assert_eq!(labels_for(&at, budget(1.0, delta)).len(), 2);
            let below = budget(1.0f64.next_down(), delta);
            assert_eq!(labels_for(&at, below), prior_first(&at, below)[..1]);
        }
    }
    // Regression never lists LazyBB.
    assert!(!labels(REGRESSION, budget(5.0, 0.0)).contains(&"lazybb"));
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
/// candidates at epsilon 100 run with 50 each and the ledger is charged
/// 100; with delta, two candidates at half each, DP-EBM takes the whole delta.
#[test]
fn charge_is_the_theorem_total() {
    let spec = AlgorithmSpec::Auto(AutoSpec::default());
    let plan = spec
        .plan(budget(100.0, 0.0), facts(32_561, Task::Binary))
        .unwrap();
    assert_eq!(plan.cost, PrivacyCost::Pure { epsilon: 100.0 });
    assert_eq!(plan.cost.charge(), budget(100.0, 0.0));
    let noise = plan.noise();
    let cands = noise["candidates"].as_array().unwrap();
    assert_eq!(cands.len(), 2);
    for c in cands {
        assert_eq!(c["epsilon"], 50.0);
        assert_eq!(c["delta"], 0.0);
    }
    // Each candidate is planned on the training part only.
    assert_eq!(noise["n_validation"], 3256);
    assert_eq!(noise["n_train"], 32_561 - 3256);
    assert_eq!(cands[0]["noise"]["n_rows"], 32_561 - 3256);

    let approx = spec
        .plan(budget(90.0, 1e-6), facts(32_561, Task::Binary))
        .unwrap();
    assert_eq!(
        approx.cost,
        PrivacyCost::Approx {
            epsilon: 90.0,
            delta: 1e-6
        }
    );
    // Adult's shape at 90 with a delta: DP-EBM and dp-linear (the prior's
    // two best there); both use a delta alone, so each takes half of it
    // (rounded down so the halves sum to at most the job's).
    let noise = approx.noise();
    let cands = noise["candidates"].as_array().unwrap();
    let labels: Vec<&str> = cands.iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["dp-ebm", "dp-linear"]);
    for c in cands {
        let d = c["delta"].as_f64().unwrap();
        assert!(d > 0.0 && d <= 5e-7 && 5e-7 - d < 1e-21, "{d}");
    }

    // One candidate (3,341 x 1 / 2 is below 1,000,000): it takes every row
    // and the budget.
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
        .plan(budget(100.0, 0.0), facts(32_561, Task::Binary))
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
    // 100,000 x 20 / 2 = 1,000,000: two candidates, so a validation part.
    let noise = spec
        .plan(budget(20.0, 1e-6), facts(100_000, REGRESSION))
        .unwrap()
        .noise();
    assert_eq!(noise["n_validation"], 30_000);
    assert_eq!(noise["n_train"], 70_000);
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
    // Too few rows to split when selection runs (1 x 4e6 / 2 >= 1e6).
    let e = plan(None, budget(4e6, 0.0), facts(1, Task::Binary)).unwrap_err();
    assert!(e.to_string().contains("row"), "{e}");
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

/// Mushroom, first four fifths train, pure epsilon = 400 in total (large
/// enough for selection: 5,199 x 400 / 2 >= 1,000,000), seeded: the
/// winner is on the list, the file says so and round-trips, the statement
/// states the total, and the held-out accuracy is well above the majority
/// class (0.52) and the single 1-Rule (0.89), with a margin.
#[test]
fn mushroom_end_to_end() {
    let (encoder, all) = shipped("mushroom", "mushroom.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..all.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (all.subset(&train_rows), all.subset(&test_rows));
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(
            budget(400.0, 0.0),
            PublicFacts::new(&encoder, train.n_rows()),
        )
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
    assert_eq!(epsilon, 200.0);
    assert!(value > 0.85, "{value}");
    let privacy = model.privacy_json();
    assert_eq!(privacy["epsilon"], 400.0);
    assert_eq!(privacy["delta"], 0.0);
    assert_eq!(privacy["winner"]["epsilon"], 200.0);
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

/// Mushroom at epsilon 1: selection would not pay, so the prior's first
/// learner for its key (binary, 6,499 x 1 in bucket b2, [464, 1e4), pure;
/// the categorical key has too few suite sets) runs alone on every row with the whole budget, no score is released,
/// and it predicts well (above 0.92; the majority class is 0.52).
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
    let facts = PublicFacts::new(&encoder, train.n_rows());
    assert_eq!(
        s.candidates[0].label,
        prior::ranking(&facts, budget(1.0, 0.0))[0]
    );
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

/// Abalone with delta > 0 and a budget large enough for selection (3,342 x
/// 600 / 2 >= 1,000,000): two candidates, a clipped-MSE score, RMSE on held-out
/// rows below the mean predictor's 3.22 with a margin.
#[test]
fn abalone_end_to_end() {
    let (encoder, all) = shipped("abalone", "abalone.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..all.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (all.subset(&train_rows), all.subset(&test_rows));
    let plan = AlgorithmSpec::Auto(AutoSpec::default())
        .plan(
            budget(600.0, 1e-6),
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
            Output::Class(_) | Output::Classes(_) => panic!("a regressor"),
        })
        .sum();
    let rmse = (se / test.n_rows() as f64).sqrt();
    assert!(rmse < 3.1, "{rmse}");
}

/// A multiclass job takes the prior's multiclass order (fitted on the
/// suite's multiclass sets, one entry per purity): DP-EBM first at both
/// purities since its pure-DP rule for k classes (stop 30; dp-linear was
/// first with delta = 0 before), then the learners of
/// `MULTICLASS_ORDER` the prior does not rank, filtered to the learners that
/// train k classes. At these budgets one candidate runs, and `auto`'s plan
/// is that learner's on every row with the whole budget.
#[test]
fn multiclass_runs_the_prior_multiclass_order() {
    let task = Task::Multiclass { k: 7 };
    for (b, first) in [
        (budget(0.1, 0.0), "dp-ebm"),
        (budget(1.0, 0.0), "dp-ebm"),
        (budget(1.0, 1e-6), "dp-ebm"),
        (budget(5.0, 1e-6), "dp-ebm"),
    ] {
        assert_eq!(labels(task, b), [first], "{b:?}");
        let auto = AlgorithmSpec::Auto(AutoSpec::default())
            .plan(b, facts(32_561, task))
            .unwrap();
        let alone = super::spec_of(first)
            .unwrap()
            .1
            .plan(b, facts(32_561, task))
            .unwrap();
        assert_eq!(auto.cost, alone.cost, "{b:?}");
    }
    // Budgets large enough for selection take the two best.
    assert_eq!(labels(task, budget(200.0, 1e-6)), ["dp-ebm", "dp-linear"]);
    for label in super::MULTICLASS_ORDER {
        assert!(super::spec_of(label).is_some(), "{label}");
    }
}

/// The multiclass order: the prior's ranking first, then the fixed order's
/// other learners; a prior without multiclass entries gives the fixed
/// order.
#[test]
fn the_multiclass_order_appends_what_the_prior_does_not_rank() {
    let fitted = vec!["dp-ebm".to_string(), "dp-linear".to_string()];
    assert_eq!(
        super::multiclass_order(&fitted),
        ["dp-ebm", "dp-linear", "lazybb", "dpboost"]
    );
    assert_eq!(super::multiclass_order(&[]), super::MULTICLASS_ORDER);
    let entries = [prior::Entry {
        task: Some("multiclass".into()),
        kind: None,
        bucket: None,
        pure: false,
        ranking: vec!["dp-ebm".into()],
    }];
    assert_eq!(
        prior::multiclass_ranking_in(&entries, budget(1.0, 1e-6)),
        ["dp-ebm"]
    );
    assert!(prior::multiclass_ranking_in(&entries, budget(1.0, 0.0)).is_empty());
    for delta in [0.0, 1e-6] {
        assert!(
            !prior::multiclass_ranking(budget(1.0, delta)).is_empty(),
            "the shipped prior has a multiclass entry at delta {delta}"
        );
    }
}
