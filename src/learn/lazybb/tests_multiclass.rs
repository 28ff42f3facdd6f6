//! LazyBB for k classes (one-vs-rest, issue 27): the plan's budget split
//! and its scale checks before any charge, the drawn selection noise at
//! the per-fit scale, the model file (old binary files unchanged, a
//! multiclass file round-trips and is checked on load), prediction and
//! inspection, and accuracy on the suite's Nursery.

use serde_json::Value;

use super::params::default_parameters;
use crate::data::{Dataset, Encoder, LabelMode, Schema, Task, read_csv};
use crate::learn::test_grades::grades;
use crate::learn::{AlgorithmSpec, LazyBbSpec, Model, ModelPredictor, Output, PublicFacts};
use crate::privacy::{Budget, NoiseRng, PrivacyCost};

fn budget(epsilon: f64, delta: f64) -> Budget {
    Budget::new(epsilon, delta).unwrap()
}

fn facts(task: Task) -> PublicFacts {
    PublicFacts::adult_shaped(32_561, task)
}

fn lazybb(tau: Option<u32>, kappa: Option<f64>) -> AlgorithmSpec {
    AlgorithmSpec::Lazybb(LazyBbSpec {
        tau,
        kappa,
        ..LazyBbSpec::default()
    })
}

fn f(noise: &Value, key: &str) -> f64 {
    noise[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}: {noise}"))
}

/// The plan for k classes is k binary plans at epsilon / k, delta / k: the
/// same calibration (eta, per-round epsilon, composition) as a binary plan
/// at that share, k tau steps, and the whole budget charged. The default
/// rounds follow the per-fit epsilon: 15 sqrt(1/3) = 8.66 -> 9 rounds for
/// k = 3 at epsilon 1; 15 sqrt(1/26) = 2.94 -> the minimum 5 for k = 26.
#[test]
fn the_plan_splits_the_budget_over_the_k_fits() {
    for (k, want_tau) in [(3usize, 9u32), (26, 5)] {
        for (e, d) in [(1.0, 0.0), (1.0, 1e-6)] {
            let total = budget(e, d);
            let plan = lazybb(None, None)
                .plan(total, facts(Task::Multiclass { k }))
                .unwrap();
            let AlgorithmSpec::Lazybb(resolved) = plan.resolved else {
                panic!("a LazyBB plan")
            };
            assert_eq!(resolved.tau, Some(want_tau), "k = {k}");
            assert_eq!(default_parameters(e / k as f64).0, want_tau);
            assert_eq!(plan.steps, want_tau * k as u32);
            // Few rounds per fit: basic composition, pure whatever the
            // delta offered, and no delta charged.
            assert_eq!(plan.cost.charge(), budget(e, 0.0), "k = {k}");
            assert!(
                matches!(plan.cost, PrivacyCost::Pure { .. }),
                "{:?}",
                plan.cost
            );
            let noise = plan.noise();
            assert_eq!(noise["one_vs_rest_fits"], k);
            let per_fit = f(&noise, "epsilon_per_fit");
            assert!((per_fit - e / k as f64).abs() < 1e-15, "{per_fit}");
            // The same numbers as a binary plan at the per-fit share
            // without a vote threshold (k classes have none).
            let share = budget(per_fit, if d == 0.0 { 0.0 } else { d / k as f64 });
            let binary = AlgorithmSpec::Lazybb(LazyBbSpec {
                vote_threshold_share: Some(0.0),
                ..resolved
            })
            .plan(share, facts(Task::Binary))
            .unwrap()
            .noise();
            for key in ["eta", "epsilon_per_round", "zeta"] {
                let (a, b) = (f(&noise, key), f(&binary, key));
                assert!((a / b - 1.0).abs() < 1e-12, "k {k} {key}: {a} vs {b}");
            }
            assert_eq!(noise["composition"], binary["composition"]);
        }
    }
}

