//! dp-linear for k classes: the softmax-gradient terms by hand, their
//! sensitivity under substitution (the bound the plan's noise is calibrated
//! to), the multiclass noise against the planned scale, and a small
//! multiclass table trained, predicted (probabilities summing to 1) and
//! round-tripped through its model file.

use super::features::{BlockRows, LinearShape};
use super::fit::{noisy_softmax_gradient, softmax_gradient_sums, softmax_terms};
use super::*;
use crate::data::{Encoder, LabelMode, Schema, Task, read_csv};
use crate::learn::{AlgorithmSpec, Model, Output, PublicFacts, metrics};
use crate::privacy::{Budget, NoiseRng};

/// Adult's shape (as in tests.rs): 15 blocks, `D_c = 28`.
const ADULT: LinearShape = LinearShape {
    intervals: (15, 28),
    linear: (15, 22),
    both: (21, 34),
    lines: 6,
    dimensions: [163, 109, 169],
};

fn plan(epsilon: f64, delta: f64, classes: usize) -> LinearPlan {
    let task = if classes == 0 {
        Task::Binary
    } else {
        Task::Multiclass { k: classes }
    };
    LinearSpec::default()
        .check(task)
        .unwrap()
        .plan_classes(
            Budget::new(epsilon, delta).unwrap(),
            32_561,
            &ADULT,
            classes,
        )
        .unwrap()
}

/// `p = (0.5, 0.3, 0.2)`, class 0, grid S = 10: with v = 1 the others get
/// `-floor(3) = -3` and `-floor(2) = -2`, class 0 their negated sum 5; with
/// v = -0.5 the others `+floor(1.5) = 1` and `+floor(1) = 1`, class 0 -2.
/// Probabilities summing past 1 are capped at S in total; NaN counts 0.
#[test]
fn softmax_terms_by_hand() {
    let mut q = [0i64; 3];
    softmax_terms(&[0.5, 0.3, 0.2], 0, 1.0, 10, &mut q);
    assert_eq!(q, [5, -3, -2]);
    softmax_terms(&[0.5, 0.3, 0.2], 0, -0.5, 10, &mut q);
    assert_eq!(q, [-2, 1, 1]);
    softmax_terms(&[0.2, 0.3, 0.5], 2, 1.0, 10, &mut q);
    assert_eq!(q, [-2, -3, 5]);
    softmax_terms(&[0.9, 0.9, 0.9], 0, 1.0, 10, &mut q);
    assert_eq!(q, [10, -9, -1]);
    softmax_terms(&[f64::NAN, 0.4, f64::NAN], 1, 7.0, 10, &mut q);
    assert_eq!(q, [0, 0, 0]);
    softmax_terms(&[0.25, 0.25, 0.5], 1, 0.0, 10, &mut q);
    assert_eq!(q, [0, 0, 0]);
}

/// Per-class sums of a block by hand: rows (feature, value, class, p)
/// `(0, 1, 0, (0.5, 0.5))`, `(0, 1, 1, (0.5, 0.5))`, `(1, 1, 1, (0.1, 0.9))`
/// and a row with no feature, S = 100: feature 0 gets `(50, -50) + (-50,
/// 50) = (0, 0)`, feature 1 `(-10, 10)`.
#[test]
fn per_class_sums_by_hand() {
    let rows = BlockRows {
        feature: vec![0, 0, 1, 2],
        value: vec![1.0, 1.0, 1.0, 0.0],
    };
    let p = vec![
        vec![0.5, 0.5],
        vec![0.5, 0.5],
        vec![0.1, 0.9],
        vec![0.3, 0.7],
    ];
    let sums = softmax_gradient_sums(&rows, 2, &p, &[0, 1, 1, 0], 100);
    assert_eq!(sums, vec![vec![0, -10], vec![0, 10]]);
}

