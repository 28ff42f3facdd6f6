//! LazyBB end to end on small synthetic data: the noise-free learner finds the
//! signal, the private learner's first choice follows Laplace report-noisy-max with the
//! calibrated eta, cancellation stops between rounds, models round-trip.

use super::hypothesis::Hypothesis;
use super::one_rule::OneRule;
use super::*;
use crate::data::{
    BitMatrix, BitMatrixBuilder, BitVec, Dataset, Encoder, LabelMode, Schema, read_csv,
};
use crate::learn::*;
use crate::privacy::testutil::{chi_square_p_value, rnm_laplace_probabilities};
use crate::privacy::{Budget, NoiseRng};

/// Rows given as lists of active literals, with labels.
pub(super) fn dataset(d: usize, rows: &[(&[u32], bool)]) -> Dataset {
    let mut builder = BitMatrixBuilder::new(d);
    for (active, _) in rows {
        builder.push_row(active);
    }
    let labels: Vec<bool> = rows.iter().map(|r| r.1).collect();
    Dataset {
        features: builder.finish(),
        labels: Some(BitVec::from_bools(&labels)),
        targets: None,
        classes: None,
        one_hot_groups: vec![],
    }
}

/// A pseudo-random dataset: label = literal 0, except every 7th row flipped;
/// literals 1..d are noise (deterministic, no RNG needed).
fn synthetic(n: usize, d: usize) -> Dataset {
    let mut rows: Vec<(Vec<u32>, bool)> = Vec::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..n {
        let mut active = Vec::new();
        for j in 0..d as u32 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state.is_multiple_of(2) {
                active.push(j);
            }
        }
        let signal = active.first() == Some(&0);
        rows.push((active, signal != (i % 7 == 0)));
    }
    let borrowed: Vec<(&[u32], bool)> = rows.iter().map(|(a, y)| (a.as_slice(), *y)).collect();
    dataset(d, &borrowed)
}

fn params(tau: u32, privacy: PrivacyMode) -> ValidLazyBbParams {
    LazyBbParams {
        tau,
        lambda: 0.3,
        kappa: 0.5,
        weak_learner: WeakLearnerKind::OneRule,
        privacy,
    }
    .check()
    .unwrap()
}

/// Brute-force weighted errors of all 2d + 2 candidates under weights p.
fn brute_force_errors(data: &Dataset, p: &[f64]) -> Vec<f64> {
    let d = data.features.n_cols();
    let labels = data.labels.as_ref().unwrap();
    (0..2 * d + 2)
        .map(|c| {
            let h = Hypothesis::from_candidate_index(c, d);
            (0..data.n_rows())
                .map(|i| {
                    let prediction = h.evaluate(|l| data.features.get(i, l as usize));
                    if prediction != labels.get(i) {
                        p[i]
                    } else {
                        0.0
                    }
                })
                .sum()
        })
        .collect()
}

#[test]
fn errors_match_brute_force() {
    let data = synthetic(200, 9);
    let labels = data.labels.as_ref().unwrap();
    // Non-uniform weights.
    let raw: Vec<f64> = (0..200).map(|i| 1.0 + (i % 5) as f64).collect();
    let total: f64 = raw.iter().sum();
    let p: Vec<f64> = raw.iter().map(|w| w / total).collect();
    let signed: Vec<f64> = (0..200)
        .map(|i| if labels.get(i) { -p[i] } else { p[i] })
        .collect();
    let p_positive: f64 = (0..200).filter(|&i| labels.get(i)).map(|i| p[i]).sum();
    let mut learner = OneRule::new(&data.features, &[]).unwrap();
    learner.compute_errors_per_row(&signed, p_positive);
    for (got, want) in learner.errors().iter().zip(brute_force_errors(&data, &p)) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
}

#[test]
fn noise_free_lazybb_finds_the_signal() {
    let data = synthetic(700, 6);
    let ensemble = train(
        &data,
        &params(5, PrivacyMode::NonPrivate),
        None,
        &mut |_| true,
    )
    .unwrap();
    assert_eq!(ensemble.hypotheses.len(), 5);
    assert_eq!(
        ensemble.hypotheses[0],
        Hypothesis::Literal {
            literal: 0,
            negated: false
        }
    );
    let predictor = Predictor::new(&ensemble.hypotheses, 6);
    let labels = data.labels.as_ref().unwrap();
    let labels: Vec<bool> = (0..700).map(|i| labels.get(i)).collect();
    let accuracy = metrics::accuracy(&predictor.vote_sums(&data), &labels);
    // 1 row in 7 is flipped, so 6/7 = 0.857 is the best possible.
    assert!(accuracy > 0.85, "{accuracy}");
}

