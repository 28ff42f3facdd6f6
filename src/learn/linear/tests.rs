//! dp-linear: calibration against hand-computed values, the noise on both
//! releases against the planned scale (a doubled or halved scale is
//! caught), the block layout from a schema, accuracy on Adult and on a
//! synthetic regression, model files that round-trip and malformed ones
//! refused.

use super::features::{self, BlockRows, LinearShape};
use super::fit::{
    JointStep, cross_sums, curvature_sums, gradient_sums, noisy_cross, noisy_curvatures,
    noisy_gradient, symmetric_eigen,
};
use super::*;
use crate::data::shipped::{adult_split, load_one};
use crate::data::{Encoder, LabelMode, Schema, Task, read_csv};
use crate::learn::{AlgorithmSpec, Model, Output, PublicFacts, metrics};
use crate::privacy::{Budget, NoiseRng, PrivacyCost, mechanisms, zcdp};

/// Adult's shape with interval features: 14 one-hot columns + intercept,
/// `D_c = 14 x 2`.
const ADULT: LinearShape = LinearShape {
    intervals: (15, 28),
    linear: (15, 22),
    both: (21, 34),
    lines: 6,
    dimensions: [163, 109, 169],
};

fn plan(epsilon: f64, delta: f64, task: Task) -> LinearPlan {
    LinearSpec::default()
        .check(task)
        .unwrap()
        .plan(Budget::new(epsilon, delta).unwrap(), 32_561, &ADULT)
        .unwrap()
}

/// Pure DP at epsilon = 1, by hand: E = 2, K = 15, 20% to the curvatures.
/// epsilon_c = 0.2, so the curvature scale is D_c S / 0.2 = 28 * 65536 / 0.2
/// = 9,175,040 grid units (140 rows); epsilon_it = 0.8 / 30, so the gradient
/// scale is 2 * 65536 * 30 / 0.8 = 4,915,200 (75 residual units).
#[test]
fn pure_calibration_by_hand() {
    let p = plan(1.0, 0.0, Task::Binary);
    assert_eq!(p.cost(), PrivacyCost::Pure { epsilon: 1.0 });
    assert_eq!(p.scale, 65_536);
    assert_eq!(p.blocks, 15);
    assert_eq!(p.iterations(), 30);
    assert_eq!(
        p.curvature_noise,
        params::Noise::Laplace {
            num: 9_175_040,
            den: 1
        }
    );
    assert_eq!(
        p.gradient_noise,
        params::Noise::Laplace {
            num: 4_915_200,
            den: 1
        }
    );
    // The composition the docs state: D_c S / b_c + E K 2 S / b_it = epsilon.
    let total: f64 = 28.0 * 65536.0 / 9_175_040.0 + 30.0 * 2.0 * 65536.0 / 4_915_200.0;
    assert!((total - 1.0).abs() < 1e-12, "{total}");
    // lambda = ridge x the gradient noise's sd (sqrt 2 x 75 residual units).
    assert!(
        (p.lambda - 4.0 * 2f64.sqrt() * 75.0).abs() < 1e-9,
        "{}",
        p.lambda
    );
}

/// zCDP at epsilon = 1, delta = 1e-6: rho from the conversion (0.024356,
/// as docs/privacy.md quotes for DP-EBM), sigma_it = sqrt(2 E K / (0.8
/// rho)) = 55.50 residual units, sigma_c = sqrt(D_c / (2 x 0.2 rho)) =
/// 53.61 rows; the grid is the finest power of two keeping both below
/// 2^14.5 grid units.
#[test]
fn zcdp_calibration_by_hand() {
    let p = plan(1.0, 1e-6, Task::Binary);
    let rho = zcdp::rho_for(1.0, 1e-6).unwrap();
    assert!((rho - 0.024356).abs() < 2e-6);
    assert_eq!(
        p.cost(),
        PrivacyCost::Zcdp {
            rho,
            epsilon: 1.0,
            delta: 1e-6
        }
    );
    let sd_it = p.gradient_std();
    let sd_c = p.curvature_std();
    assert!((sd_it - 55.50).abs() < 0.01, "{sd_it}");
    assert!((sd_c - 53.61).abs() < 0.01, "{sd_c}");
    assert_eq!(p.scale, 256);
    // Rounded up, by less than a part in a million.
    assert!(sd_it >= (60.0 / (0.8 * rho)).sqrt());
    assert!(sd_it <= (60.0 / (0.8 * rho)).sqrt() * (1.0 + 1e-6));
    // rho = D_c / (2 sigma_c^2) + E K 2^2 / (2 sigma_it^2), to the rounding.
    let recomposed = 28.0 / (2.0 * sd_c * sd_c) + 30.0 * 4.0 / (2.0 * sd_it * sd_it);
    assert!(
        recomposed <= rho && recomposed > rho * (1.0 - 1e-5),
        "{recomposed}"
    );
}