/// The plan's multiclass sensitivity for the values as computed: replace
/// one row (any feature or none, any value, any class, any probabilities,
/// NaN and sums past 1 included) and the k x features integer sums move by
/// at most 4S in L1 and 2 sqrt(2) S in L2, for k = 2 to 26. Rounding to
/// nearest instead of the capped floor fails the L2 bound for large k.
#[test]
fn substitution_moves_the_class_sums_within_the_bounds() {
    let scale = 1u32 << 12;
    let s = i64::from(scale);
    let mut rng = NoiseRng::seeded(27);
    let mut pick =
        |n: u64| crate::privacy::exact::uniform_below(&mut rng, u128::from(n)).unwrap() as u64;
    let mut worst = (0f64, 0f64);
    for trial in 0..300 {
        let k = [2usize, 3, 7, 26][trial % 4];
        let m = [1usize, 2, 5][trial % 3];
        let n = 30;
        let probability = |pick: &mut dyn FnMut(u64) -> u64| -> Vec<f64> {
            let raw: Vec<f64> = (0..k).map(|_| pick(1000) as f64 + 1.0).collect();
            match pick(8) {
                0 => vec![f64::NAN; k],
                1 => vec![1.0; k],
                _ => {
                    let total: f64 = raw.iter().sum();
                    raw.iter().map(|r| r / total).collect()
                }
            }
        };
        let mut rows = BlockRows {
            feature: (0..n).map(|_| pick(m as u64 + 1) as u16).collect(),
            value: (0..n).map(|_| pick(2001) as f64 / 1000.0 - 1.0).collect(),
        };
        let mut p: Vec<Vec<f64>> = (0..n).map(|_| probability(&mut pick)).collect();
        let mut y: Vec<u16> = (0..n).map(|_| pick(k as u64) as u16).collect();
        let g0 = softmax_gradient_sums(&rows, m, &p, &y, scale);
        let i = pick(n as u64) as usize;
        rows.feature[i] = pick(m as u64 + 1) as u16;
        rows.value[i] = [1.0, -1.0, 0.3, 7.0][pick(4) as usize];
        p[i] = probability(&mut pick);
        y[i] = pick(k as u64) as u16;
        let g1 = softmax_gradient_sums(&rows, m, &p, &y, scale);
        let diffs: Vec<f64> = g0
            .iter()
            .flatten()
            .zip(g1.iter().flatten())
            .map(|(a, b)| (a - b) as f64)
            .collect();
        let l1: f64 = diffs.iter().map(|d| d.abs()).sum();
        let l2sq: f64 = diffs.iter().map(|d| d * d).sum();
        assert!(
            l1 <= params::GRADIENT_L1_MULTICLASS * s as f64,
            "k {k}: L1 {l1}"
        );
        assert!(
            l2sq <= params::GRADIENT_L2_SQ_MULTICLASS * (s * s) as f64,
            "k {k}: L2^2 {l2sq}"
        );
        worst = (
            worst.0.max(l1 / s as f64),
            worst.1.max(l2sq / (s * s) as f64),
        );
    }
    // The bounds are nearly reached, so they are not loose by a factor.
    assert!(worst.0 > 3.0 && worst.1 > 3.0, "{worst:?}");
}

/// The multiclass gradient noise by hand against the binary plan's: pure
/// DP doubles the Laplace scale (L1 4S instead of 2S: 2 x 4,915,200 grid
/// units, 150 residual units), zCDP doubles the variance (L2^2 8 S^2
/// instead of 4 S^2), whatever k; the curvature noise is unchanged (the
/// curvatures do not read the labels).
#[test]
fn multiclass_calibration_by_hand() {
    let binary = plan(1.0, 0.0, 0);
    for k in [3, 26] {
        let multi = plan(1.0, 0.0, k);
        assert_eq!(multi.classes, k);
        assert_eq!(multi.cost(), binary.cost());
        assert_eq!(
            multi.gradient_noise,
            params::Noise::Laplace {
                num: 9_830_400,
                den: 1
            }
        );
        assert_eq!(multi.curvature_noise, binary.curvature_noise);
    }
    let binary = plan(1.0, 1e-6, 0);
    let multi = plan(1.0, 1e-6, 10);
    assert_eq!(multi.scale, binary.scale);
    let ratio = multi.gradient_std().powi(2) / binary.gradient_std().powi(2);
    assert!((ratio - 2.0).abs() < 1e-5, "{ratio}");
    assert_eq!(multi.curvature_noise, binary.curvature_noise);
}

/// Rows with no feature contribute nothing, so every class's sums are pure
/// noise: their variance must be the multiclass plan's (a binary scale, or
/// one not doubled, is caught: the test allows 12%), pure and zCDP.
#[test]
fn multiclass_noise_has_the_planned_scale() {
    let rows = BlockRows {
        feature: vec![2; 40],
        value: vec![0.0; 40],
    };
    let p = vec![vec![0.2, 0.3, 0.5]; 40];
    let y = vec![1u16; 40];
    for (delta, seed) in [(0.0, 17), (1e-6, 18)] {
        let plan = plan(1.0, delta, 3);
        let mut rng = NoiseRng::seeded(seed);
        let s = f64::from(plan.scale);
        let mut draws = Vec::new();
        for _ in 0..700 {
            let g = noisy_softmax_gradient(&rows, 2, &p, &y, &plan, &mut rng).unwrap();
            assert_eq!((g.len(), g[0].len()), (3, 2));
            draws.extend(g.into_iter().flatten());
        }
        let expected = match plan.gradient_noise {
            params::Noise::Laplace { num, den } => {
                let q = (-(den as f64) / num as f64).exp();
                2.0 * q / (1.0 - q).powi(2) / (s * s)
            }
            params::Noise::Gaussian { num, den } => num as f64 / den as f64 / (s * s),
        };
        let (mean, sd) = metrics::mean_std(&draws);
        assert!(
            mean.abs() < 5.0 * expected.sqrt() / (draws.len() as f64).sqrt(),
            "mean {mean}"
        );
        assert!(
            (sd * sd / expected - 1.0).abs() < 0.12,
            "variance {} vs {expected}",
            sd * sd
        );
        if delta == 0.0 {
            // Laplace scale 150 residual units: variance about 2 x 150^2.
            assert!((expected / (2.0 * 150.0 * 150.0) - 1.0).abs() < 1e-3);
        }
    }
}