/// The first round sees uniform weights, so the chosen candidate must follow
/// report-noisy-max on `-err` with Laplace scale `1 / eta`,
/// eta = epsilon kappa n / (4 tau). A factor-2 error in eta fails this test,
/// and so does the exponential mechanism's `exp(-eta err) / Z` (the second
/// half): the selection really is Laplace report-noisy-max.
#[test]
fn first_choice_follows_calibrated_report_noisy_max() {
    let n = 48;
    let data = synthetic(n, 3);
    let budget = Budget::new(1.0, 0.0).unwrap();
    let valid = params(1, PrivacyMode::Private(budget));
    let eta = valid.calibrate(n).unwrap().unwrap().eta;
    // The paper's eta, less the exact sampler's grid and float margin
    // (privacy::calibration::one_rule_eta): a relative change below 1e-4.
    assert!((eta / (1.0 * 0.5 * 48.0 / 4.0) - 1.0).abs() < 1e-4);
    let errors = brute_force_errors(&data, &vec![1.0 / n as f64; n]);
    let scores: Vec<f64> = errors.iter().map(|e| -e).collect();
    let expected = rnm_laplace_probabilities(&scores, 1.0 / eta);
    let doubled = rnm_laplace_probabilities(&scores, 0.5 / eta);
    let z: f64 = errors.iter().map(|e| (-eta * e).exp()).sum();
    let gibbs: Vec<f64> = errors.iter().map(|e| (-eta * e).exp() / z).collect();

    let mut rng = NoiseRng::seeded(21);
    let mut counts = vec![0u64; errors.len()];
    for _ in 0..40_000 {
        let e = train(&data, &valid, Some(&mut rng), &mut |_| true).unwrap();
        let index = match &e.hypotheses[0] {
            Hypothesis::Literal { literal, negated } => {
                *literal as usize + if *negated { 3 } else { 0 }
            }
            Hypothesis::Constant { positive } => {
                if *positive {
                    6
                } else {
                    7
                }
            }
            Hypothesis::Tree { .. } => unreachable!("1-Rule training makes no trees"),
        };
        counts[index] += 1;
    }
    assert!(
        chi_square_p_value(&counts, &expected) > 1e-4,
        "{counts:?} vs {expected:?}"
    );
    assert!(chi_square_p_value(&counts, &doubled) < 1e-10);
    assert!(chi_square_p_value(&counts, &gibbs) < 1e-10);
}

#[test]
fn private_training_needs_a_noise_source_and_labels() {
    let data = synthetic(50, 3);
    let valid = params(3, PrivacyMode::Private(Budget::new(1.0, 0.0).unwrap()));
    assert!(matches!(
        train(&data, &valid, None, &mut |_| true),
        Err(LearnError::NoNoiseSource)
    ));
    let unlabelled = Dataset {
        labels: None,
        ..data
    };
    let mut rng = NoiseRng::seeded(1);
    assert!(matches!(
        train(&unlabelled, &valid, Some(&mut rng), &mut |_| true),
        Err(LearnError::NoLabels)
    ));
}

#[test]
fn cancellation_stops_between_rounds() {
    let data = synthetic(100, 4);
    let valid = params(9, PrivacyMode::Private(Budget::new(1.0, 0.0).unwrap()));
    let mut rng = NoiseRng::seeded(2);
    let mut seen = Vec::new();
    let result = train(&data, &valid, Some(&mut rng), &mut |done| {
        seen.push(done);
        done < 3
    });
    assert!(matches!(result, Err(LearnError::Cancelled)));
    assert_eq!(seen, vec![1, 2, 3]);
}

/// Extreme parameters (lambda tau far beyond exp's range) stay finite.
#[test]
fn many_rounds_with_a_fast_rate_do_not_overflow() {
    let data = synthetic(300, 5);
    let valid = LazyBbParams {
        tau: 3_001,
        lambda: 0.99,
        kappa: 0.05,
        weak_learner: WeakLearnerKind::OneRule,
        privacy: PrivacyMode::Private(Budget::new(10.0, 0.0).unwrap()),
    }
    .check()
    .unwrap();
    let mut rng = NoiseRng::seeded(3);
    let e = train(&data, &valid, Some(&mut rng), &mut |_| true).unwrap();
    assert_eq!(e.hypotheses.len(), 3_001);
}

const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "yes", "negative": "no"},
  "columns": [
    {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]},
    {"name": "size", "type": "numeric", "min": 0, "max": 10, "bins": 2}
  ]
}"#;