/// Pure DP at epsilon = 1 with both numeric treatments on Adult, by hand:
/// K = 21 blocks, D_c = 34, 6 lines so the joint group has m = 7 and
/// P = 21 cross sums. E = 2: the diagonal gets 0.1 (scale 34 S / 0.1 =
/// 340 rows), the cross sums 0.1 (scale 2 x 21 S / 0.1 = 420 rows), each
/// gradient release 0.8 / 42 (scale 105 residual units).
#[test]
fn pure_calibration_with_lines_by_hand() {
    let p = LinearSpec {
        epochs: Some(2),
        numeric_features: Some(NumericFeatures::Both),
        range_share: Some(0.0),
        ..LinearSpec::default()
    }
    .check(Task::Binary)
    .unwrap()
    .plan(Budget::new(1.0, 0.0).unwrap(), 32_561, &ADULT)
    .unwrap();
    let s = 65_536.0;
    assert_eq!((p.blocks, p.lines, p.cross_pairs), (21, 6, 21));
    assert!((p.curvature_std() / 2f64.sqrt() - 340.0).abs() < 1e-9);
    assert!((p.cross_std() / 2f64.sqrt() - 420.0).abs() < 1e-9);
    assert!((p.gradient_std() / 2f64.sqrt() - 105.0).abs() < 1e-9);
    // D_c S / b_c + 2 P S / b_x + E K 2 S / b_it = epsilon.
    let b = |n: Option<params::Noise>| match n {
        Some(params::Noise::Laplace { num, den }) => num as f64 / den as f64,
        _ => panic!("not Laplace"),
    };
    let total = 34.0 * s / b(Some(p.curvature_noise))
        + 42.0 * s / b(p.cross_noise)
        + 42.0 * 2.0 * s / b(Some(p.gradient_noise));
    assert!((total - 1.0).abs() < 1e-12, "{total}");
    // zCDP: D_c / (2 sd_c^2) + 4 P / (2 sd_x^2) + E K 4 / (2 sd_it^2) = rho.
    let q = LinearSpec {
        epochs: Some(2),
        numeric_features: Some(NumericFeatures::Both),
        range_share: Some(0.0),
        ..LinearSpec::default()
    }
    .check(Task::Binary)
    .unwrap()
    .plan(Budget::new(1.0, 1e-6).unwrap(), 32_561, &ADULT)
    .unwrap();
    let rho = q.rho.unwrap();
    let (c, x, g) = (q.curvature_std(), q.cross_std(), q.gradient_std());
    let recomposed = 34.0 / (2.0 * c * c) + 84.0 / (2.0 * x * x) + 42.0 * 4.0 / (2.0 * g * g);
    assert!(
        recomposed <= rho && recomposed > rho * (1.0 - 1e-5),
        "{recomposed} {rho}"
    );
}

/// The default epochs by hand: delta = 0, epsilon = 5, n = 32,561, K = 15:
/// 0.003 x 0.8 x 5 x 32,561 / (2 sqrt 2 x 15) = 9.21 -> 8 (the cap); at
/// epsilon = 1, 1.84 -> 1; at epsilon = 3, 5.53 -> 4 (a power of two).
#[test]
fn default_epochs_by_hand() {
    let b = |e: f64, d: f64| Budget::new(e, d).unwrap();
    let rule = |e, d, n| params::default_epochs(Task::Binary, b(e, d), n, 15, 0.2).unwrap();
    assert_eq!(rule(5.0, 0.0, 32_561), 8);
    assert_eq!(rule(1.0, 0.0, 32_561), 1);
    assert_eq!(rule(3.0, 0.0, 32_561), 4);
    assert_eq!(rule(0.01, 0.0, 32_561), 1);
    // zCDP: 0.003^2 x 32,561^2 x 0.8 x rho / 30 = 6.2 at rho(1, 1e-6) -> 4.
    let rho = zcdp::rho_for(1.0, 1e-6).unwrap();
    let e = 9e-6 * 32_561f64.powi(2) * 0.8 * rho / 30.0;
    assert!((e - 6.2).abs() < 0.1, "{e}");
    assert_eq!(rule(1.0, 1e-6, 32_561), 4);
}

/// The cross sums carry no signal when every value is 0: pure noise of the
/// planned scale (a doubled or halved scale fails), Laplace and Gaussian.
#[test]
fn cross_noise_has_the_planned_scale() {
    let zeros = vec![0.0; 30];
    let values: Vec<&[f64]> = vec![&zeros; 7];
    for (delta, seed) in [(0.0, 17), (1e-6, 18)] {
        let p = LinearSpec {
            epochs: Some(2),
            numeric_features: Some(NumericFeatures::Both),
            range_share: Some(0.0),
            ..LinearSpec::default()
        }
        .check(Task::Binary)
        .unwrap()
        .plan(Budget::new(1.0, delta).unwrap(), 32_561, &ADULT)
        .unwrap();
        let s = f64::from(p.scale);
        let mut rng = NoiseRng::seeded(seed);
        let mut x = Vec::new();
        while x.len() < 4000 {
            x.extend(noisy_cross(&values, &p, &mut rng).unwrap());
        }
        let expected = match p.cross_noise.unwrap() {
            params::Noise::Laplace { num, den } => {
                let q = (-(den as f64) / num as f64).exp();
                2.0 * q / (1.0 - q).powi(2) / (s * s)
            }
            params::Noise::Gaussian { num, den } => num as f64 / den as f64 / (s * s),
        };
        assert_variance(&x, expected);
        if delta == 0.0 {
            // Laplace scale 420 rows: variance about 2 x 420^2.
            assert!((expected / (2.0 * 420.0 * 420.0) - 1.0).abs() < 1e-3);
        }
    }
}

/// The cross sums' bound (params.rs, item 1b) for the values as computed:
/// substituting one row (odd values included) moves each of the P sums by
/// at most 2S, so L1 <= 2 P S and L2 <= 2 sqrt(P) S; and the sums by hand.
#[test]
fn cross_sums_by_hand_and_under_substitution() {
    let s = 1i64 << 16;
    let one = [1.0, 1.0, 1.0];
    let a = [0.5, -1.0, 3.0];
    let b = [0.25, f64::NAN, -1.0];
    let sums = cross_sums(&[&one, &a, &b], 1 << 16);
    // (0,1): 0.5 - 1 + 1 (3 clamped); (0,2): 0.25 + 0 - 1; (1,2): 0.125 + 0 - 1.
    assert_eq!(sums, [s / 2, -3 * s / 4, -7 * s / 8]);
    let odd = [f64::NAN, f64::INFINITY, -1e300, 1.0, -1.0, 0.3, -0.7, 0.0];
    for i in 0..odd.len() {
        for j in 0..odd.len() {
            let mut a2 = a;
            let mut b2 = b;
            a2[1] = odd[i];
            b2[1] = odd[j];
            let moved = cross_sums(&[&one, &a2, &b2], 1 << 16);
            for (x, y) in sums.iter().zip(&moved) {
                assert!((x - y).abs() <= 2 * s, "{sums:?} {moved:?}");
            }
        }
    }
}

