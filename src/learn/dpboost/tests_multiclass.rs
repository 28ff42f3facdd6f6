//! DPBoost for k classes (one-vs-rest, issue 27): the plan's budget split
//! and its scale checks before any charge, the drawn noise at the per-fit
//! scales, the model file (old binary files unchanged, a multiclass file
//! round-trips and is checked on load), prediction and inspection, and
//! accuracy on the suite's Nursery.

use serde_json::Value;

use super::DpBoostSpec;
use super::multiclass::normalising_scores;
use crate::data::{Dataset, Encoder, LabelMode, Schema, Task, read_csv};
use crate::learn::test_grades::grades;
use crate::learn::{AlgorithmSpec, Model, ModelPredictor, Output, PublicFacts};
use crate::privacy::{Budget, NoiseRng, PrivacyCost};

fn budget(epsilon: f64, delta: f64) -> Budget {
    Budget::new(epsilon, delta).unwrap()
}

fn facts(task: Task) -> PublicFacts {
    PublicFacts::adult_shaped(32_561, task)
}

fn dpboost() -> AlgorithmSpec {
    AlgorithmSpec::Dpboost(DpBoostSpec::default())
}

/// A binary plan to compare one one-vs-rest fit with: the same defaults
/// without the binary decision threshold (k classes have none).
fn dpboost_without_threshold() -> AlgorithmSpec {
    AlgorithmSpec::Dpboost(DpBoostSpec {
        threshold_share: Some(0.0),
        ..DpBoostSpec::default()
    })
}

fn f(noise: &Value, key: &str) -> f64 {
    noise[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key}: {noise}"))
}

/// The plan for k classes is k binary plans at epsilon / k: by hand, 1/3
/// and 1/26 of epsilon 1 (and of 5) per fit; every scale equal to a binary
/// plan's at that share; k x 10 trees of progress; the whole epsilon
/// charged, pure whatever delta was offered (DPBoost uses none).
#[test]
fn the_plan_splits_the_budget_over_the_k_fits() {
    for k in [3usize, 26] {
        for (e, d) in [(1.0, 0.0), (1.0, 1e-6), (5.0, 0.0)] {
            let plan = dpboost()
                .plan(budget(e, d), facts(Task::Multiclass { k }))
                .unwrap();
            assert_eq!(plan.steps, 10 * k as u32, "k = {k}");
            assert_eq!(plan.cost, PrivacyCost::Pure { epsilon: e }, "k = {k}");
            let noise = plan.noise();
            assert_eq!(noise["one_vs_rest_fits"], k);
            assert!(
                noise["mechanism"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("one-vs-rest over {k} classes"))
            );
            let per_fit = f(&noise, "epsilon_per_fit");
            let by_hand = match (k, e) {
                (3, 1.0) => 1.0 / 3.0,
                (26, 1.0) => 1.0 / 26.0,
                (3, 5.0) => 5.0 / 3.0,
                _ => 5.0 / 26.0,
            };
            assert!((per_fit - by_hand).abs() < 1e-15, "{per_fit}");
            assert!(std::iter::repeat_n(per_fit, k).sum::<f64>() <= e);
            // The same numbers as a binary plan at the per-fit share.
            let binary = dpboost_without_threshold()
                .plan(budget(per_fit, 0.0), facts(Task::Binary))
                .unwrap()
                .noise();
            for key in [
                "epsilon_init",
                "epsilon_ensemble",
                "epsilon_level",
                "epsilon_leaves",
                "split_scale",
                "newton_gradient_sum_scale",
                "newton_hessian_sum_scale",
                "leaf_scale",
            ] {
                assert_eq!(f(&noise, key), f(&binary, key), "k {k} {key}");
            }
            assert_eq!(noise["subset_sizes"], binary["subset_sizes"]);
            // And k times the binary plan's scales at the whole epsilon.
            let whole = dpboost_without_threshold()
                .plan(budget(e, 0.0), facts(Task::Binary))
                .unwrap()
                .noise();
            let ratio =
                f(&noise, "newton_gradient_sum_scale") / f(&whole, "newton_gradient_sum_scale");
            assert!((ratio / k as f64 - 1.0).abs() < 1e-12, "{ratio}");
        }
    }
    // A binary plan states no fits.
    let binary = dpboost()
        .plan(budget(1.0, 0.0), facts(Task::Binary))
        .unwrap();
    assert!(binary.noise()["one_vs_rest_fits"].is_null());
    assert_eq!(binary.steps, 10);
}