fn small_model() -> (LazyBbModel, Dataset) {
    let schema = Schema::from_json(SCHEMA).unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let csv = "colour,size,y\nred,1,yes\nred,2,yes\ngreen,8,no\nblue,9,no\nred,7,yes\ngreen,3,no\n";
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    let valid = params(7, PrivacyMode::Private(Budget::new(2.0, 0.0).unwrap()));
    let mut rng = NoiseRng::seeded(4);
    let ensemble = train(&data, &valid, Some(&mut rng), &mut |_| true).unwrap();
    (
        LazyBbModel::new(&schema, &encoder, &valid, false, &ensemble).unwrap(),
        data,
    )
}

#[test]
fn model_round_trips_and_predicts_like_its_ensemble() {
    let (model, data) = small_model();
    let loaded = LazyBbModel::from_json(&model.to_json()).unwrap();
    assert_eq!(loaded, model);
    let predictor = loaded.predictor();
    let sums = predictor.vote_sums(&data);
    for (i, sum) in sums.iter().enumerate() {
        let direct: i32 = model
            .ensemble
            .iter()
            .map(|h| {
                if h.evaluate(|l| data.features.get(i, l as usize)) {
                    1
                } else {
                    -1
                }
            })
            .sum();
        assert_eq!(*sum, direct);
        assert_eq!(predictor.vote_sum(&data.features.row_active(i)), direct);
    }
    let statement = &model.privacy;
    assert_eq!(
        (statement.epsilon, statement.delta, statement.n_rows),
        (2.0, 0.0, 6)
    );
    assert!((statement.eta / (2.0 * 0.5 * 6.0 / (4.0 * 7.0)) - 1.0).abs() < 1e-4);
}

#[test]
fn model_files_of_another_version_or_inconsistent_are_refused() {
    let (model, _) = small_model();
    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    value["version"] = serde_json::json!(2);
    let error = LazyBbModel::from_json(&value.to_string())
        .unwrap_err()
        .to_string();
    assert!(error.contains("version 2"), "{error}");

    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    value["format"] = serde_json::json!("something-else");
    assert!(LazyBbModel::from_json(&value.to_string()).is_err());

    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    value["ensemble"][0] = serde_json::json!({"kind": "literal", "literal": 999, "negated": false});
    assert!(
        LazyBbModel::from_json(&value.to_string())
            .unwrap_err()
            .to_string()
            .contains("999")
    );

    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    value["literals"][0] = serde_json::json!("tampered");
    assert!(LazyBbModel::from_json(&value.to_string()).is_err());

    assert!(LazyBbModel::from_json("").is_err());
    assert!(LazyBbModel::from_json("{}").is_err());
}

#[test]
fn inspection_counts_votes_and_features() {
    let (model, _) = small_model();
    let encoder = model.encoder().unwrap();
    let inspection = inspect(&model, &encoder);
    let total: i32 = inspection
        .vote_table
        .iter()
        .map(|r| r.votes.abs())
        .sum::<i32>()
        + inspection.constant_votes.abs();
    assert!(total <= 7);
    assert!(inspection.features_used.len() <= 2);
    for pair in inspection.vote_table.windows(2) {
        assert!(pair[0].votes.abs() >= pair[1].votes.abs());
    }
    assert!(inspection.to_text().contains("Features used"));
}

fn top_down(tau: u32, t: u32, privacy: PrivacyMode) -> ValidLazyBbParams {
    LazyBbParams {
        tau,
        lambda: 0.3,
        kappa: 0.5,
        weak_learner: WeakLearnerKind::TopDown {
            internal_nodes: t,
            bound: SensitivityBound::Proven,
        },
        privacy,
    }
    .check()
    .unwrap()
}

#[test]
fn noise_free_top_down_finds_the_signal() {
    let data = synthetic(700, 6);
    let ensemble = train(
        &data,
        &top_down(3, 2, PrivacyMode::NonPrivate),
        None,
        &mut |_| true,
    )
    .unwrap();
    let Hypothesis::Tree { nodes } = &ensemble.hypotheses[0] else {
        panic!("not a tree")
    };
    assert!(matches!(
        nodes[0],
        super::hypothesis::TreeNode::Split { literal: 0, .. }
    ));
    let predictor = Predictor::new(&ensemble.hypotheses, 6);
    let labels = data.labels.as_ref().unwrap();
    let labels: Vec<bool> = (0..700).map(|i| labels.get(i)).collect();
    assert!(metrics::accuracy(&predictor.vote_sums(&data), &labels) > 0.85);
}

