//! LazyBB's vote threshold (`super::vote_threshold`, issue 25): the grid and
//! the scores by hand, the release at the planned report-noisy-max scale, the
//! plan's budget split, the model file, and a vote without signal brought
//! back to the majority class.

use super::boost::Ensemble;
use super::hypothesis::Hypothesis;
use super::tests::dataset;
use super::vote_threshold::{
    VoteThresholdPlan, choose_offset, default_share, grid, offset_of, scores,
};
use crate::data::{Dataset, Task};
use crate::learn::test_no_signal::no_signal;
use crate::learn::{AlgorithmSpec, LazyBbModel, LazyBbSpec, Model, PublicFacts};
use crate::privacy::testutil::{chi_square_p_value, rnm_laplace_probabilities};
use crate::privacy::{Budget, NoiseRng};

/// Six rows whose votes under the three stumps "literal 0", "literal 1",
/// "literal 2" are -3, -1, 1, 3, 1, -1 (each true literal +1, each false
/// one -1), with labels F, F, T, T, F, T; `copies` times over.
fn six_rows(copies: usize) -> (Ensemble, Dataset) {
    let rows: [(&[u32], bool); 6] = [
        (&[], false),
        (&[0], false),
        (&[0, 1], true),
        (&[0, 1, 2], true),
        (&[1, 2], false),
        (&[2], true),
    ];
    let all: Vec<(&[u32], bool)> = (0..copies).flat_map(|_| rows).collect();
    let data = dataset(3, &all);
    let hypotheses = (0..3)
        .map(|literal| Hypothesis::Literal {
            literal,
            negated: false,
        })
        .collect();
    let ensemble = Ensemble {
        hypotheses,
        calibration: None,
        n: data.n_rows(),
    };
    (ensemble, data)
}

/// tau = 3: the candidates are -4.5, -3.5, ..., 4.5 (2 tau + 4 = 10); the
/// offset of g is -(g + 1/2), and `v + offset >= 0` exactly when `v > g`.
#[test]
fn grid_and_offsets_by_hand() {
    let g = grid(3);
    assert_eq!(g.len(), 10);
    assert_eq!((g[0], g[9]), (-4.5, 4.5));
    assert_eq!(
        g.iter().map(|&g| offset_of(g)).collect::<Vec<_>>(),
        vec![4, 3, 2, 1, 0, -1, -2, -3, -4, -5]
    );
    for &g in &g {
        for v in [-3, -1, 1, 3] {
            assert_eq!(f64::from(v) > g, v + offset_of(g) >= 0, "v {v}, g {g}");
        }
    }
}

/// The scores of the six rows by hand (votes -3, -1, 1, 3, 1, -1; labels
/// F, F, T, T, F, T): below every vote all six are predicted positive, 3
/// correct; above -3 the first row turns negative (correct), 4; above -1
/// rows 2 and 6 turn negative (one right, one wrong), 4; above 1 rows 3
/// and 5 (one each), 4; above 3 every row is negative, 3.
#[test]
fn scores_by_hand() {
    let (ensemble, data) = six_rows(1);
    let votes = super::model::Predictor::new(&ensemble.hypotheses, 3).vote_sums(&data);
    assert_eq!(votes, vec![-3, -1, 1, 3, 1, -1]);
    assert_eq!(
        scores(&votes, &data, 3).unwrap(),
        vec![3.0, 3.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 3.0, 3.0]
    );
}

/// The plan by hand: sensitivity 1, scale 2 (1 + n 2^-49) / (epsilon - 2
/// GRID_EPSILON), 2 tau + 4 candidates; an epsilon the grid cannot carry
/// is refused before any charge, naming epsilon.
#[test]
fn plan_by_hand() {
    let p = VoteThresholdPlan::new(0.2, 1.0, 120, 3).unwrap();
    assert!(p.scale >= 10.0 && p.scale / 10.0 - 1.0 < 1e-6, "{p:?}");
    assert_eq!((p.candidates, p.fit_epsilon), (10, 1.0));
    let err = VoteThresholdPlan::new(1e-12, 1.0, 120, 3).unwrap_err();
    assert!(err.to_string().contains("epsilon"), "{err}");
}