/// Three classes decided by one categorical column (a -> "x", b -> "y",
/// c -> "z", 10% of rows with another class), 6000 rows, epsilon 5: the
/// model predicts the column's class, its probabilities sum to 1 in schema
/// order, one row predicts as the table does, and the model file
/// round-trips.
#[test]
fn a_small_multiclass_table_trains_and_predicts() {
    let schema = Schema::from_json(
        r#"{"label": {"column": "y", "classes": ["x", "y", "z"]},
            "columns": [{"name": "c", "type": "categorical", "categories": ["a", "b", "c"]},
                        {"name": "noise", "type": "boolean"}]}"#,
    )
    .unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let mut csv = String::from("c,noise,y\n");
    for i in 0..6000usize {
        let c = i % 3;
        let y = if i % 10 == 0 { (c + 1) % 3 } else { c };
        csv.push_str(&format!(
            "{},{},{}\n",
            ["a", "b", "c"][c],
            i / 3 % 2,
            ["x", "y", "z"][y]
        ));
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    let plan = AlgorithmSpec::DpLinear(LinearSpec::default())
        .plan(
            Budget::new(5.0, 0.0).unwrap(),
            PublicFacts::new(&encoder, data.n_rows()),
        )
        .unwrap();
    let model = plan
        .fit(&data, &encoder, &mut NoiseRng::seeded(27), &mut |_| true)
        .unwrap();
    let outputs = model.predictor().predict_all(&data);
    let classes = data.classes.as_ref().unwrap();
    let mut correct = 0;
    for (i, o) in outputs.iter().enumerate() {
        let Output::Classes(p) = o else {
            panic!("a multiclass prediction")
        };
        assert_eq!(p.probabilities.len(), 3);
        assert!((p.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(p.class, ["x", "y", "z"][p.index]);
        // The column decides the most probable class.
        assert_eq!(p.index, i % 3, "row {i}: {p:?}");
        correct += usize::from(p.index == usize::from(classes[i]));
    }
    assert_eq!(correct, 5400);
    let one = model.predictor().predict(&data.features.row_active(4));
    assert_eq!(one, outputs[4]);
    let text = model.to_json();
    let back = Model::from_json(&text).unwrap();
    assert_eq!(back, model);
    // A file whose class tables do not match its classes is refused.
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["model"]["class_coefficients"]
        .as_array_mut()
        .unwrap()
        .pop();
    let e = Model::from_json(&value.to_string())
        .unwrap_err()
        .to_string();
    assert!(e.contains("class coefficient tables"), "{e}");
}

/// The inspection of a multiclass model names every class and shows its own
/// intercept and coefficients, which are the model's tables (class 0's in
/// `coefficients`, the others in `class_coefficients`); the text has one
/// section per class.
#[test]
fn a_multiclass_inspection_shows_every_class() {
    let schema = Schema::from_json(
        r#"{"label": {"column": "y", "classes": ["x", "y", "z"]},
            "columns": [{"name": "c", "type": "categorical", "categories": ["a", "b", "c"]}]}"#,
    )
    .unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let mut csv = String::from("c,y\n");
    for i in 0..3000usize {
        csv.push_str(&format!(
            "{},{}\n",
            ["a", "b", "c"][i % 3],
            ["x", "y", "z"][i % 3]
        ));
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    let plan = AlgorithmSpec::DpLinear(LinearSpec::default())
        .plan(
            Budget::new(5.0, 0.0).unwrap(),
            PublicFacts::new(&encoder, data.n_rows()),
        )
        .unwrap();
    let model = plan
        .fit(&data, &encoder, &mut NoiseRng::seeded(3), &mut |_| true)
        .unwrap();
    let Model::Linear(file) = &model else {
        panic!("a dp-linear model")
    };
    let crate::learn::ModelInspection::Linear(inspection) = model.inspect(&encoder) else {
        panic!("a dp-linear inspection")
    };
    let names: Vec<&str> = inspection
        .classes
        .iter()
        .map(|c| c.class.as_str())
        .collect();
    assert_eq!(names, ["x", "y", "z"]);
    let tables: Vec<&Vec<Vec<f64>>> = std::iter::once(&file.model.coefficients)
        .chain(&file.model.class_coefficients)
        .collect();
    for (c, class) in inspection.classes.iter().enumerate() {
        assert_eq!(class.intercept, tables[c][0][0]);
        let flat: Vec<f64> = tables[c][1..].iter().flatten().copied().collect();
        let shown: Vec<f64> = class.coefficients.iter().map(|o| o.coefficient).collect();
        assert_eq!(shown, flat, "class {c}");
    }
    // Class 0's table is also the top-level one (as for a binary model).
    assert_eq!(inspection.intercept, inspection.classes[0].intercept);
    assert_eq!(inspection.coefficients, inspection.classes[0].coefficients);
    let text = inspection.to_text();
    for name in ["\"x\"", "\"y\"", "\"z\""] {
        assert!(text.contains(&format!("Class {name}")), "{text}");
    }
    let json = serde_json::to_value(&inspection).unwrap();
    assert_eq!(json["classes"].as_array().unwrap().len(), 3);
    assert_eq!(json["classes"][2]["class"], "z");
}