/// With t = 1 the first split of the first tree is report-noisy-max on the
/// improvements with Laplace scale 1 / eta, eta = epsilon kappa n / (64 tau t):
/// checked against the brute-force improvements, and a 4x eta (the paper's
/// bound) is rejected.
#[test]
fn first_split_follows_the_proven_calibration() {
    let n = 64;
    let data = synthetic(n, 3);
    let valid = top_down(1, 1, PrivacyMode::Private(Budget::new(4.0, 0.0).unwrap()));
    let c = valid.calibrate(n).unwrap().unwrap();
    // The proven eps kappa n / (64 tau t), less the float margin and grids.
    assert!(
        (c.eta / (4.0 * 0.5 * 64.0 / 64.0) - 1.0).abs() < 1e-4,
        "{}",
        c.eta
    );
    assert!((c.leaf_scale.unwrap() - 1.0 / (8.0 * c.eta)).abs() < 1e-12);
    let labels = data.labels.as_ref().unwrap();
    let p = 1.0 / n as f64;
    let wg = |rows: &mut dyn Iterator<Item = usize>| {
        let (mut a, mut b) = (0.0, 0.0);
        for i in rows {
            if labels.get(i) { a += p } else { b += p }
        }
        if a + b > 0.0 {
            4.0 * a * b / (a + b)
        } else {
            0.0
        }
    };
    let im: Vec<f64> = (0..3)
        .map(|j| {
            wg(&mut (0..n))
                - wg(&mut (0..n).filter(|&i| data.features.get(i, j)))
                - wg(&mut (0..n).filter(|&i| !data.features.get(i, j)))
        })
        .collect();
    let expected = |eta: f64| rnm_laplace_probabilities(&im, 1.0 / eta);
    let mut rng = NoiseRng::seeded(31);
    let mut counts = vec![0u64; 3];
    for _ in 0..30_000 {
        let e = train(&data, &valid, Some(&mut rng), &mut |_| true).unwrap();
        let Hypothesis::Tree { nodes } = &e.hypotheses[0] else {
            panic!()
        };
        let super::hypothesis::TreeNode::Split { literal, .. } = nodes[0] else {
            panic!()
        };
        counts[literal as usize] += 1;
    }
    assert!(
        chi_square_p_value(&counts, &expected(c.eta)) > 1e-4,
        "{counts:?} {im:?}"
    );
    assert!(chi_square_p_value(&counts, &expected(4.0 * c.eta)) < 1e-10);
}

#[test]
fn top_down_models_round_trip_and_refuse_the_paper_bound() {
    let schema = Schema::from_json(SCHEMA).unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let csv = "colour,size,y\nred,1,yes\nred,2,yes\ngreen,8,no\nblue,9,no\nred,7,yes\ngreen,3,no\n";
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    let valid = top_down(5, 2, PrivacyMode::Private(Budget::new(2.0, 0.0).unwrap()));
    let mut rng = NoiseRng::seeded(5);
    let ensemble = train(&data, &valid, Some(&mut rng), &mut |_| true).unwrap();
    let model = LazyBbModel::new(&schema, &encoder, &valid, false, &ensemble).unwrap();
    assert_eq!(model.params.internal_nodes, Some(2));
    let loaded = LazyBbModel::from_json(&model.to_json()).unwrap();
    assert_eq!(loaded, model);
    let predictor = loaded.predictor();
    for (i, sum) in predictor.vote_sums(&data).iter().enumerate() {
        assert_eq!(*sum, predictor.vote_sum(&data.features.row_active(i)));
    }
    let inspection = inspect(&loaded, &encoder);
    assert_eq!(inspection.trees.len(), 5);
    assert!(inspection.to_text().contains("tree 5:"));

    // A tree whose child points backwards is refused.
    let mut value: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    value["ensemble"][0]["nodes"][0] =
        serde_json::json!({"kind": "split", "literal": 0, "if_false": 0, "if_true": 1});
    assert!(LazyBbModel::from_json(&value.to_string()).is_err());

    let paper = LazyBbParams {
        tau: 5,
        lambda: 0.3,
        kappa: 0.5,
        weak_learner: WeakLearnerKind::TopDown {
            internal_nodes: 2,
            bound: SensitivityBound::Paper,
        },
        privacy: PrivacyMode::Private(Budget::new(2.0, 0.0).unwrap()),
    }
    .check()
    .unwrap();
    let ensemble = train(&data, &paper, Some(&mut rng), &mut |_| true).unwrap();
    assert!(LazyBbModel::new(&schema, &encoder, &paper, false, &ensemble).is_err());
}

/// One input of the float-margin validation: rows in margin classes with
/// projected measures `mu`, labels, and literal columns.
struct MarginCase {
    name: &'static str,
    /// Margin class of each row (index into `mu`).
    class: Vec<usize>,
    mu: Vec<f64>,
    positive: Vec<bool>,
    columns: Vec<BitVec>,
}

