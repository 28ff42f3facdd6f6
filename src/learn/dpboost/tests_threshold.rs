//! DPBoost's decision threshold (`super::threshold`, issue 25): the plan
//! through the family (its share, the charge, the refusals), the grid, and
//! a fit without signal brought back to the majority class. The release
//! itself is the shared `learn::threshold::choose_logit`, whose selection
//! frequencies at the planned scale dp-linear's tests check
//! (`linear::tests_threshold`).

use super::DpBoostSpec;
use super::model::model_raw_all;
use super::threshold::{apply, grid};
use crate::data::{Dataset, Task};
use crate::learn::test_no_signal::{accuracy_of_logits, no_signal};
use crate::learn::threshold::{CANDIDATES, logit_scores};
use crate::learn::{AlgorithmSpec, Model, PublicFacts};
use crate::privacy::{Budget, NoiseRng};

fn training_accuracy(model: &super::DpBoostModel, data: &Dataset) -> f64 {
    accuracy_of_logits(&model_raw_all(model, data), data)
}

/// A binary plan gives the threshold its default share (0.2 on 400 rows at
/// epsilon 1: 800 / 400 >= 0.2), charges the whole epsilon and shows the
/// threshold's epsilon; the trees get the rest (the initial score's 5% is
/// of it). A share of 0 turns it off; a bad share, and a positive share for
/// k classes or a regression, are refused, naming the field.
#[test]
fn the_plan_gives_the_threshold_its_share() {
    let (encoder, data) = no_signal();
    let facts = PublicFacts::new(&encoder, data.n_rows());
    let total = Budget::new(1.0, 0.0).unwrap();
    // DPBoost is pure whatever delta is offered: the threshold's split too
    // (a pure charge of the whole epsilon, no rho).
    for offered in [total, Budget::new(1.0, 1e-6).unwrap()] {
        let plan = AlgorithmSpec::Dpboost(DpBoostSpec::default())
            .plan(offered, facts)
            .unwrap();
        assert_eq!(
            plan.cost,
            crate::privacy::PrivacyCost::Pure { epsilon: 1.0 }
        );
        assert_eq!(plan.noise()["epsilon_threshold"].as_f64(), Some(0.2));
    }
    let plan = AlgorithmSpec::Dpboost(DpBoostSpec::default())
        .plan(total, facts)
        .unwrap();
    assert_eq!(plan.cost.charge(), total);
    assert!(plan.defaults_used);
    let AlgorithmSpec::Dpboost(resolved) = plan.resolved else {
        panic!("a DPBoost plan")
    };
    assert_eq!(resolved.threshold_share, Some(0.2));
    let noise = plan.noise();
    assert_eq!(noise["epsilon_threshold"].as_f64(), Some(0.2), "{noise}");
    let init = noise["epsilon_init"].as_f64().unwrap();
    assert!((init - 0.05 * 0.8).abs() < 1e-15, "{noise}");
    let off = AlgorithmSpec::Dpboost(DpBoostSpec {
        threshold_share: Some(0.0),
        ..DpBoostSpec::default()
    })
    .plan(total, facts)
    .unwrap()
    .noise();
    assert!(off["epsilon_threshold"].is_null(), "{off}");
    for bad in [-0.1, 0.6, f64::NAN] {
        let err = AlgorithmSpec::Dpboost(DpBoostSpec {
            threshold_share: Some(bad),
            ..DpBoostSpec::default()
        })
        .plan(total, facts)
        .unwrap_err();
        assert!(err.to_string().contains("threshold_share"), "{err}");
    }
    for task in [
        Task::Multiclass { k: 3 },
        Task::Regression { min: 0.0, max: 1.0 },
    ] {
        let other = PublicFacts::adult_shaped(5000, task);
        let plan = AlgorithmSpec::Dpboost(DpBoostSpec::default())
            .plan(total, other)
            .unwrap();
        assert!(plan.noise()["epsilon_threshold"].is_null());
        let err = AlgorithmSpec::Dpboost(DpBoostSpec {
            threshold_share: Some(0.1),
            ..DpBoostSpec::default()
        })
        .plan(total, other)
        .unwrap_err();
        assert!(err.to_string().contains("threshold_share"), "{err}");
    }
}

/// Without signal, at epsilon 1, the fitted model with its threshold
/// predicts about the majority class (0.7 of the rows): over 20 seeded fits
/// the mean training accuracy is at least 0.66. The grid brackets every
/// score (the first candidate classifies the 120 positive rows right, the
/// last the 280 negative ones). When the initial score is moved so that
/// every row's score is at least 3 (every row predicted positive: 0.3), the
/// threshold brings it back. The statement charges the whole epsilon and
/// records the logit.
#[test]
fn a_fit_without_signal_predicts_the_majority() {
    let (encoder, data) = no_signal();
    let facts = PublicFacts::new(&encoder, data.n_rows());
    let plan = AlgorithmSpec::Dpboost(DpBoostSpec::default())
        .plan(Budget::new(1.0, 0.0).unwrap(), facts)
        .unwrap();
    let (mut with, mut shifted) = (0.0, 0.0);
    let fits = 20;
    for seed in 0..fits {
        let mut rng = NoiseRng::seeded(3000 + seed);
        let Model::DpBoost(file) = plan.fit(&data, &encoder, &mut rng, &mut |_| true).unwrap()
        else {
            panic!("a DPBoost model")
        };
        assert_eq!(file.privacy.epsilon, 1.0);
        let t = file.privacy.threshold.unwrap();
        assert_eq!(t.plan.epsilon, 0.2);
        assert!(file.privacy.budget_split.contains("decision threshold"));
        let g = grid(&file.model);
        assert_eq!(g.len(), CANDIDATES);
        let raw = model_raw_all(&file.model, &data);
        let utility = logit_scores(&raw, &data, &g).unwrap();
        assert_eq!((utility[0], utility[CANDIDATES - 1]), (120.0, 280.0));
        with += accuracy_of_logits(&raw, &data);
        // 3 logits above the point where every row is predicted positive.
        let lowest = raw.iter().copied().fold(f64::INFINITY, f64::min);
        let mut off = file.model.clone();
        off.initial_score += 3.0 - lowest;
        assert_eq!(training_accuracy(&off, &data), 0.3);
        apply(&mut off, &data, &t.plan, &mut rng).unwrap();
        shifted += training_accuracy(&off, &data);
    }
    let (with, shifted) = (with / fits as f64, shifted / fits as f64);
    assert!(with >= 0.66, "with the threshold {with}");
    assert!(
        shifted >= 0.66,
        "every score moved to 3 or more, then the threshold: {shifted}"
    );
}