/// Every derived scale is checked in the plan, for the per-fit budget:
/// kappa = 1e-311 (issue 16's infinite scale) is refused naming kappa; an
/// epsilon whose binary plan's selection scale 1/eta falls below the
/// sampler's grid is refused for 2 classes but accepted for 26, whose fits
/// run at epsilon / 26 (so it is the per-fit scale that is checked). A
/// local-DP multiclass plan is refused.
#[test]
fn the_plan_checks_every_per_fit_scale_before_any_charge() {
    for k in [3, 26] {
        let e = lazybb(Some(5), Some(1e-311))
            .plan(budget(1.0, 0.0), facts(Task::Multiclass { k }))
            .unwrap_err()
            .to_string();
        assert!(e.contains("kappa"), "{e}");
    }
    // Find an epsilon the binary plan refuses for its eta but a fit at
    // epsilon / 26 accepts.
    let spec = lazybb(Some(5), Some(0.5));
    let mut epsilon = 1.0;
    while spec.plan(budget(epsilon, 0.0), facts(Task::Binary)).is_ok() {
        epsilon *= 2.0;
    }
    let e = spec
        .plan(budget(epsilon, 0.0), facts(Task::Multiclass { k: 2 }))
        .map(|_| ())
        .err();
    // Half the epsilon may still be out of range; a 26th is not.
    let plan = spec
        .plan(budget(epsilon, 0.0), facts(Task::Multiclass { k: 26 }))
        .unwrap();
    assert!((f(&plan.noise(), "epsilon_per_fit") - epsilon / 26.0).abs() < 1e-9 * epsilon);
    let binary_error = spec
        .plan(budget(epsilon, 0.0), facts(Task::Binary))
        .unwrap_err()
        .to_string();
    assert!(binary_error.contains("1/eta"), "{binary_error}");
    if let Some(e) = e {
        assert!(e.to_string().contains("1/eta"), "{e}");
    }
    let local = crate::local_dp::LocalDp {
        epsilon: 2.0,
        label_epsilon: 1.0,
        protocol: crate::local_dp::Protocol::AllColumns,
    };
    let e = lazybb(None, None)
        .plan(
            budget(1.0, 0.0),
            facts(Task::Multiclass { k: 3 }).with_local_dp(Some(local)),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("multiclass"), "{e}");
}

/// The selection noise actually drawn, through the report-noisy-max the
/// 1-Rule uses, at the plan's scale: two candidates whose scores differ by
/// `x = 1 / eta` of the binary plan at the whole epsilon (same rounds and
/// density). The higher one wins with probability
/// `1 - e^{-x/b} (1 + x/(2b)) / 2` for Laplace scale `b`: 0.7241 at
/// `b = x` (a scale for the whole epsilon: the bug this catches), 0.5823
/// at `b = 3x` (each of 3 fits at epsilon / 3, as claimed). 20000 draws:
/// standard error 0.0035; the band 0.02 is about 6 of them, and the two
/// values are 0.14 apart.
#[test]
fn drawn_selection_noise_is_at_the_per_fit_scale() {
    let spec = lazybb(Some(9), Some(0.25));
    let eta = |task: Task| {
        f(
            &spec.plan(budget(1.0, 0.0), facts(task)).unwrap().noise(),
            "eta",
        )
    };
    let x = 1.0 / eta(Task::Binary);
    let win = |b: f64| 1.0 - (-x / b).exp() * (1.0 + x / (2.0 * b)) / 2.0;
    let mut rng = NoiseRng::seeded(27);
    for (task, factor) in [(Task::Binary, 1.0), (Task::Multiclass { k: 3 }, 3.0)] {
        let scale = 1.0 / eta(task);
        let expected = win(factor * x);
        let wrong = win(x);
        let n = 20_000;
        let wins = (0..n)
            .filter(|_| {
                crate::privacy::laplace::report_noisy_max(&mut rng, &[0.0, x], scale).unwrap() == 1
            })
            .count();
        let p = wins as f64 / n as f64;
        assert!((p - expected).abs() < 0.02, "{task:?}: {p} vs {expected}");
        if factor > 1.0 {
            assert!((p - wrong).abs() > 0.1, "{task:?}: {p} looks like {wrong}");
        }
    }
}

fn fit(spec: &AlgorithmSpec, epsilon: f64, encoder: &Encoder, data: &Dataset, seed: u64) -> Model {
    let plan = spec
        .plan(
            budget(epsilon, 0.0),
            PublicFacts::new(encoder, data.n_rows()),
        )
        .unwrap();
    let mut steps = Vec::new();
    let model = plan
        .fit(data, encoder, &mut NoiseRng::seeded(seed), &mut |s| {
            steps.push(s);
            true
        })
        .unwrap();
    // Progress counts the rounds of every fit, in order.
    assert_eq!(steps, (1..=plan.steps).collect::<Vec<_>>());
    model
}