impl MarginCase {
    fn n(&self) -> usize {
        self.class.len()
    }

    /// The signed weights (with the sentinel) and P+ exactly as LazyBB
    /// computes them from `mu` (`lazybb::class_weights`).
    fn float_weights(&self) -> (Vec<f64>, f64) {
        let mut count = vec![0u64; 2 * self.mu.len()];
        for (&k, &y) in self.class.iter().zip(&self.positive) {
            count[2 * k + usize::from(y)] += 1;
        }
        let mut signed_of_class = vec![0.0; count.len()];
        let p_positive = super::boost::class_weights(&count, &self.mu, &mut signed_of_class);
        let signed = self
            .class
            .iter()
            .zip(&self.positive)
            .map(|(&k, &y)| signed_of_class[2 * k + usize::from(y)])
            .chain([0.0])
            .collect();
        (signed, p_positive)
    }

    /// Exact `err(h)` of every candidate under the exactly normalised
    /// weights `p(i) = mu(i) / sum mu`, as double-doubles.
    fn exact_errors(&self) -> Vec<(f64, f64)> {
        use crate::privacy::float_reference::{Expansion, quotient};
        let mut total = Expansion::default();
        let mut positive_mass = Expansion::default();
        for (&k, &y) in self.class.iter().zip(&self.positive) {
            total.add(self.mu[k]);
            if y {
                positive_mass.add(self.mu[k]);
            }
        }
        let mut errors = Vec::new();
        // x_j errs on set rows with y = -1 and unset rows with y = +1.
        for negated in [false, true] {
            for column in &self.columns {
                let mut wrong = Expansion::default();
                for (i, (&k, &y)) in self.class.iter().zip(&self.positive).enumerate() {
                    if (column.get(i) != negated) != y {
                        wrong.add(self.mu[k]);
                    }
                }
                errors.push(quotient(&wrong, &total));
            }
        }
        let mut negative_mass = total.clone();
        for (&k, &y) in self.class.iter().zip(&self.positive) {
            if y {
                negative_mass.add(-self.mu[k]);
            }
        }
        errors.push(quotient(&negative_mass, &total)); // constant +1 errs on y = -1
        errors.push(quotient(&positive_mass, &total));
        errors
    }
}

/// A small deterministic generator for the validation inputs.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Random and adversarial inputs for the float-margin validation, up to
/// `n = 2^22 - 3` rows (a few seconds in the test profile; the margin is
/// derived for any `n < 2^32`).
fn margin_cases() -> Vec<MarginCase> {
    let mut rng = Lcg(2026);
    let mut cases = Vec::new();
    let columns = |n: usize, rule: &dyn Fn(usize, usize) -> bool, d: usize| -> Vec<BitVec> {
        (0..d)
            .map(|j| BitVec::from_bools(&(0..n).map(|i| rule(i, j)).collect::<Vec<_>>()))
            .collect()
    };
    // Random: 79 margin classes (tau = 39), random measures and labels,
    // literals of densities 0.05 to 0.95.
    for n in [1_000usize, 100_003] {
        let mu: Vec<f64> = (0..79).map(|_| rng.next().max(1e-3)).collect();
        let class: Vec<usize> = (0..n).map(|_| (rng.next() * 79.0) as usize).collect();
        let positive: Vec<bool> = (0..n).map(|_| rng.next() < 0.3).collect();
        let densities = [0.05, 0.3, 0.5, 0.7, 0.95];
        let cells: Vec<Vec<bool>> = densities
            .iter()
            .map(|&q| (0..n).map(|_| rng.next() < q).collect())
            .collect();
        cases.push(MarginCase {
            name: "random",
            class,
            mu,
            positive,
            columns: columns(n, &|i, j| cells[j][i], densities.len()),
        });
    }
    // Equal weights 1/n (not dyadic), every label -1: every signed weight has
    // the same sign and every addition rounds, the classic worst case of
    // recursive summation. Literals: the first half of the rows (a direct
    // list of n/2 entries), all but three rows (a complemented list),
    // alternate rows, none.
    for n in [3usize * 1_000_001, (1 << 22) - 3] {
        cases.push(MarginCase {
            name: "equal weights, one sign",
            class: vec![0; n],
            mu: vec![1.0],
            positive: vec![false; n],
            columns: columns(
                n,
                &|i, j| match j {
                    0 => i < n / 2,
                    1 => i >= 3,
                    2 => i % 2 == 0,
                    _ => false,
                },
                4,
            ),
        });
    }
    // One heavy row and many light ones (weights 1/2 and 1/(2(n-1))): the
    // light additions round against a large partial sum.
    let n = 1_000_003;
    let mut class = vec![1; n];
    class[0] = 0;
    cases.push(MarginCase {
        name: "one heavy row",
        class,
        mu: vec![1.0, 1.0 / (n - 1) as f64],
        positive: (0..n).map(|i| i % 7 == 0).collect(),
        columns: columns(n, &|i, j| (i + j) % 3 != 0, 3),
    });
    // Cancellation: alternating labels, so the listed sums stay near 0 while
    // the totals subtracted from stay near 0 too; weights from 1e-3 to 1.
    let n = 2_000_001;
    let mu: Vec<f64> = (0..79)
        .map(|k| 10f64.powf(-3.0 * k as f64 / 78.0))
        .collect();
    cases.push(MarginCase {
        name: "cancellation",
        class: (0..n).map(|i| (i * 31 + i / 7) % 79).collect(),
        mu,
        positive: (0..n).map(|i| i % 2 == 0).collect(),
        columns: columns(n, &|i, j| (i / (j + 1)) % 2 == 0 || j == 2, 3),
    });
    cases
}