/// The Jacobi eigen-decomposition and the joint step by hand: [[2, 1],
/// [1, 2]] has eigenvalues 1 and 3; with h = 1, no shift and lambda = 0 the
/// step is the exact solve: (2 1; 1 2)^{-1} (3, 3) = (1, 1). A negative
/// eigenvalue is set to 0 before the ridge: [[0, 2], [2, 0]] (eigenvalues
/// 2 and -2) with lambda = 1 solves on diag(3, 1) in the eigenbasis.
#[test]
fn joint_step_by_hand() {
    let (mut values, _) = symmetric_eigen(vec![2.0, 1.0, 1.0, 2.0], 2);
    values.sort_by(f64::total_cmp);
    assert!((values[0] - 1.0).abs() < 1e-12 && (values[1] - 3.0).abs() < 1e-12);
    let step = JointStep::new(&[2.0, 2.0], &[1.0], 1.0, 0.0, 0.0).solve(&[3.0, 3.0]);
    assert!((step[0] - 1.0).abs() < 1e-12 && (step[1] - 1.0).abs() < 1e-12);
    // g = (1, 1) lies on the eigenvalue-2 vector: step 1/3 each; g = (1, -1)
    // on the -2 one (clipped to 0, plus lambda 1): step (1, -1).
    let j = JointStep::new(&[0.0, 0.0], &[2.0], 1.0, 0.0, 1.0);
    let a = j.solve(&[1.0, 1.0]);
    let b = j.solve(&[1.0, -1.0]);
    assert!((a[0] - 1.0 / 3.0).abs() < 1e-12 && (a[1] - 1.0 / 3.0).abs() < 1e-12);
    assert!((b[0] - 1.0).abs() < 1e-12 && (b[1] + 1.0).abs() < 1e-12);
    // A 4 x 4 matrix: V diag V^T reproduces it.
    let m = vec![
        4.0, 1.0, -2.0, 0.5, 1.0, 3.0, 0.0, 1.0, -2.0, 0.0, 5.0, -1.0, 0.5, 1.0, -1.0, 2.0,
    ];
    let (e, v) = symmetric_eigen(m.clone(), 4);
    for r in 0..4 {
        for c in 0..4 {
            let x: f64 = (0..4).map(|k| v[r * 4 + k] * e[k] * v[c * 4 + k]).sum();
            assert!((x - m[r * 4 + c]).abs() < 1e-10, "{r} {c}");
        }
    }
}

#[test]
fn refusals_before_any_charge() {
    for bad in [
        LinearSpec {
            epochs: Some(0),
            ..LinearSpec::default()
        },
        LinearSpec {
            learning_rate: Some(f64::NAN),
            ..LinearSpec::default()
        },
        LinearSpec {
            learning_rate: Some(2.5),
            ..LinearSpec::default()
        },
        LinearSpec {
            ridge: Some(0.0),
            ..LinearSpec::default()
        },
        LinearSpec {
            curvature_share: Some(1.0),
            ..LinearSpec::default()
        },
    ] {
        let e = bad.check(Task::Binary).unwrap_err().to_string();
        assert!(e.contains('('), "{e}");
    }
    // Too little epsilon for the exact Gaussian sampler.
    let e = LinearSpec {
        epochs: Some(1000),
        ..LinearSpec::default()
    }
    .check(Task::Binary)
    .unwrap()
    .plan(Budget::new(1e-6, 1e-6).unwrap(), 100, &ADULT)
    .unwrap_err()
    .to_string();
    assert!(e.contains("(epsilon)") && e.contains("too large"), "{e}");
    // The field mapping the API uses.
    let e = LinearSpec {
        ridge: Some(-1.0),
        ..LinearSpec::default()
    }
    .check(Task::Binary)
    .unwrap_err();
    assert_eq!(e.field(), "ridge");
}

/// The sample variance of `draws` against `expected`, within 12%: a scale
/// off by 2x (4x the variance) or 0.5x (1/4) misses by far. With 4000
/// draws the sample variance's relative sd is about 2.2% (Gaussian) and
/// 5% (Laplace, kurtosis 6), so 12% is more than 2.4 sd for Laplace; the
/// seeds are fixed.
fn assert_variance(draws: &[f64], expected: f64) {
    let (mean, sd) = metrics::mean_std(draws);
    let var = sd * sd;
    assert!(
        mean.abs() < 5.0 * expected.sqrt() / (draws.len() as f64).sqrt(),
        "mean {mean}"
    );
    assert!(
        (var / expected - 1.0).abs() < 0.12,
        "variance {var} vs {expected}"
    );
}

/// Rows with no feature contribute nothing, so both releases are pure
/// noise: their variance must be the plan's, for Laplace (pure) and
/// Gaussian (zCDP) plans.
#[test]
fn noise_has_the_planned_scale() {
    let rows = BlockRows {
        feature: vec![2; 50],
        value: vec![0.0; 50],
    };
    let residual = vec![0.7; 50];
    for (delta, seed) in [(0.0, 7), (1e-6, 8)] {
        let p = plan(1.0, delta, Task::Binary);
        let mut rng = NoiseRng::seeded(seed);
        let s = f64::from(p.scale);
        let mut g = Vec::new();
        let mut c = Vec::new();
        for _ in 0..2000 {
            g.extend(noisy_gradient(&rows, 2, &residual, &p, &mut rng).unwrap());
            c.extend(noisy_curvatures(&rows, 2, &p, &mut rng).unwrap());
        }
        // Expected variances in residual units / rows: Gaussian sigma^2;
        // discrete Laplace with scale b: 2 e^{-1/b} / (1 - e^{-1/b})^2.
        let var = |noise: params::Noise| match noise {
            params::Noise::Laplace { num, den } => {
                let q = (-(den as f64) / num as f64).exp();
                2.0 * q / (1.0 - q).powi(2) / (s * s)
            }
            params::Noise::Gaussian { num, den } => num as f64 / den as f64 / (s * s),
        };
        assert_variance(&g, var(p.gradient_noise));
        assert_variance(&c, var(p.curvature_noise));
        // By hand for the pure plan: 75 and 140 (Laplace scales) -> variances
        // about 2 x 75^2 and 2 x 140^2.
        if delta == 0.0 {
            assert!((var(p.gradient_noise) / (2.0 * 75.0 * 75.0) - 1.0).abs() < 1e-3);
            assert!((var(p.curvature_noise) / (2.0 * 140.0 * 140.0) - 1.0).abs() < 1e-3);
        }
    }
}