/// The release follows report-noisy-max with the plan's Laplace scale on
/// the scores: chi-square against the exact probabilities, and the same
/// frequencies reject a scale off by a factor 2 (what a wrong sensitivity
/// or share would give). Twenty copies of the six rows: scores 60 and 80,
/// scale 10 at epsilon 0.2.
#[test]
fn release_follows_report_noisy_max_at_the_planned_scale() {
    let (ensemble, data) = six_rows(20);
    let plan = VoteThresholdPlan::new(0.2, 1.0, data.n_rows(), 3).unwrap();
    let votes = super::model::Predictor::new(&ensemble.hypotheses, 3).vote_sums(&data);
    let utility = scores(&votes, &data, 3).unwrap();
    assert_eq!(utility[0], 60.0);
    assert_eq!(utility[4], 80.0);
    let mut rng = NoiseRng::seeded(25);
    let mut wins = [0u64; 10];
    for _ in 0..40_000 {
        let offset = choose_offset(&ensemble, &data, &plan, &mut rng).unwrap();
        wins[(4 - offset) as usize] += 1;
    }
    let expected = rnm_laplace_probabilities(&utility, plan.scale);
    let p_value = chi_square_p_value(&wins, &expected);
    assert!(p_value > 1e-4, "p = {p_value}, {wins:?} vs {expected:?}");
    for wrong in [plan.scale / 2.0, plan.scale * 2.0] {
        let expected = rnm_laplace_probabilities(&utility, wrong);
        assert!(chi_square_p_value(&wins, &expected) < 1e-10, "{wrong}");
    }
}

/// The default share by hand: the largest of 0.025, 0.05, 0.1, 0.2 at most
/// 100 / (n epsilon), else 0.025.
#[test]
fn default_share_by_hand() {
    // ionosphere's 280 training rows at epsilon 1: 0.357 -> 0.2.
    assert_eq!(default_share(280, 1.0), 0.2);
    // pima's 614: 0.163 -> 0.1; spambase's 3,680: 0.027 -> 0.025, and at
    // epsilon 0.5, 0.054 -> 0.05.
    assert_eq!(default_share(614, 1.0), 0.1);
    assert_eq!(default_share(3680, 1.0), 0.025);
    assert_eq!(default_share(3680, 0.5), 0.05);
    // Adult's 32,561 at epsilon 1 and 0.4: below every share -> 0.025.
    assert_eq!(default_share(32_561, 1.0), 0.025);
    assert_eq!(default_share(32_561, 0.4), 0.025);
    assert_eq!(default_share(100, 0.1), 0.2);
    assert_eq!(default_share(0, 1.0), 0.2);
}

/// A binary plan spends its share of epsilon on the threshold and the rest
/// on the rounds (with all of delta), charges the whole epsilon, and keeps
/// the rounds of the whole epsilon's default rule (15 at epsilon 1). On 500
/// rows at epsilon 1 the share is 0.2 (100 / 500): the rounds' epsilon is
/// 0.8 / 15 each at delta 0. A share of 0 turns the threshold off.
#[test]
fn the_plan_gives_the_threshold_its_share() {
    let facts = PublicFacts::adult_shaped(500, Task::Binary);
    for delta in [0.0, 1e-6] {
        let total = Budget::new(1.0, delta).unwrap();
        let plan = AlgorithmSpec::Lazybb(LazyBbSpec::default())
            .plan(total, facts)
            .unwrap();
        // 15 rounds: basic composition, pure whatever delta was offered.
        assert_eq!(plan.cost.charge(), Budget::new(1.0, 0.0).unwrap());
        let AlgorithmSpec::Lazybb(resolved) = plan.resolved else {
            panic!("a LazyBB plan")
        };
        assert_eq!(resolved.tau, Some(15));
        assert_eq!(resolved.vote_threshold_share, Some(0.2));
        let noise = plan.noise();
        let threshold = noise["epsilon_vote_threshold"].as_f64().unwrap();
        assert!((threshold - 0.2).abs() < 1e-15, "{noise}");
        assert_eq!(noise["epsilon_per_fit"].as_f64(), Some(1.0));
        let per_round = noise["epsilon_per_round"].as_f64().unwrap();
        if delta == 0.0 {
            assert!(
                (per_round / (0.8 / 15.0) - 1.0).abs() < 1e-12,
                "{per_round}"
            );
        } else {
            // Advanced composition of the rounds' (0.8, 1e-6) or basic,
            // whichever is larger.
            assert!(per_round >= 0.8 / 15.0 - 1e-15);
        }
        assert!(
            noise["mechanism"]
                .as_str()
                .unwrap()
                .contains("vote thresholds")
        );
    }
    let off = AlgorithmSpec::Lazybb(LazyBbSpec {
        vote_threshold_share: Some(0.0),
        ..LazyBbSpec::default()
    })
    .plan(Budget::new(1.0, 0.0).unwrap(), facts)
    .unwrap()
    .noise();
    assert!(off["epsilon_vote_threshold"].is_null(), "{off}");
    assert!((off["epsilon_per_round"].as_f64().unwrap() * 15.0 - 1.0).abs() < 1e-12);
    for bad in [-0.1, 0.6, f64::NAN] {
        let err = AlgorithmSpec::Lazybb(LazyBbSpec {
            vote_threshold_share: Some(bad),
            ..LazyBbSpec::default()
        })
        .plan(Budget::new(1.0, 0.0).unwrap(), facts)
        .unwrap_err();
        assert!(err.to_string().contains("vote_threshold_share"), "{err}");
    }
    // k classes: no threshold (one-vs-rest shares are not a binary vote),
    // and a positive share is refused.
    let multiclass = PublicFacts::adult_shaped(500, Task::Multiclass { k: 3 });
    let plan = AlgorithmSpec::Lazybb(LazyBbSpec::default())
        .plan(Budget::new(1.0, 0.0).unwrap(), multiclass)
        .unwrap();
    assert!(plan.noise()["epsilon_vote_threshold"].is_null());
    assert!(
        AlgorithmSpec::Lazybb(LazyBbSpec {
            vote_threshold_share: Some(0.1),
            ..LazyBbSpec::default()
        })
        .plan(Budget::new(1.0, 0.0).unwrap(), multiclass)
        .is_err()
    );
}