/// The float margin E (`privacy::calibration::one_rule_float_margin`,
/// docs/privacy.md "Floating-point margin") against an exact reference: the
/// errors DP-1R computes from the projected measure (normalisation, P+, the
/// padded list sums, the complement, `1 - err`) are compared with the exact
/// errors under the exactly normalised weights. This checks the summation
/// and normalisation parts of E, `E_sum = 2u [(n + 2 tau + 8) + 2 (2 tau + 2)]`,
/// and reports the worst ratio to it and to E; the projection's own
/// `ln`/`exp` error (the rest of E) is not covered (docs/privacy.md says so).
#[test]
fn float_error_of_the_errors_is_within_the_margin() {
    use crate::privacy::calibration::one_rule_float_margin;
    use crate::privacy::float_reference::error_of;
    let u = f64::EPSILON / 2.0;
    let tau = 39u32;
    for case in margin_cases() {
        let n = case.n();
        let (signed, p_positive) = case.float_weights();
        let features = BitMatrix::from_columns(n, &case.columns);
        let mut learner = OneRule::new(&features, &[]).unwrap();
        learner.compute_errors_per_row(&signed, p_positive);
        let exact = case.exact_errors();
        let worst = learner
            .errors()
            .iter()
            .zip(&exact)
            .map(|(&got, &want)| error_of(got, want).abs())
            .fold(0.0, f64::max);
        let tau_f = f64::from(tau);
        let e_sum = 2.0 * u * ((n as f64 + 2.0 * tau_f + 8.0) + 2.0 * (2.0 * tau_f + 2.0));
        let e = one_rule_float_margin(n, 0.5, tau);
        println!(
            "{} (n = {n}): worst |err computed - exact| = {worst:.3e} = {:.1} u; \
             {:.2e} of E_sum, {:.2e} of E",
            case.name,
            worst / u,
            worst / e_sum,
            worst / e
        );
        assert!(worst <= e_sum, "{}: {worst:e} > {e_sum:e}", case.name);
    }
}

/// With one-hot groups the weighted errors equal the padded lists' up to
/// float reassociation (the group sums add 4-entry blocks into 4 lanes per
/// literal; padded lists add entries into 4 accumulators, or complement):
/// within 1e-14 on weights summing to 1.
#[test]
fn one_hot_group_errors_match_the_padded_errors() {
    use super::groups::tests::one_hot_matrix;
    let groups = [0..6, 6..7, 8..20, 21..30];
    for (n, seed) in [(1usize, 1u64), (97, 2), (4096, 3), (10_001, 4)] {
        let features = one_hot_matrix(n, 31, &groups, seed);
        let weights: Vec<f64> = (0..n).map(|i| 1.0 + ((i * 37) % 11) as f64).collect();
        let total: f64 = weights.iter().sum();
        let signed: Vec<f64> = (0..n)
            .map(|i| {
                let y = if features.get(i, (i * 13) % 31) {
                    1.0
                } else {
                    -1.0
                };
                -y * weights[i] / total
            })
            .chain([0.0])
            .collect();
        let p_positive: f64 = signed.iter().filter(|&&s| s < 0.0).map(|s| -s).sum();
        let mut padded = OneRule::new(&features, &[]).unwrap();
        let mut grouped = OneRule::new(&features, &groups).unwrap();
        padded.compute_errors_per_row(&signed, p_positive);
        grouped.compute_errors_per_row(&signed, p_positive);
        for (j, (a, b)) in padded.errors().iter().zip(grouped.errors()).enumerate() {
            assert!((a - b).abs() <= 1e-14, "n {n} candidate {j}: {a} vs {b}");
        }
    }
}