/// The signal passes the grid: 1000 rows with residual 1 on feature 0 and
/// -1 x value 0.5 on feature 1 sum to 500 and -250 (plus noise); the
/// curvatures to 500 and 500 x 0.25.
#[test]
fn sums_carry_the_clamped_terms() {
    let p = plan(50.0, 0.0, Task::Binary);
    let rows = BlockRows {
        feature: (0..1000).map(|i| (i % 2) as u16).collect(),
        value: (0..1000)
            .map(|i| if i % 2 == 0 { 1.0 } else { 0.5 })
            .collect(),
    };
    // Residuals beyond [-1, 1] are clamped.
    let residual: Vec<f64> = (0..1000)
        .map(|i| if i % 2 == 0 { 3.0 } else { -1.0 })
        .collect();
    let mut rng = NoiseRng::seeded(3);
    let g = noisy_gradient(&rows, 2, &residual, &p, &mut rng).unwrap();
    let c = noisy_curvatures(&rows, 2, &p, &mut rng).unwrap();
    let sg = p.gradient_std();
    let sc = p.curvature_std();
    assert!((g[0] - 500.0).abs() < 6.0 * sg, "{g:?} {sg}");
    assert!((g[1] + 250.0).abs() < 6.0 * sg, "{g:?}");
    assert!((c[0] - 500.0).abs() < 6.0 * sc, "{c:?} {sc}");
    assert!((c[1] - 125.0).abs() < 6.0 * sc, "{c:?}");
}

/// The sensitivity bounds of params.rs for the values as computed: replace
/// one row of a block by another (any feature or none, any value, any
/// residual including NaN, infinities and values far outside [-1, 1]) and
/// the exact integer sums move by at most 2S in L1 (gradients; L2 too) and
/// S per coordinate, 2S in L1 for a block of two or more features
/// (curvatures), S for a one-feature block. A term not clamped, not rounded
/// or rounded outside [-S, S] fails this.
#[test]
fn substitution_moves_the_sums_within_the_bounds() {
    let scale = 1u32 << 16;
    let s = i64::from(scale);
    let mut rng = NoiseRng::seeded(11);
    let mut pick =
        |n: u64| crate::privacy::exact::uniform_below(&mut rng, u128::from(n)).unwrap() as u64;
    let odd = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e300,
        -7.5,
        1.0,
        -1.0,
        0.999_999_999,
        -0.499_999_99,
        0.0,
    ];
    for trial in 0..400 {
        let k = [1usize, 2, 5][trial % 3];
        let n = 40;
        let value = |p: u64| -> f64 {
            if p.is_multiple_of(4) {
                odd[(p / 4 % 10) as usize]
            } else {
                (p % 2001) as f64 / 1000.0 - 1.0
            }
        };
        let mut rows = BlockRows {
            feature: (0..n).map(|_| pick(k as u64 + 1) as u16).collect(),
            value: (0..n).map(|_| value(pick(1 << 20))).collect(),
        };
        let mut residual: Vec<f64> = (0..n).map(|_| value(pick(1 << 20))).collect();
        let g0 = gradient_sums(&rows, k, &residual, scale);
        let c0 = curvature_sums(&rows, k, scale);
        let i = pick(n as u64) as usize;
        rows.feature[i] = pick(k as u64 + 1) as u16;
        rows.value[i] = value(pick(1 << 20));
        residual[i] = value(pick(1 << 20));
        let g1 = gradient_sums(&rows, k, &residual, scale);
        let c1 = curvature_sums(&rows, k, scale);
        let l1 = |a: &[i64], b: &[i64]| a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum::<i64>();
        let l2sq = |a: &[i64], b: &[i64]| {
            a.iter()
                .zip(b)
                .map(|(x, y)| ((x - y) as f64).powi(2))
                .sum::<f64>()
        };
        assert!(l1(&g0, &g1) <= 2 * s, "{g0:?} {g1:?}");
        assert!(l2sq(&g0, &g1) <= (2.0 * s as f64).powi(2));
        let s_b = if k == 1 { 1 } else { 2 };
        assert!(l1(&c0, &c1) <= s_b * s, "{c0:?} {c1:?}");
        assert!(l2sq(&c0, &c1) <= s_b as f64 * (s as f64).powi(2));
        assert!(
            c0.iter()
                .chain(&c1)
                .all(|&c| (0..=n as i64 * s).contains(&c))
        );
    }
}

#[test]
fn blocks_from_the_schema() {
    let schema = Schema::from_json(
        r#"{"label": {"column": "y", "positive": "1"}, "columns": [
            {"name": "age", "type": "numeric", "min": 0, "max": 30, "bins": 3, "missing": ["?"]},
            {"name": "c", "type": "categorical", "categories": ["a", "b"]},
            {"name": "f", "type": "boolean"},
            {"name": "t", "type": "numeric", "min": 0, "max": 10, "thresholds": [2, 5], "encoding": "thresholds"}]}"#,
    )
    .unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let blocks = features::layout(&encoder, NumericFeatures::Intervals);
    let names: Vec<&str> = blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["intercept", "age", "c", "f", "t <= 2", "t <= 5"]);
    assert_eq!(blocks[1].features.len(), 4);
    // D_c: age 2, c 2, three one-literal blocks 1 each.
    let shape = LinearShape::new(&encoder);
    assert_eq!(shape.intervals, (6, 7));
    let linear = features::layout(&encoder, NumericFeatures::Linear);
    let names: Vec<&str> = linear.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "intercept",
            "age",
            "age is missing",
            "c",
            "f",
            "t <= 2",
            "t <= 5"
        ]
    );
    // Interval midpoints 5, 15, 25 of [0, 30], mapped onto [-1, 1].
    let values: Vec<f64> = linear[1].features[0].literals.iter().map(|l| l.1).collect();
    assert_eq!(
        values,
        [2.0 * 5.0 / 30.0 - 1.0, 0.0, 2.0 * 25.0 / 30.0 - 1.0]
    );
    assert_eq!(shape.linear, (7, 1 + 1 + 2 + 1 + 1 + 1));
    // Both: the line, then the one-hot corrections (is missing among them).
    let both = features::layout(&encoder, NumericFeatures::Both);
    let names: Vec<&str> = both.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        ["intercept", "age", "age", "c", "f", "t <= 2", "t <= 5"]
    );
    assert!(both[1].is_line() && !both[2].is_line());
    assert_eq!(both[2].features.len(), 4);
    assert_eq!(shape.both, (7, 1 + 2 + 2 + 1 + 1 + 1));
    assert_eq!(shape.lines, 1);
    assert_eq!(shape.lines_of(NumericFeatures::Intervals), 0);

    let data = read_csv(
        "age,c,f,t,y\n5,a,1,1,1\n25,b,0,7,0\n?,a,0,3,1\n15,b,1,5,0\n".as_bytes(),
        &encoder,
        LabelMode::Required,
    )
    .unwrap();
    let rows = features::block_rows(&data, &linear[1]);
    assert_eq!(rows.feature, [0, 0, 1, 0]);
    assert_eq!(
        rows.value,
        [2.0 * 5.0 / 30.0 - 1.0, 2.0 * 25.0 / 30.0 - 1.0, 0.0, 0.0]
    );
    let rows = features::block_rows(&data, &blocks[1]);
    assert_eq!(rows.feature, [0, 2, 3, 1]);
    let rows = features::block_rows(&data, &blocks[5]);
    assert_eq!(rows.feature, [0, 1, 0, 0]);
}