/// Every derived scale is checked for the per-fit share before any charge:
/// an `init_share` whose initial-score scale a binary run at the whole
/// epsilon can draw but a fit at epsilon / 26 cannot is refused for 26
/// classes, naming the field and the split; so is a level epsilon too small
/// at the share.
#[test]
fn the_plan_checks_every_per_fit_scale_before_any_charge() {
    let spec = |init_share| {
        AlgorithmSpec::Dpboost(DpBoostSpec {
            init_share: Some(init_share),
            ..DpBoostSpec::default()
        })
    };
    let e = 0.01;
    let mut share = 1e-3;
    while spec(share)
        .plan(budget(e, 0.0), facts(Task::Multiclass { k: 26 }))
        .is_ok()
    {
        share /= 2.0;
        assert!(share > 1e-30, "never refused");
    }
    let error = spec(share)
        .plan(budget(e, 0.0), facts(Task::Multiclass { k: 26 }))
        .unwrap_err();
    let text = error.to_string();
    assert!(text.contains("out of range"), "{text}");
    assert!(text.contains("one-vs-rest fits"), "{text}");
    assert_eq!(error.field(), "init_share", "{text}");
    // The binary plan at the whole epsilon draws the same scale / 26.
    spec(share)
        .plan(budget(e, 0.0), facts(Task::Binary))
        .unwrap();
    // The level epsilon: a depth-10, 1000-ensemble run at epsilon 1e-3 per
    // fit is below the grid's margin.
    let deep = AlgorithmSpec::Dpboost(DpBoostSpec {
        ensembles: Some(1000),
        max_depth: Some(10),
        trees_per_ensemble: Some(1),
        ..DpBoostSpec::default()
    });
    let mut epsilon = 1.0;
    while deep
        .plan(budget(epsilon, 0.0), facts(Task::Multiclass { k: 26 }))
        .is_ok()
    {
        epsilon /= 2.0;
    }
    let text = deep
        .plan(budget(epsilon, 0.0), facts(Task::Multiclass { k: 26 }))
        .unwrap_err()
        .to_string();
    assert!(text.contains("per tree level is too small"), "{text}");
    deep.plan(budget(epsilon, 0.0), facts(Task::Binary))
        .unwrap();
}

/// The noise actually drawn, by the samplers the fit uses, at the plan's
/// scales for 3 classes against a binary plan at the same epsilon:
///
/// - the Newton leaves' gradient sums (exact discrete Laplace): variance
///   ratio 9 (each fit at epsilon / 3); 20000 draws each give the ratio a
///   relative standard error under 2.5%, so a 12% band is about 5 of them,
///   and the unsplit scale (ratio 1) is far outside;
/// - the split selection (report-noisy-max): two gains `x` apart, `x` the
///   binary plan's scale; the higher wins with probability
///   `1 - e^{-x/b} (1 + x/(2b)) / 2`: 0.7241 at `b = x` (the unsplit
///   scale), 0.5823 at `b = 3x`; 20000 draws: standard error 0.0035, band
///   0.02.
#[test]
fn drawn_noise_is_at_the_per_fit_scales() {
    let plan_noise = |task: Task| {
        dpboost()
            .plan(budget(1.0, 0.0), facts(task))
            .unwrap()
            .noise()
    };
    let (binary, classes) = (
        plan_noise(Task::Binary),
        plan_noise(Task::Multiclass { k: 3 }),
    );
    let unit = f64::from(1u32 << super::params::GRAD_BITS);
    let mut rng = NoiseRng::seeded(2727);
    let variance = |scale: f64, rng: &mut NoiseRng| {
        let n = 20_000;
        let xs: Vec<f64> = (0..n)
            .map(|_| super::tree::laplace_units(rng, scale).unwrap() as f64)
            .collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n as f64 - 1.0)
    };
    let scale = |noise: &Value| f(noise, "newton_gradient_sum_scale") * unit;
    let ratio = variance(scale(&classes), &mut rng) / variance(scale(&binary), &mut rng);
    assert!((ratio / 9.0 - 1.0).abs() < 0.12, "{ratio}");

    let x = f(&binary, "split_scale");
    let win = |b: f64| 1.0 - (-x / b).exp() * (1.0 + x / (2.0 * b)) / 2.0;
    let n = 20_000;
    let wins = (0..n)
        .filter(|_| {
            crate::privacy::laplace::report_noisy_max(
                &mut rng,
                &[0.0, x],
                f(&classes, "split_scale"),
            )
            .unwrap()
                == 1
        })
        .count();
    let p = wins as f64 / n as f64;
    assert!((p - win(3.0 * x)).abs() < 0.02, "{p} vs {}", win(3.0 * x));
    assert!((p - win(x)).abs() > 0.1, "{p} looks like the unsplit scale");
}