/// On Adult (every column one-hot) and Mushroom, seeded private training
/// with the schema's one-hot groups picks the same hypotheses as with every
/// literal padded: the sums agree up to reassociation, far below the noise's
/// `2^-30` grid, so accuracy is unchanged.
#[test]
fn one_hot_groups_train_the_same_models() {
    for (set, file) in [("adult", "adult-train.csv"), ("mushroom", "mushroom.csv")] {
        let (encoder, grouped) = crate::data::shipped::load_one(set, file);
        let grouped = &grouped;
        assert!(!grouped.one_hot_groups.is_empty(), "{set}");
        assert_eq!(grouped.one_hot_groups, encoder.one_hot_groups());
        let padded = Dataset {
            one_hot_groups: vec![],
            ..grouped.clone()
        };
        for weak_learner in [
            WeakLearnerKind::OneRule,
            WeakLearnerKind::TopDown {
                internal_nodes: 3,
                bound: crate::learn::SensitivityBound::Proven,
            },
        ] {
            let params = LazyBbParams {
                tau: 9,
                lambda: 0.45,
                kappa: 0.35,
                weak_learner,
                privacy: PrivacyMode::Private(Budget::new(1.0, 0.0).unwrap()),
            }
            .check()
            .unwrap();
            let run = |data: &Dataset| {
                let mut rng = NoiseRng::seeded(21);
                train(data, &params, Some(&mut rng), &mut |_| true).unwrap()
            };
            assert_eq!(run(grouped), run(&padded), "{set}");
        }
    }
}

/// Issue 16: the statement once described an exponential mechanism that
/// the code no longer ran. Each LazyBB variant's statement must name
/// exactly the mechanisms its training called (recorded by the samplers in
/// test builds), and no user-facing text may carry a Rust module path.
#[test]
fn statements_name_exactly_the_mechanisms_that_ran() {
    use crate::privacy::mechanisms::{self, Mechanism};
    let schema = Schema::from_json(SCHEMA).unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let csv = "colour,size,y\nred,1,yes\nred,2,yes\ngreen,8,no\nblue,9,no\nred,7,yes\ngreen,3,no\n";
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    let budget = || PrivacyMode::Private(Budget::new(2.0, 0.0).unwrap());
    for (seed, valid) in [(41, params(5, budget())), (42, top_down(5, 2, budget()))] {
        let mut rng = NoiseRng::seeded(seed);
        mechanisms::take_ran();
        let ensemble = train(&data, &valid, Some(&mut rng), &mut |_| true).unwrap();
        let ran = mechanisms::take_ran();
        assert!(!ran.is_empty(), "training recorded no mechanism");
        let model = LazyBbModel::new(&schema, &encoder, &valid, false, &ensemble).unwrap();
        let s = &model.privacy;
        let named: std::collections::BTreeSet<&str> =
            s.mechanisms.iter().map(String::as_str).collect();
        assert_eq!(named, ran, "{:?}", valid.get().weak_learner);
        for m in mechanisms::ALL {
            // The mechanism and sampler text mention a mechanism iff it ran.
            let mentioned = s.mechanism.contains(m.name) && s.sampler.contains(m.sampler);
            assert_eq!(mentioned, ran.contains(m.id), "{}: {s:?}", m.id);
            assert_eq!(Mechanism::by_id(m.id).map(|m| m.id), Some(m.id));
        }
        for text in [
            &s.mechanism,
            &s.sampler,
            &s.sensitivity,
            &s.accounting,
            &s.budget_split,
            &s.neighbouring,
        ] {
            assert!(!text.contains("::"), "module path in {text}");
            assert!(!text.contains("rejection"), "stale sampler text: {text}");
        }
    }
}