/// Adult, canonical split, pure epsilon = 1, the defaults, one seeded run:
/// accuracy and AUC with margins below the 10-run figures of
/// docs/accuracy.md, so that a broken learner fails while noise does not.
#[test]
fn adult_at_epsilon_1() {
    let (encoder, train, test) = adult_split();
    assert_eq!(LinearShape::new(&encoder), ADULT);
    let plan = AlgorithmSpec::DpLinear(LinearSpec::default())
        .plan(
            Budget::new(1.0, 0.0).unwrap(),
            PublicFacts::new(&encoder, train.n_rows()),
        )
        .unwrap();
    mechanisms::take_ran();
    let mut epochs = Vec::new();
    let model = plan
        .fit(&train, &encoder, &mut NoiseRng::seeded(2026), &mut |e| {
            epochs.push(e);
            true
        })
        .unwrap();
    // The default rule's epochs, each reported.
    assert_eq!(epochs, (1..=plan.steps).collect::<Vec<u32>>());
    let ran = mechanisms::take_ran();
    let Model::Linear(file) = &model else {
        panic!("a dp-linear model")
    };
    let named: std::collections::BTreeSet<&str> =
        file.privacy.mechanisms.iter().map(String::as_str).collect();
    assert_eq!(named, ran);
    // The fit's noise, then the decision threshold's report-noisy-max.
    assert_eq!(
        named,
        [
            mechanisms::DISCRETE_LAPLACE.id,
            mechanisms::REPORT_NOISY_MAX_LAPLACE.id
        ]
        .into()
    );
    let outputs = model.predictor().predict_all(&test);
    let labels = test.labels.as_ref().unwrap();
    let y: Vec<bool> = (0..test.n_rows()).map(|i| labels.get(i)).collect();
    let scores: Vec<f64> = outputs
        .iter()
        .map(|o| match o {
            Output::Class(p) => p.score,
            Output::Value(_) | Output::Classes(_) => panic!("a classifier"),
        })
        .collect();
    let accuracy = outputs
        .iter()
        .zip(&y)
        .filter(|(o, y)| matches!(o, Output::Class(p) if p.positive == **y))
        .count() as f64
        / y.len() as f64;
    let auc = metrics::roc_auc(&scores, &y);
    eprintln!("dp-linear Adult epsilon 1 (seeded): AUC {auc:.4}, accuracy {accuracy:.4}");
    assert!(accuracy > 0.80, "accuracy {accuracy}");
    assert!(auc > 0.85, "AUC {auc}");
    // One row predicts as the whole table does.
    let one = model.predictor().predict(&test.features.row_active(0));
    assert_eq!(one, outputs[0]);
    // Inspection names every literal once, with the intercept apart.
    let ModelInspection::Linear(i) = model.inspect(&encoder) else {
        panic!()
    };
    assert_eq!(i.coefficients.len(), encoder.n_literals());
    assert!(i.to_text().contains("marital-status == Married-civ-spouse"));
    // The model file round-trips.
    let back = Model::from_json(&model.to_json()).unwrap();
    assert_eq!(back, model);
}

use crate::learn::ModelInspection;

/// A synthetic regression, y = 3 x + 5 [z = a] + noise-free, x in [0, 10]
/// with public bounds [0, 40]: pure epsilon = 1 on 6000 rows beats
/// predicting the midpoint by far, with linear and with interval features.
#[test]
fn synthetic_regression_beats_the_midpoint() {
    let schema = Schema::from_json(
        r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 40},
            "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 10, "bins": 20},
                        {"name": "z", "type": "categorical", "categories": ["a", "b"]}]}"#,
    )
    .unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let mut csv = String::from("x,z,y\n");
    let mut rng = NoiseRng::seeded(1);
    for i in 0..6000 {
        let x = crate::privacy::exact::uniform_below(&mut rng, 1000).unwrap() as f64 / 100.0;
        let z = if i % 2 == 0 { "a" } else { "b" };
        let y = 3.0 * x + if z == "a" { 5.0 } else { 0.0 };
        csv.push_str(&format!("{x},{z},{y}\n"));
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    let actual = data.targets.clone().unwrap();
    let midpoint = metrics::rmse(&vec![20.0; actual.len()], &actual);
    for numeric in [NumericFeatures::Linear, NumericFeatures::Intervals] {
        let plan = AlgorithmSpec::DpLinear(LinearSpec {
            numeric_features: Some(numeric),
            ..LinearSpec::default()
        })
        .plan(
            Budget::new(1.0, 0.0).unwrap(),
            PublicFacts::new(&encoder, data.n_rows()),
        )
        .unwrap();
        let model = plan
            .fit(&data, &encoder, &mut NoiseRng::seeded(4), &mut |_| true)
            .unwrap();
        let predicted: Vec<f64> = model
            .predictor()
            .predict_all(&data)
            .into_iter()
            .map(|o| match o {
                Output::Value(v) => v,
                Output::Class(_) | Output::Classes(_) => panic!("a regressor"),
            })
            .collect();
        let rmse = metrics::rmse(&predicted, &actual);
        eprintln!("synthetic {numeric:?}: RMSE {rmse:.3} against the midpoint's {midpoint:.3}");
        assert!(rmse < 0.3 * midpoint, "{numeric:?}: {rmse} vs {midpoint}");
        let Model::Linear(file) = &model else {
            panic!()
        };
        if numeric == NumericFeatures::Linear {
            // The slope per unit of x is near 3 (noise and 20 bins of 0.5).
            let i = file.model.inspect();
            let x = i.coefficients.iter().find(|c| c.feature == "x").unwrap();
            let per_unit = x.per_unit.unwrap();
            assert!((per_unit - 3.0).abs() < 0.5, "{per_unit}");
        }
    }
}