/// The normalised one-vs-rest probabilities by hand: logits 0, ln 3 and
/// -ln 3 are sigmoid probabilities 1/2, 3/4, 1/4, which sum to 3/2 and
/// normalise to 1/3, 1/2, 1/6; huge logits do not overflow.
#[test]
fn probabilities_are_the_sigmoids_normalised() {
    let scores = normalising_scores(&[0.0, 3f64.ln(), -(3f64.ln())]);
    let p = crate::learn::trained::softmax(&scores);
    for (got, want) in p.iter().zip([1.0 / 3.0, 0.5, 1.0 / 6.0]) {
        assert!((got - want).abs() < 1e-15, "{p:?}");
    }
    let p = crate::learn::trained::softmax(&normalising_scores(&[800.0, -800.0, 800.0]));
    assert!(p.iter().all(|q| q.is_finite()), "{p:?}");
    assert!((p[0] - 0.5).abs() < 1e-15 && p[1] < 1e-300, "{p:?}");
}

fn fit(epsilon: f64, encoder: &Encoder, data: &Dataset, seed: u64) -> Model {
    let plan = dpboost()
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
    // Progress counts the trees of every fit, in order.
    assert_eq!(steps, (1..=plan.steps).collect::<Vec<_>>());
    model
}

/// A 3-class table trains, predicts each row's class with probabilities
/// summing to 1, states the split, inspects per class, round-trips through
/// its file and refuses ONNX export by name.
#[test]
fn a_small_multiclass_table_trains_predicts_and_inspects() {
    let (encoder, data) = grades();
    let model = fit(3.0, &encoder, &data, 5);
    model.check_storable().unwrap();
    let Model::DpBoost(file) = &model else {
        panic!("a DPBoost model")
    };
    assert!(file.is_multiclass() && file.model.trees.is_empty());
    assert_eq!(file.one_vs_rest.len(), 3);
    assert!(file.one_vs_rest.iter().all(|m| m.trees.len() == 10));
    let ovr = file.privacy.one_vs_rest.as_ref().unwrap();
    assert_eq!(ovr.fits, 3);
    assert_eq!(file.privacy.epsilon, 3.0);
    assert!((ovr.epsilon_per_fit - 1.0).abs() < 1e-15);
    assert!(
        file.privacy
            .accounting
            .contains("one-vs-rest over 3 classes")
    );

    let predictor = model.predictor();
    assert!(matches!(predictor, ModelPredictor::DpBoost(_)));
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
    // 90% of the rows follow their level; epsilon 1 per fit on 3000 rows
    // finds it (2700 rows follow it; the bound leaves 50 rows of margin).
    assert!(right >= 2650, "{right} of 3000");
    // One row at a time agrees with the batch.
    for (row, output) in outputs.iter().enumerate().take(3) {
        let active: Vec<u32> = (0..data.n_literals() as u32)
            .filter(|&l| data.features.get(row, l as usize))
            .collect();
        assert_eq!(predictor.predict(&active), *output);
    }

    let back = Model::from_json(&model.to_json()).unwrap();
    assert_eq!(back, model);
    let inspection = serde_json::to_value(model.inspect(&encoder)).unwrap();
    let classes = inspection["classes"].as_array().unwrap();
    let names: Vec<&str> = classes
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["low", "mid", "high"]);
    assert!(
        classes
            .iter()
            .all(|c| c["trees"].as_array().unwrap().len() == 10)
    );
    let text = model.inspect(&encoder).to_text();
    assert!(text.contains("Class \"mid\""), "{text}");
    assert!(text.contains("level == b"), "{text}");
    let e = model.literal_form().unwrap_err().to_string();
    assert!(e.contains("multiclass"), "{e}");
}