/// The debiased 1-Rule errors on randomized rows are unbiased for fixed
/// weights: over many seeded randomizations of one small data set (a
/// one-hot column of 3 values, a threshold-like literal lit by 2 of them,
/// a boolean, and the label), the mean debiased error of every candidate is
/// its error on the true rows within 5 standard errors (the standard error
/// estimated from the repetitions).
#[test]
fn debiased_one_rule_errors_are_unbiased() {
    use super::one_rule::LocalDebias;
    use crate::data::BitMatrixBuilder;
    use crate::local_dp::randomized_response::{Debias, RandomizedResponse};
    let n = 300usize;
    // True values: column a in 0..3, boolean b, label y; fixed weights.
    let a: Vec<u32> = (0..n).map(|i| ((i * 7) % 3) as u32).collect();
    let b: Vec<u32> = (0..n).map(|i| u32::from(i % 4 == 0)).collect();
    let y: Vec<bool> = (0..n)
        .map(|i| a[i] == 2 || (b[i] == 1 && i % 3 == 0))
        .collect();
    let raw: Vec<f64> = (0..n).map(|i| 1.0 + (i % 5) as f64).collect();
    let total: f64 = raw.iter().sum();
    let p: Vec<f64> = raw.iter().map(|w| w / total).collect();
    // Literals: a == 0, a == 1, a == 2, a <= 1 (lit by 2 values), b.
    let literals_of = |a: u32, b: u32| {
        let mut active = vec![a];
        if a <= 1 {
            active.push(3);
        }
        if b == 1 {
            active.push(4);
        }
        active
    };
    let errors = |a: &[u32], b: &[u32], y: &[bool]| {
        let mut builder = BitMatrixBuilder::new(5);
        for i in 0..n {
            builder.push_row(&literals_of(a[i], b[i]));
        }
        let features = builder.finish();
        let signed: Vec<f64> = (0..n)
            .map(|i| if y[i] { -p[i] } else { p[i] })
            .chain([0.0])
            .collect();
        let p_positive: f64 = (0..n).filter(|&i| y[i]).map(|i| p[i]).sum();
        let mut learner = OneRule::new(&features, &[]).unwrap();
        learner.compute_errors_per_row(&signed, p_positive);
        (learner.errors().to_vec(), p_positive)
    };
    let (truth, _) = errors(&a, &b, &y);
    let (ea, eb, ey) = (0.7, 1.0, 0.9);
    let (rr_a, rr_b, rr_y) = (
        RandomizedResponse::new(3, ea).unwrap(),
        RandomizedResponse::new(2, eb).unwrap(),
        RandomizedResponse::new(2, ey).unwrap(),
    );
    let debias = LocalDebias {
        literals: vec![
            Debias::new(3, 1, rr_a.epsilon()),
            Debias::new(3, 1, rr_a.epsilon()),
            Debias::new(3, 1, rr_a.epsilon()),
            Debias::new(3, 2, rr_a.epsilon()),
            Debias::new(2, 1, rr_b.epsilon()),
        ],
        label_factor: Debias::new(2, 1, rr_y.epsilon()).scale,
        label_keep: rr_y.keep(),
        columns: vec![],
    };
    let mut rng = NoiseRng::seeded(77);
    let reps = 2000;
    let mut sum = vec![0.0; truth.len()];
    let mut sum_sq = vec![0.0; truth.len()];
    for _ in 0..reps {
        let ra: Vec<u32> = a
            .iter()
            .map(|&v| rr_a.sample(&mut rng, v).unwrap())
            .collect();
        let rb: Vec<u32> = b
            .iter()
            .map(|&v| rr_b.sample(&mut rng, v).unwrap())
            .collect();
        let ry: Vec<bool> = y
            .iter()
            .map(|&v| rr_y.sample(&mut rng, u32::from(!v)).unwrap() == 0)
            .collect();
        let (mut e, p_positive) = errors(&ra, &rb, &ry);
        debias.debiased(&mut e, p_positive);
        for (j, v) in e.iter().enumerate() {
            sum[j] += v;
            sum_sq[j] += v * v;
        }
    }
    let mut worst = 0.0f64;
    for j in 0..truth.len() {
        let mean = sum[j] / reps as f64;
        let var = sum_sq[j] / reps as f64 - mean * mean;
        let se = (var / reps as f64).sqrt();
        let z = (mean - truth[j]).abs() / se;
        worst = worst.max(z);
        assert!(
            z < 5.0,
            "candidate {j}: mean {mean}, truth {}, se {se}",
            truth[j]
        );
    }
    // Without debiasing the errors are far off: the test can fail.
    let (plain, _) = {
        let mut rng = NoiseRng::seeded(78);
        let ra: Vec<u32> = a
            .iter()
            .map(|&v| rr_a.sample(&mut rng, v).unwrap())
            .collect();
        let rb: Vec<u32> = b
            .iter()
            .map(|&v| rr_b.sample(&mut rng, v).unwrap())
            .collect();
        let ry: Vec<bool> = y
            .iter()
            .map(|&v| rr_y.sample(&mut rng, u32::from(!v)).unwrap() == 0)
            .collect();
        errors(&ra, &rb, &ry)
    };
    assert!(
        (plain[2] - truth[2]).abs() > 0.05,
        "randomization should bias the raw error of a == 2: {} vs {}",
        plain[2],
        truth[2]
    );
    assert!(worst < 5.0);
}