/// Abalone (the shipped regression set), pure epsilon = 1, the defaults:
/// trained on four rows in five, tested on the fifth, five seeds. The mean
/// predictor's RMSE (3.22 on the whole set) is the bar the issue sets; the
/// 5-fold figure of docs/accuracy.md is 2.73 +- 0.11 over 50 runs, so the
/// mean of five seeded runs below 3.0 has a margin of about five of its
/// standard errors, and each run below 3.22. Clamping to the public label
/// range is also checked: no prediction leaves [0, 30].
#[test]
fn abalone_at_epsilon_1_beats_the_mean() {
    let (encoder, all) = load_one("abalone", "abalone.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..all.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (all.subset(&train_rows), all.subset(&test_rows));
    let actual = test.targets.clone().unwrap();
    let mut rmses = Vec::new();
    for seed in 1..=5 {
        let plan = AlgorithmSpec::DpLinear(LinearSpec::default())
            .plan(
                Budget::new(1.0, 0.0).unwrap(),
                PublicFacts::new(&encoder, train.n_rows()),
            )
            .unwrap();
        let model = plan
            .fit(&train, &encoder, &mut NoiseRng::seeded(seed), &mut |_| true)
            .unwrap();
        let predicted: Vec<f64> = model
            .predictor()
            .predict_all(&test)
            .into_iter()
            .map(|o| match o {
                Output::Value(v) => v,
                Output::Class(_) | Output::Classes(_) => panic!("a regressor"),
            })
            .collect();
        assert!(predicted.iter().all(|v| (0.0..=30.0).contains(v)));
        rmses.push(metrics::rmse(&predicted, &actual));
    }
    let (mean, _) = metrics::mean_std(&rmses);
    eprintln!("dp-linear Abalone epsilon 1 (seeded): RMSE {rmses:?}, mean {mean:.3}");
    assert!(rmses.iter().all(|&r| r < 3.22), "{rmses:?}");
    assert!(mean < 3.0, "{rmses:?}");
}

#[test]
fn malformed_model_files_are_refused() {
    let (encoder, train, _) = adult_split();
    let plan = AlgorithmSpec::DpLinear(LinearSpec {
        epochs: Some(1),
        ..LinearSpec::default()
    })
    .plan(
        Budget::new(1.0, 1e-6).unwrap(),
        PublicFacts::new(&encoder, train.n_rows()),
    )
    .unwrap();
    let model = plan
        .fit(&train, &encoder, &mut NoiseRng::seeded(1), &mut |_| true)
        .unwrap();
    let Model::Linear(file) = &model else {
        panic!()
    };
    assert_eq!(
        file.privacy.mechanisms,
        [
            mechanisms::DISCRETE_GAUSSIAN.id,
            mechanisms::REPORT_NOISY_MAX_LAPLACE.id
        ]
    );
    let good: serde_json::Value = serde_json::from_str(&model.to_json()).unwrap();
    let refused = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = good.clone();
        edit(&mut v);
        Model::from_json(&v.to_string()).is_err()
    };
    assert!(refused(
        &|v| v["model"]["coefficients"][1] = serde_json::json!([])
    ));
    assert!(refused(
        &|v| v["model"]["blocks"][1]["features"][0]["literals"][0][0] = serde_json::json!(100_000)
    ));
    assert!(refused(
        &|v| v["model"]["blocks"][2] = v["model"]["blocks"][1].clone()
    ));
    assert!(refused(
        &|v| v["model"]["blocks"][1]["features"][0]["literals"][0][1] = serde_json::json!(1.5)
    ));
    assert!(refused(
        &|v| v["model"]["blocks"][0]["intercept"] = serde_json::json!(false)
    ));
    assert!(refused(&|v| v["algorithm"] = serde_json::json!("dp-other")));
    assert!(refused(
        &|v| v["task"] = serde_json::json!({"kind": "regression", "min": 0, "max": 1})
    ));
    assert!(!refused(&|_| {}));
}