/// A multiclass file is checked on load: one fit per class, each of the
/// model's depth, trees only in the class fits; a binary file may not
/// carry class fits.
#[test]
fn a_malformed_multiclass_file_is_refused() {
    let (encoder, data) = grades();
    let model = fit(2.0, &encoder, &data, 6);
    let value: Value = serde_json::from_str(&model.to_json()).unwrap();
    let load = |v: &Value| Model::from_json(&v.to_string()).map(|_| ());
    load(&value).unwrap();
    let mut fewer = value.clone();
    fewer["one_vs_rest"].as_array_mut().unwrap().pop();
    let e = load(&fewer).unwrap_err().to_string();
    assert!(e.contains("one fit per class (3), got 2"), "{e}");
    let mut shallow = value.clone();
    shallow["one_vs_rest"][1]["trees"][0]["leaves"]
        .as_array_mut()
        .unwrap()
        .pop();
    let e = load(&shallow).unwrap_err().to_string();
    assert!(e.contains("depth"), "{e}");
    let mut both = value.clone();
    both["model"] = value["one_vs_rest"][0].clone();
    let e = load(&both).unwrap_err().to_string();
    assert!(e.contains("keeps its trees in one_vs_rest"), "{e}");
}

/// A binary DPBoost file in the layout written before multiclass
/// (`tests/fixtures/dpboost-v2/binary.json`, its README says how it was
/// written: exactly the pre-multiclass fields, no `one_vs_rest` in the file
/// or its statement) loads as binary and serialises unchanged; a binary
/// file carrying class fits is refused.
#[test]
fn old_binary_files_still_load_unchanged() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dpboost-v2/binary.json");
    let text = std::fs::read_to_string(path).unwrap();
    let model = Model::from_json(&text).unwrap();
    let Model::DpBoost(file) = &model else {
        panic!("a DPBoost model")
    };
    assert!(!file.is_multiclass() && file.one_vs_rest.is_empty());
    assert!(!file.model.trees.is_empty());
    let old: Value = serde_json::from_str(&text).unwrap();
    let new: Value = serde_json::from_str(&model.to_json()).unwrap();
    assert_eq!(old, new);
    assert!(new.get("one_vs_rest").is_none());
    assert!(new["privacy"].get("one_vs_rest").is_none());
    let Output::Class(_) = model.predictor().predict(&[0]) else {
        panic!("a binary output")
    };
    let mut with_fits = old.clone();
    with_fits["one_vs_rest"] = Value::Array(vec![old["model"].clone()]);
    let e = Model::from_json(&with_fits.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("only a multiclass DPBoost model"), "{e}");
}

/// The suite's Nursery (12960 rows, 5 classes; `../shared/data/suite`):
/// every fifth row held out, the rest trained on at the defaults at
/// epsilon 1 and 5, three fixed seeds each. The majority class is 33% of
/// the held-out rows; the bounds are the lowest accuracy measured over the
/// seeds less 3 points, and every run is 10 points above the majority
/// (dp-linear does 0.90 here: docs/accuracy.md, "DPBoost for k classes").
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
    let mut measured = Vec::new();
    for (epsilon, bound) in [(1.0, NURSERY_AT_1), (5.0, NURSERY_AT_5)] {
        for seed in [1, 2, 3] {
            let model = fit(epsilon, &encoder, &train, seed);
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
            measured.push((epsilon, seed, accuracy, bound));
        }
    }
    for (epsilon, seed, accuracy, bound) in measured {
        assert!(
            accuracy >= bound,
            "epsilon {epsilon} seed {seed}: {accuracy}"
        );
        assert!(accuracy > majority + 0.1, "{accuracy} vs {majority}");
    }
}

/// Measured 0.532, 0.569, 0.452 (seeds 1-3) at epsilon 1; less 3 points.
const NURSERY_AT_1: f64 = 0.42;
/// Measured 0.837, 0.818, 0.751 at epsilon 5; less 3 points.
const NURSERY_AT_5: f64 = 0.72;