fn training_accuracy(model: &LazyBbModel, data: &Dataset) -> f64 {
    let labels = data.labels.as_ref().unwrap();
    let labels: Vec<bool> = (0..data.n_rows()).map(|i| labels.get(i)).collect();
    crate::learn::metrics::accuracy(&model.predictor().vote_sums(data), &labels)
}

/// Without signal at epsilon 1, the rounds' vote is a coin flip; the
/// threshold brings the model back to the majority class (0.7 of the rows)
/// up to the selection's noise: over 20 seeded fits the mean training
/// accuracy is at least 0.66, while the same fits read without their
/// offset stay below 0.62. The statement charges the whole epsilon.
#[test]
fn a_vote_without_signal_predicts_the_majority() {
    let (encoder, data) = no_signal();
    let total = Budget::new(1.0, 0.0).unwrap();
    let facts = PublicFacts::new(&encoder, data.n_rows());
    let plan = AlgorithmSpec::Lazybb(LazyBbSpec::default())
        .plan(total, facts)
        .unwrap();
    let (mut with, mut without) = (0.0, 0.0);
    let fits = 20;
    for seed in 0..fits {
        let mut rng = NoiseRng::seeded(1000 + seed);
        let Model::LazyBb(model) = plan.fit(&data, &encoder, &mut rng, &mut |_| true).unwrap()
        else {
            panic!("a LazyBB model")
        };
        assert_eq!(model.privacy.epsilon, 1.0);
        // 100 / 400 rows: the share is 0.2.
        let t = model.privacy.vote_threshold.unwrap();
        assert!((t.epsilon - 0.2).abs() < 1e-15);
        with += training_accuracy(&model, &data);
        let mut bare = model.clone();
        bare.vote_offset = 0;
        without += training_accuracy(&bare, &data);
    }
    let (with, without) = (with / fits as f64, without / fits as f64);
    assert!(with >= 0.66, "with the threshold {with}");
    assert!(without < 0.62, "without {without}");
}

/// The offset is written, read back and checked: a model's predictions use
/// it (vote sums moved by it, the score still in [-1, 1]); an offset outside
/// the candidates' [-(tau + 2), tau + 1] is refused; a file without it
/// (older, or multiclass) reads as 0.
#[test]
fn vote_offset_round_trips_and_is_checked() {
    let (encoder, data) = no_signal();
    let facts = PublicFacts::new(&encoder, data.n_rows());
    let plan = AlgorithmSpec::Lazybb(LazyBbSpec::default())
        .plan(Budget::new(1.0, 0.0).unwrap(), facts)
        .unwrap();
    let mut rng = NoiseRng::seeded(7);
    let Model::LazyBb(mut model) = plan.fit(&data, &encoder, &mut rng, &mut |_| true).unwrap()
    else {
        panic!("a LazyBB model")
    };
    model.vote_offset = -4;
    let loaded = LazyBbModel::from_json(&model.to_json()).unwrap();
    assert_eq!(loaded, model);
    let tau = model.params.tau as i32;
    let bare = super::model::Predictor::new(&model.ensemble, encoder.literals().len());
    let moved = loaded.predictor();
    for (a, b) in bare.vote_sums(&data).iter().zip(moved.vote_sums(&data)) {
        assert_eq!(a - 4, b);
        let p = moved.prediction(b);
        assert!((-1.0..=1.0).contains(&p.score), "{p:?}");
        assert_eq!(p.score, f64::from(b) / f64::from(tau + 4));
    }
    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    for bad in [tau + 2, -tau - 3] {
        value["vote_offset"] = serde_json::json!(bad);
        let err = LazyBbModel::from_json(&value.to_string()).unwrap_err();
        assert!(err.to_string().contains("vote_offset"), "{err}");
    }
    value["vote_offset"] = serde_json::json!(-tau - 2);
    assert!(LazyBbModel::from_json(&value.to_string()).is_ok());
    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    value.as_object_mut().unwrap().remove("vote_offset");
    assert_eq!(
        LazyBbModel::from_json(&value.to_string())
            .unwrap()
            .vote_offset,
        0
    );
}