/// Issue 25, third round: the range release (params.rs, item 0) by hand.
/// Adult with both: L = 6 lines, range share 0.1 at pure epsilon = 1, so
/// the counts get epsilon_r = 0.1 and the Laplace scale 2 x 6 / 0.1 = 120
/// rows; everything else shares 0.9: the diagonal 0.09 (scale 34 S / 0.09),
/// and the whole composes to epsilon. In zCDP the counts get variance
/// 6 / rho_r and the sum of the rho's is rho.
#[test]
fn range_calibration_by_hand() {
    let spec = LinearSpec {
        epochs: Some(2),
        numeric_features: Some(NumericFeatures::Both),
        ..LinearSpec::default()
    };
    assert_eq!(spec.check(Task::Binary).unwrap().range_share, 0.1);
    let p = spec
        .check(Task::Binary)
        .unwrap()
        .plan(Budget::new(1.0, 0.0).unwrap(), 32_561, &ADULT)
        .unwrap();
    assert_eq!(p.ranged_lines, 6);
    assert_eq!(
        p.range_noise,
        Some(params::Noise::Laplace { num: 120, den: 1 })
    );
    let s = 65_536.0;
    let b = |n: Option<params::Noise>| match n {
        Some(params::Noise::Laplace { num, den }) => num as f64 / den as f64,
        _ => panic!("not Laplace"),
    };
    assert!((b(Some(p.curvature_noise)) - 34.0 * s / 0.09).abs() <= 1.0);
    let total = 12.0 / b(p.range_noise)
        + 34.0 * s / b(Some(p.curvature_noise))
        + 42.0 * s / b(p.cross_noise)
        + 42.0 * 2.0 * s / b(Some(p.gradient_noise));
    assert!(total <= 1.0 && total > 1.0 - 1e-6, "{total}");
    // The threshold for 32 intervals: 120 ln(32 / 0.2) = 609 rows (above
    // 0.5% of n = 163); for 2 intervals, 120 ln 10 = 276.
    assert!((p.range_threshold(32) - 120.0 * 160f64.ln()).abs() < 1e-9);
    assert!((p.range_threshold(2) - 120.0 * 10f64.ln()).abs() < 1e-9);
    let q = spec
        .check(Task::Binary)
        .unwrap()
        .plan(Budget::new(1.0, 1e-6).unwrap(), 32_561, &ADULT)
        .unwrap();
    let rho = q.rho.unwrap();
    let (r, c, x, g) = (
        q.range_std(),
        q.curvature_std(),
        q.cross_std(),
        q.gradient_std(),
    );
    let rho_r = 6.0 / (r * r);
    assert!((rho_r / (0.1 * rho) - 1.0).abs() < 1e-6, "{rho_r}");
    let recomposed =
        rho_r + 34.0 / (2.0 * c * c) + 84.0 / (2.0 * x * x) + 42.0 * 4.0 / (2.0 * g * g);
    assert!(
        recomposed <= rho && recomposed > rho * (1.0 - 1e-5),
        "{recomposed} {rho}"
    );
    // No lines (intervals): no range release, whatever the share.
    let i = LinearSpec {
        range_share: Some(0.3),
        ..LinearSpec::default()
    }
    .check(Task::Binary)
    .unwrap()
    .plan(Budget::new(1.0, 0.0).unwrap(), 32_561, &ADULT)
    .unwrap();
    assert_eq!((i.ranged_lines, i.range_noise), (0, None));
    assert_eq!(
        i.curvature_noise,
        plan(1.0, 0.0, Task::Binary).curvature_noise
    );
    // Out of range: refused by the check, before any plan.
    for bad in [-0.1, 1.0, f64::NAN] {
        let e = LinearSpec {
            range_share: Some(bad),
            ..LinearSpec::default()
        }
        .check(Task::Binary)
        .unwrap_err();
        assert!(e.to_string().contains("(range_share)"), "{e}");
    }
}

/// A one-numeric-column schema (public bounds [-100, 100], 200 intervals
/// of width 1) and rows whose values are `xs`.
fn wide_column(xs: &[f64], labels: &[bool]) -> (Encoder, crate::data::Dataset) {
    let schema = Schema::from_json(
        r#"{"label": {"column": "y", "positive": "1"}, "columns": [
            {"name": "x", "type": "numeric", "min": -100, "max": 100, "bins": 200}]}"#,
    )
    .unwrap();
    let encoder = Encoder::new(&schema).unwrap();
    let mut csv = String::from("x,y\n");
    for (x, y) in xs.iter().zip(labels) {
        csv.push_str(&format!("{x},{}\n", u8::from(*y)));
    }
    let data = read_csv(csv.as_bytes(), &encoder, LabelMode::Required).unwrap();
    (encoder, data)
}

/// The range counts carry the exact counts plus noise of the planned scale
/// (a doubled or halved scale fails), Laplace and Gaussian; the exact
/// counts by hand.
#[test]
fn range_noise_has_the_planned_scale() {
    let (encoder, data) = wide_column(&[0.5, 0.7, 3.2, -99.9], &[true, false, true, false]);
    let line = features::layout(&encoder, NumericFeatures::Linear)[1].clone();
    assert!(line.is_line());
    let exact = features::literal_counts(&data, &line);
    assert_eq!(exact.len(), 200);
    assert_eq!((exact[100], exact[103], exact[0]), (2, 1, 1));
    assert_eq!(exact.iter().sum::<i64>(), 4);
    let shape = LinearShape::new(&encoder);
    for (delta, seed) in [(0.0, 21), (1e-6, 22)] {
        let p = LinearSpec {
            numeric_features: Some(NumericFeatures::Linear),
            epochs: Some(1),
            ..LinearSpec::default()
        }
        .check(Task::Binary)
        .unwrap()
        .plan(Budget::new(1.0, delta).unwrap(), 4, &shape)
        .unwrap();
        assert_eq!(p.ranged_lines, 1);
        let noise = p.range_noise.unwrap();
        let mut rng = NoiseRng::seeded(seed);
        let mut x = Vec::new();
        while x.len() < 4000 {
            let noisy = fit::noisy_line_counts(&data, &line, noise, &mut rng).unwrap();
            x.extend(noisy.iter().zip(&exact).map(|(n, e)| n - *e as f64));
        }
        let expected = match noise {
            params::Noise::Laplace { num, den } => {
                // Scale 2 / 0.1 = 20 rows.
                assert_eq!((num, den), (20, 1));
                let q = (-(den as f64) / num as f64).exp();
                2.0 * q / (1.0 - q).powi(2)
            }
            params::Noise::Gaussian { num, den } => num as f64 / den as f64,
        };
        assert_variance(&x, expected);
    }
}

/// Substituting one row moves one line's counts by at most 2 in L1 (one
/// count down, one up), the bound of params.rs item 0 (edges of the
/// bounds included; a row staying in its interval moves nothing).
#[test]
fn range_counts_under_substitution() {
    let xs = [0.5, 0.7, 3.2, -99.9, 50.0, -7.0];
    let labels = [true; 6];
    let (encoder, data) = wide_column(&xs, &labels);
    let line = features::layout(&encoder, NumericFeatures::Linear)[1].clone();
    let before = features::literal_counts(&data, &line);
    for (i, other) in [(0, 99.9), (3, 100.0), (4, -100.0), (5, -7.2), (1, 0.6)] {
        let mut ys = xs;
        ys[i] = other;
        let (_, moved) = wide_column(&ys, &labels);
        let after = features::literal_counts(&moved, &line);
        let l1: i64 = before.iter().zip(&after).map(|(a, b)| (a - b).abs()).sum();
        assert!(l1 <= 2, "{i}: {l1}");
    }
}