/// A 3-class table trains (both weak learners), predicts each level's
/// class with probabilities summing to 1, states the split, inspects per
/// class, round-trips through its file, refuses ONNX export by name.
#[test]
fn a_small_multiclass_table_trains_predicts_and_inspects() {
    let (encoder, data) = grades();
    for weak in ["dp-1r", "dp-top-down"] {
        let spec: AlgorithmSpec = serde_json::from_value(serde_json::json!({
            "algorithm": "lazybb", "weak_learner": weak
        }))
        .unwrap();
        let model = fit(&spec, 3.0, &encoder, &data, 5);
        model.check_storable().unwrap();
        let Model::LazyBb(m) = &model else {
            panic!("a LazyBB model")
        };
        assert!(m.is_multiclass() && m.ensemble.is_empty());
        assert_eq!(m.class_ensembles.len(), 3);
        let ovr = m.privacy.one_vs_rest.as_ref().unwrap();
        assert_eq!(ovr.fits, 3);
        assert_eq!(m.privacy.epsilon, 3.0);
        assert!((ovr.epsilon_per_fit - 1.0).abs() < 1e-15);
        assert!(m.privacy.accounting.contains("one-vs-rest over 3 classes"));

        let predictor = model.predictor();
        assert!(matches!(predictor, ModelPredictor::LazyBbClasses(..)));
        let outputs = predictor.predict_all(&data);
        let mut right = 0;
        for (i, o) in outputs.iter().enumerate() {
            let Output::Classes(p) = o else {
                panic!("a multiclass output")
            };
            assert_eq!(p.probabilities.len(), 3);
            assert!((p.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!(p.probabilities.iter().all(|q| (0.0..=1.0).contains(q)));
            let actual = data.classes.as_ref().unwrap()[i] as usize;
            right += usize::from(p.index == actual);
        }
        // 90% of the rows follow their level; epsilon 1 per fit on 3000
        // rows finds it (an error of a few rows at most).
        assert!(right >= 2650, "{weak}: {right} of 3000");
        // One row at a time agrees with the batch.
        let active: Vec<u32> = (0..data.n_literals() as u32)
            .filter(|&l| data.features.get(0, l as usize))
            .collect();
        assert_eq!(predictor.predict(&active), outputs[0]);

        let text = model.to_json();
        let back = Model::from_json(&text).unwrap();
        assert_eq!(back, model);
        let inspection = serde_json::to_value(model.inspect(&encoder)).unwrap();
        let classes = inspection["classes"].as_array().unwrap();
        let names: Vec<&str> = classes
            .iter()
            .map(|c| c["class"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["low", "mid", "high"]);
        assert!(model.inspect(&encoder).to_text().contains("Class \"mid\""));
        let e = model.literal_form().unwrap_err().to_string();
        assert!(e.contains("multiclass"), "{e}");
    }
}

/// A multiclass file is checked on load: one ensemble per class, each of
/// tau hypotheses; a binary file may not carry class ensembles.
#[test]
fn a_malformed_multiclass_file_is_refused() {
    let (encoder, data) = grades();
    let model = fit(&lazybb(Some(5), None), 2.0, &encoder, &data, 6);
    let value: Value = serde_json::from_str(&model.to_json()).unwrap();
    let load = |v: &Value| Model::from_json(&v.to_string()).map(|_| ());
    load(&value).unwrap();
    let mut fewer = value.clone();
    fewer["class_ensembles"].as_array_mut().unwrap().pop();
    let e = load(&fewer).unwrap_err().to_string();
    assert!(e.contains("one ensemble per class (3)"), "{e}");
    let mut short = value.clone();
    short["class_ensembles"][1].as_array_mut().unwrap().pop();
    let e = load(&short).unwrap_err().to_string();
    assert!(e.contains("4 hypotheses but tau = 5"), "{e}");
    let mut both = value.clone();
    both["ensemble"] = value["class_ensembles"][0].clone();
    assert!(load(&both).is_err());
}

/// Model files written before multiclass existed
/// (`tests/fixtures/lazybb-v1/`) load, are binary, and serialise their
/// ensemble and statement unchanged (no `class_ensembles`, no
/// `one_vs_rest`).
#[test]
fn old_binary_files_still_load_unchanged() {
    for name in ["one-rule", "top-down"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("tests/fixtures/lazybb-v1/{name}.json"));
        let text = std::fs::read_to_string(path).unwrap();
        let model = Model::from_json(&text).unwrap();
        let Model::LazyBb(m) = &model else {
            panic!("a LazyBB model")
        };
        assert!(!m.is_multiclass());
        assert!(matches!(model.predictor(), ModelPredictor::LazyBb(_)));
        // (The parameter names were renamed before multiclass: compare
        // the fields multiclass touches.)
        let old: Value = serde_json::from_str(&text).unwrap();
        let new: Value = serde_json::from_str(&model.to_json()).unwrap();
        assert!(new.get("class_ensembles").is_none(), "{name}");
        assert!(new["privacy"].get("one_vs_rest").is_none(), "{name}");
        assert_eq!(old["ensemble"], new["ensemble"], "{name}");
        assert_eq!(old["privacy"], new["privacy"], "{name}");
    }
}

/// The suite's Nursery (12960 rows, 5 classes; `../shared/data/suite`):
/// every fifth row held out, the rest trained on with the default rule at
/// epsilon 1 and 5, three fixed seeds each. The majority class is 33% of
/// the held-out rows; each seed must beat it by 20 points, and the mean of
/// the three seeds must reach the bound (one seed's spread is too wide for
/// a per-seed bound: see the constants).
#[test]
fn nursery_accuracy_with_fixed_seeds() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/suite/nursery");
    let schema = std::fs::read_to_string(dir.join("schema.json")).unwrap();
    let encoder = Encoder::new(&Schema::from_json(&schema).unwrap()).unwrap();
    let file = std::fs::File::open(dir.join("nursery.csv")).unwrap();
    let data = read_csv(std::io::BufReader::new(file), &encoder, LabelMode::Required).unwrap();
    let n = data.n_rows();
    let test_rows: Vec<usize> = (0..n).filter(|i| i % 5 == 0).collect();
    let train_rows: Vec<usize> = (0..n).filter(|i| i % 5 != 0).collect();
    let (train, test) = (data.subset(&train_rows), data.subset(&test_rows));
    let actual = test.classes.as_ref().unwrap();
    let mut counts = [0usize; 5];
    actual.iter().for_each(|&c| counts[c as usize] += 1);
    let majority = *counts.iter().max().unwrap() as f64 / test.n_rows() as f64;
    for (epsilon, bound) in [(1.0, NURSERY_AT_1), (5.0, NURSERY_AT_5)] {
        let mut total = 0.0;
        for seed in [1, 2, 3] {
            let model = fit(&lazybb(None, None), epsilon, &encoder, &train, seed);
            let right = model
                .predictor()
                .predict_all(&test)
                .iter()
                .zip(actual)
                .filter(|(o, y)| matches!(o, Output::Classes(p) if p.index == usize::from(**y)))
                .count();
            let accuracy = right as f64 / test.n_rows() as f64;
            eprintln!(
                "nursery epsilon {epsilon} seed {seed}: {accuracy:.4} (majority {majority:.4})"
            );
            assert!(accuracy > majority + 0.2, "{accuracy} vs {majority}");
            total += accuracy;
        }
        let mean = total / 3.0;
        assert!(
            mean >= bound,
            "epsilon {epsilon}: mean {mean} over seeds 1-3"
        );
    }
}

/// Seeds 1-20 at epsilon 1 (the samplers' stream since stop 37): 0.715 to
/// 0.846, mean 0.784, standard deviation about 0.036 (0.021 for a mean of
/// three); seeds 1-3 give 0.779, 0.715, 0.728 (mean 0.741). The bound is
/// about three standard deviations of a three-seed mean below 0.784.
const NURSERY_AT_1: f64 = 0.72;
/// Seeds 1-20 at epsilon 5: 0.847 to 0.901, mean 0.870; seeds 1-3 give
/// 0.863, 0.882, 0.877. The bound (unchanged) is 0.05 below the mean.
const NURSERY_AT_5: f64 = 0.82;