/// The range from noisy counts, by hand: the intervals whose count clears
/// the threshold span the range; their midpoints map onto [-1, 1], the
/// rest clamp; the bounds become the range in the column's units; fewer
/// than two intervals inside keep the public bounds.
#[test]
fn rescale_line_by_hand() {
    let (encoder, _) = wide_column(&[0.0], &[true]);
    let line = features::layout(&encoder, NumericFeatures::Linear)[1].clone();
    // Interval k is (k - 100, k - 99]: midpoint k - 99.5.
    let mut counts = vec![0.0; 200];
    counts[100] = 50.0; // midpoint 0.5
    counts[104] = 50.0; // midpoint 4.5
    counts[102] = 10.0; // below the threshold, inside the span
    counts[150] = 9.0; // below the threshold: clamped
    let mut b = line.clone();
    assert!(features::rescale_line(&mut b, &counts, 20.0));
    let (lo, hi) = b.bounds.unwrap();
    assert!(
        (lo - 0.5).abs() < 1e-9 && (hi - 4.5).abs() < 1e-9,
        "{lo} {hi}"
    );
    let v = |k: usize| b.features[0].literals[k].1;
    assert!((v(100) + 1.0).abs() < 1e-9);
    assert!((v(104) - 1.0).abs() < 1e-9);
    assert!(v(102).abs() < 1e-9);
    assert_eq!((v(0), v(150), v(199)), (-1.0, 1.0, 1.0));
    // Every value on [-1, 1] and the model's check accepts the bounds.
    assert!(b.features[0].literals.iter().all(|l| l.1.abs() <= 1.0));
    // One interval inside, none, or NaN counts: the public bounds.
    for counts in [
        {
            let mut c = vec![0.0; 200];
            c[7] = 100.0;
            c
        },
        vec![0.0; 200],
        vec![f64::NAN; 200],
    ] {
        let mut b = line.clone();
        assert!(!features::rescale_line(&mut b, &counts, 20.0));
        assert_eq!(b, line);
    }
}

/// A binary label that flips at x = 2 on values in [0, 4] while the public
/// bounds are [-100, 100]: with the private range the line separates the
/// classes at pure epsilon = 1 on 3000 rows; the released bounds hold the
/// data's range; the privacy statement names the release.
#[test]
fn ranged_line_learns_a_narrow_column() {
    let mut rng = NoiseRng::seeded(9);
    let xs: Vec<f64> = (0..3000)
        .map(|_| crate::privacy::exact::uniform_below(&mut rng, 4000).unwrap() as f64 / 1000.0)
        .collect();
    let labels: Vec<bool> = xs.iter().map(|&x| x > 2.0).collect();
    let (encoder, data) = wide_column(&xs, &labels);
    let accuracy = |range_share: f64, seed: u64| {
        let plan = AlgorithmSpec::DpLinear(LinearSpec {
            numeric_features: Some(NumericFeatures::Linear),
            range_share: Some(range_share),
            ..LinearSpec::default()
        })
        .plan(
            Budget::new(1.0, 0.0).unwrap(),
            PublicFacts::new(&encoder, data.n_rows()),
        )
        .unwrap();
        let model = plan
            .fit(&data, &encoder, &mut NoiseRng::seeded(seed), &mut |_| true)
            .unwrap();
        let predicted: Vec<bool> = model
            .predictor()
            .predict_all(&data)
            .into_iter()
            .map(|o| match o {
                Output::Class(p) => p.positive,
                _ => panic!("a classifier"),
            })
            .collect();
        let hits = predicted
            .iter()
            .zip(&labels)
            .filter(|(a, b)| a == b)
            .count();
        (hits as f64 / labels.len() as f64, model)
    };
    let (ranged, model) = accuracy(0.1, 5);
    let Model::Linear(file) = &model else {
        panic!()
    };
    let (lo, hi) = file.model.blocks[1].bounds.unwrap();
    assert!(lo > -2.0 && lo < 1.0 && hi > 3.0 && hi < 6.0, "{lo} {hi}");
    assert!(file.privacy.mechanism.contains("private range"));
    let (public, _) = accuracy(0.0, 5);
    eprintln!("narrow column: ranged {ranged:.3}, public bounds {public:.3}");
    assert!(ranged > 0.9, "{ranged}");
}

/// The default numeric treatment (issue 25, third round): both, with the
/// range share, for a binary classifier with delta > 0; intervals (no range
/// release) at delta = 0 and for multiclass; linear with ranges for
/// regression; a given treatment or share is kept.
#[test]
fn default_treatment_by_budget() {
    let mode = |spec: LinearSpec, task: Task, delta: f64| {
        let p = spec
            .plan_for(task, Budget::new(1.0, delta).unwrap(), 32_561, &ADULT)
            .unwrap();
        (
            p.params.numeric_features,
            p.params.range_share,
            p.ranged_lines,
        )
    };
    let d = LinearSpec::default();
    let regression = Task::Regression { min: 0.0, max: 1.0 };
    assert_eq!(mode(d, Task::Binary, 1e-6), (NumericFeatures::Both, 0.1, 6));
    assert_eq!(
        mode(d, Task::Binary, 0.0),
        (NumericFeatures::Intervals, 0.0, 0)
    );
    assert_eq!(
        mode(d, Task::Multiclass { k: 3 }, 1e-6),
        (NumericFeatures::Intervals, 0.0, 0)
    );
    assert_eq!(mode(d, regression, 0.0), (NumericFeatures::Linear, 0.1, 6));
    let given = LinearSpec {
        numeric_features: Some(NumericFeatures::Linear),
        range_share: Some(0.0),
        ..d
    };
    assert_eq!(
        mode(given, Task::Binary, 1e-6),
        (NumericFeatures::Linear, 0.0, 0)
    );
    let share = LinearSpec {
        range_share: Some(0.3),
        ..d
    };
    assert_eq!(
        mode(share, Task::Binary, 1e-6),
        (NumericFeatures::Both, 0.3, 6)
    );
}
