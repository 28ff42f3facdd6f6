//! dp-linear's output-perturbation solver: the sensitivity of the computed
//! iterate under substitution (adversarial rows, several step counts), the
//! calibration by hand, the drawn noise against the planned scale (a scale
//! off by 2x fails), the plan's refusals before any charge, the default
//! rule, and accuracy on the shipped breast-cancer set.

use super::features::{BlockRows, LinearShape};
use super::output::{self, Design, Loss, OutputPlan};
use super::*;
use crate::data::Task;
use crate::data::shipped::load_one;
use crate::learn::{AlgorithmSpec, Model, Output, PublicFacts, metrics};
use crate::privacy::{Budget, NoiseRng, PrivacyCost, mechanisms, zcdp};

/// A tiny design by hand: `K` blocks of rows `(feature, value)` (feature
/// `f == sizes[b]`: none).
fn design(blocks: &[Vec<(u16, f64)>], sizes: &[usize]) -> Design {
    let rows: Vec<BlockRows> = blocks
        .iter()
        .map(|b| BlockRows {
            feature: b.iter().map(|r| r.0).collect(),
            value: b.iter().map(|r| r.1).collect(),
        })
        .collect();
    Design::new(&rows, sizes)
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

/// Six rows, three blocks (the intercept; a two-feature one-hot block; a
/// line with values in [-1, 1]); the neighbour substitutes the last row by
/// the most different row there is (other feature, opposite extreme value,
/// flipped label). For T = 1, 5, 50, 500 and 3000 steps and two
/// regularisers, the computed iterates stay within `2 / (n lambda)` of
/// each other, and the neighbours do differ (the distance is at least
/// 0.1% of the bound once the descent has run: 0.5% was seen for the
/// Huber loss, whose clamped derivative moves less).
#[test]
fn substitution_moves_the_iterate_within_2_over_n_lambda() {
    let sizes = [1usize, 2, 1];
    let base: Vec<(u16, f64, u16, f64, f64)> = vec![
        // (one-hot feature, value, line feature, line value, label)
        (0, 1.0, 0, 0.9, 1.0),
        (1, 1.0, 0, -0.3, 0.0),
        (0, 1.0, 0, 0.2, 1.0),
        (2, 0.0, 0, -0.8, 0.0), // no one-hot feature
        (1, 1.0, 0, 0.5, 1.0),
        (0, 1.0, 0, 1.0, 1.0),
    ];
    let mut other = base.clone();
    other[5] = (1, 1.0, 0, -1.0, 0.0);
    let build = |rows: &[(u16, f64, u16, f64, f64)]| {
        let d = design(
            &[
                rows.iter().map(|_| (0u16, 1.0)).collect(),
                rows.iter().map(|r| (r.0, r.1)).collect(),
                rows.iter().map(|r| (r.2, r.3)).collect(),
            ],
            &sizes,
        );
        let y: Vec<f64> = rows.iter().map(|r| r.4).collect();
        (d, y)
    };
    let (d1, y1) = build(&base);
    let (d2, y2) = build(&other);
    // The design divides every value by sqrt(K) = sqrt(3): ||x|| <= 1.
    assert!((d1.value[2][0] - 0.9 / 3f64.sqrt()).abs() < 1e-15);
    assert!((d1.value[0][0] - 1.0 / 3f64.sqrt()).abs() < 1e-15);
    assert_eq!(d1.value[1][3], 0.0);
    assert_eq!(d1.index[1][3], 4);
    let n = base.len() as f64;
    for loss in [Loss::Logistic, Loss::Huber] {
        for lambda in [0.5, 0.05] {
            let bound = 2.0 / (n * lambda);
            for steps in [1u32, 5, 50, 500, 3000] {
                let w1 = output::descend(&d1, &y1, loss, lambda, steps, &mut |_| true).unwrap();
                let w2 = output::descend(&d2, &y2, loss, lambda, steps, &mut |_| true).unwrap();
                let gap = distance(&w1, &w2);
                assert!(gap <= bound, "{loss:?} {lambda} T={steps}: {gap} > {bound}");
                if steps >= 50 {
                    assert!(gap >= bound / 1000.0, "{loss:?} {lambda} T={steps}: {gap}");
                }
            }
        }
    }
}

/// The descent converges to the regularised minimiser: on a separable
/// one-feature set, the gradient at the result is (nearly) zero.
#[test]
fn descent_reaches_the_minimiser() {
    let xs = [-1.0, -0.5, -0.2, 0.3, 0.6, 1.0];
    let d = design(
        &[
            xs.iter().map(|_| (0u16, 1.0)).collect(),
            xs.iter().map(|&x| (0u16, x)).collect(),
        ],
        &[1, 1],
    );
    let y: Vec<f64> = xs.iter().map(|&x| f64::from(u8::from(x > 0.0))).collect();
    let lambda = 0.05;
    let w = output::descend(&d, &y, Loss::Logistic, lambda, 2000, &mut |_| true).unwrap();
    let s = 1.0 / 2f64.sqrt();
    let mut g = [lambda * w[0], lambda * w[1]];
    for (&x, &t) in xs.iter().zip(&y) {
        let z = s * w[0] + s * x * w[1];
        let r = crate::learn::ebm::sigmoid(z) - t;
        g[0] += r * s / 6.0;
        g[1] += r * s * x / 6.0;
    }
    assert!(g[0].abs() < 1e-9 && g[1].abs() < 1e-9, "{g:?}");
    assert!(w[1] > 1.0, "{w:?}");
}

fn plan(epsilon: f64, delta: f64, n: usize, k: usize, d: usize, lambda: f64) -> OutputPlan {
    output::plan(
        Budget::new(epsilon, delta).unwrap(),
        1.0,
        n,
        k,
        d,
        Task::Binary,
        lambda,
        100,
    )
    .unwrap()
}

/// Pure DP by hand: n = 1000, lambda = 1/64, d = 9: Delta = (1 + 1/1024)
/// 2 / (1000 / 64) = 0.128125; the grid is 3 Delta / 2^20; the L1
/// sensitivity is 2^20 + 9 = 1,048,585 grid steps, so at epsilon 0.5 the
/// scale is 2,097,170 steps. zCDP at (1, 1e-6): sd = Delta / sqrt(2 rho)
/// (as 8192 steps of the grid), variance (8192 + 3 / sqrt(2 rho))^2
/// steps^2 rounded up (the rounding's sqrt(d) = 3 steps of L2 sensitivity).
#[test]
fn calibration_by_hand() {
    let p = plan(0.5, 0.0, 1000, 5, 9, 1.0 / 64.0);
    let delta: f64 = 1025.0 / 1024.0 * 2.0 * 64.0 / 1000.0;
    assert!((delta - 0.128125).abs() < 1e-12);
    assert!((p.sensitivity - delta).abs() < 1e-15, "{}", p.sensitivity);
    assert!(
        (p.grid - 3.0 * delta / 1048576.0).abs() < 1e-18,
        "{}",
        p.grid
    );
    assert_eq!(
        p.noise,
        params::Noise::Laplace {
            num: 2_097_170,
            den: 1
        }
    );
    assert!((p.radius - (2.0 * std::f64::consts::LN_2 * 64.0).sqrt()).abs() < 1e-12);
    // The composition: L1 sensitivity (steps) / scale = epsilon.
    assert!((1_048_585.0 / 2_097_170.0 - 0.5f64).abs() < 1e-12);

    let g = plan(1.0, 1e-6, 1000, 5, 9, 1.0 / 64.0);
    let rho = zcdp::rho_for(1.0, 1e-6).unwrap();
    assert!((g.grid - delta / (2.0 * rho).sqrt() / 8192.0).abs() < 1e-15);
    let params::Noise::Gaussian { num, den } = g.noise else {
        panic!("a Gaussian")
    };
    let variance = num as f64 / den as f64;
    // (Delta / gamma + sqrt(d))^2 / (2 rho) = (8192 + 3 / sqrt(2 rho))^2.
    let expected = (8192.0 + 3.0 / (2.0 * rho).sqrt()).powi(2);
    assert!(
        variance >= expected && variance < expected * (1.0 + 1e-6),
        "{variance} vs {expected}"
    );
    // The regression loss: curvature 1, radius sqrt(1 / lambda).
    let r = output::plan(
        Budget::new(1.0, 0.0).unwrap(),
        1.0,
        1000,
        5,
        9,
        Task::Regression { min: 0.0, max: 1.0 },
        0.25,
        10,
    )
    .unwrap();
    assert!((r.radius - 2.0).abs() < 1e-12);
}

/// The rounded release moves by at most `Delta / gamma + sqrt(d)` in L2
/// and `sqrt(d) Delta / gamma + d` in L1 between the neighbours of the
/// sensitivity test.
#[test]
fn rounding_keeps_the_release_within_its_sensitivity() {
    let n = 6usize;
    let lambda = 0.05;
    let p = plan(1.0, 0.0, n, 2, 2, lambda);
    let xs = [-1.0, -0.5, -0.2, 0.3, 0.6, 1.0];
    let mut ys = xs;
    ys[5] = -1.0;
    let run = |xs: &[f64], flip: bool| {
        let d = design(
            &[
                xs.iter().map(|_| (0u16, 1.0)).collect(),
                xs.iter().map(|&x| (0u16, x)).collect(),
            ],
            &[1, 1],
        );
        let mut y: Vec<f64> = xs.iter().map(|&x| f64::from(u8::from(x > 0.0))).collect();
        if flip {
            y[5] = 1.0;
        }
        let w = output::descend(&d, &y, Loss::Logistic, lambda, 500, &mut |_| true).unwrap();
        output::rounded(&w, &p)
    };
    let (a, b) = (run(&xs, false), run(&ys, true));
    let l1: i128 = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum();
    let l2 = a
        .iter()
        .zip(&b)
        .map(|(x, y)| ((x - y) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(
        l1 as f64 <= 2f64.sqrt() * p.sensitivity / p.grid + 2.0,
        "{l1}"
    );
    assert!(l2 <= p.sensitivity / p.grid + 2f64.sqrt(), "{l2}");
    assert!(l2 > 0.1 * p.sensitivity / p.grid, "{l2}");
}

/// The noise the release adds has the planned scale: releasing w = 0 many
/// times, the sample variance (in coefficient units) matches the
/// variance computed here from the scale by hand (Laplace: `2 b^2` up to
/// the discrete correction, from `b = (2^20 + d) / epsilon` steps;
/// Gaussian: the planned variance) within 12%, which a scale off by 2x (4x
/// the variance) misses by far.
#[test]
fn release_noise_has_the_planned_scale() {
    for (delta, seed) in [(0.0, 11u64), (1e-6, 12)] {
        let d = 8usize;
        let p = plan(0.7, delta, 500, 4, d, 0.01);
        let mut rng = NoiseRng::seeded(seed);
        let mut draws = Vec::new();
        while draws.len() < 4000 {
            draws.extend(output::release(&vec![0.0; d], &p, &mut rng).unwrap());
        }
        let expected = match p.noise {
            params::Noise::Laplace { .. } => {
                let b = (1048576.0 + d as f64) / 0.7;
                let t = (-1.0 / b).exp();
                2.0 * t / (1.0 - t).powi(2) * p.grid * p.grid
            }
            params::Noise::Gaussian { num, den } => num as f64 / den as f64 * p.grid * p.grid,
        };
        let (mean, sd) = metrics::mean_std(&draws);
        let var = sd * sd;
        assert!(mean.abs() < 5.0 * expected.sqrt() / 63.0, "mean {mean}");
        assert!(
            (var / expected - 1.0).abs() < 0.12,
            "{delta}: variance {var} vs {expected}"
        );
        assert!((p.coefficient_std().powi(2) / expected - 1.0).abs() < 1e-3);
    }
}

/// A schema's layout by hand for the plan tests of both one-release
/// solvers: 4 numeric columns of 8 intervals (4 lines) and one more block.
pub(super) const SHAPE: LinearShape = LinearShape {
    intervals: (5, 8),
    linear: (5, 4),
    both: (9, 12),
    lines: 4,
    dimensions: [33, 5, 37],
};

/// The plan refuses before any charge: a multiclass label, a regulariser
/// out of range, too many steps, block descent's own parameters, and a
/// regulariser so small that the float error could pass the margin.
#[test]
fn refusals_before_any_charge() {
    let shape = SHAPE;
    let op = |spec: LinearSpec, task: Task, n: usize| {
        LinearSpec {
            solver: Some(LinearSolver::OutputPerturbation),
            ..spec
        }
        .plan_for(task, Budget::new(1.0, 0.0).unwrap(), n, &shape)
    };
    let message = |r: Result<LinearPlan, crate::learn::LearnError>| r.unwrap_err().to_string();
    assert!(message(op(LinearSpec::default(), Task::Multiclass { k: 3 }, 100)).contains("solver"));
    for bad in [0.0, -1.0, f64::NAN, 1e4] {
        let m = message(op(
            LinearSpec {
                regularization: Some(bad),
                ..LinearSpec::default()
            },
            Task::Binary,
            100,
        ));
        assert!(m.contains("regularization"), "{m}");
    }
    let m = message(op(
        LinearSpec {
            epochs: Some(output::MAX_STEPS + 1),
            ..LinearSpec::default()
        },
        Task::Binary,
        100,
    ));
    assert!(m.contains("epochs"), "{m}");
    for spec in [
        LinearSpec {
            ridge: Some(1.0),
            ..LinearSpec::default()
        },
        LinearSpec {
            curvature_share: Some(0.3),
            ..LinearSpec::default()
        },
    ] {
        assert!(message(op(spec, Task::Binary, 100)).contains("block-descent"));
    }
    for bad in [1.0, -0.1, f64::NAN] {
        let m = message(op(
            LinearSpec {
                range_share: Some(bad),
                ..LinearSpec::default()
            },
            Task::Binary,
            100,
        ));
        assert!(m.contains("range_share"), "{m}");
    }
    // Block descent refuses the regulariser.
    let m = LinearSpec {
        regularization: Some(0.1),
        solver: Some(LinearSolver::BlockDescent),
        ..LinearSpec::default()
    }
    .check(Task::Binary)
    .unwrap_err()
    .to_string();
    assert!(m.contains("output-perturbation"), "{m}");
    // Float error: a tiny lambda on many rows.
    let m = message(op(
        LinearSpec {
            regularization: Some(1e-9),
            ..LinearSpec::default()
        },
        Task::Binary,
        10_000_000,
    ));
    assert!(m.contains("float error"), "{m}");
    // Through the family's plan: an error, so nothing is charged.
    let facts = PublicFacts::adult_shaped(100, Task::Multiclass { k: 3 });
    assert!(
        AlgorithmSpec::DpLinear(LinearSpec {
            solver: Some(LinearSolver::OutputPerturbation),
            ..LinearSpec::default()
        })
        .plan(Budget::new(1.0, 0.0).unwrap(), facts)
        .is_err()
    );
}

/// The default solver is block descent for every task and budget; with
/// output perturbation asked for, the defaults (lambda a power of two from
/// n, epsilon and d; the steps from lambda; a 10% range share with lines)
/// are filled in the plan and recorded, so a stored spec plans the same
/// run again.
#[test]
fn default_solver_and_parameters() {
    let shape = SHAPE;
    let pure = Budget::new(1.0, 0.0).unwrap();
    let approx = Budget::new(1.0, 1e-6).unwrap();
    // The solver's own plan: no decision threshold (tests_threshold.rs).
    let p = LinearSpec {
        solver: Some(LinearSolver::OutputPerturbation),
        threshold_share: Some(0.0),
        ..LinearSpec::default()
    }
    .plan_for(Task::Binary, pure, 1000, &shape)
    .unwrap();
    assert_eq!(p.params.solver, LinearSolver::OutputPerturbation);
    assert_eq!(p.params.numeric_features, NumericFeatures::Linear);
    let op = p.output.unwrap();
    assert_eq!((op.blocks, op.dimension), (5, 5));
    // The four lines' ranges take 10% off the top (as block descent's do):
    // counts with L1 sensitivity 2 x 4, at epsilon 0.1: scale 80 rows.
    assert_eq!(p.params.range_share, output::RANGE_SHARE);
    assert_eq!(p.ranged_lines, 4);
    assert_eq!(
        p.range_noise,
        Some(params::Noise::Laplace { num: 80, den: 1 })
    );
    // The release gets epsilon 0.9: scale (2^20 + 5) / 0.9 steps.
    assert_eq!(
        op.noise,
        params::Noise::Laplace {
            num: (1048581.0f64 / 0.9).ceil() as u128,
            den: 1
        }
    );
    // m = 0.9 x 1000 / sqrt(5) = 402.5: log2 m = 8.65.
    let j = (output::REGULARIZATION_LOG2_SCALE
        - output::REGULARIZATION_POWER * (900.0 / 5f64.sqrt()).log2())
    .round()
    .clamp(output::MIN_REGULARIZATION_LOG2, 0.0);
    assert_eq!(op.lambda, 2f64.powf(j));
    assert_eq!(op.steps, output::default_steps(Loss::Logistic, op.lambda));
    assert_eq!(p.cost(), PrivacyCost::Pure { epsilon: 1.0 });
    let again = p
        .params
        .to_spec()
        .plan_for(Task::Binary, pure, 1000, &shape)
        .unwrap();
    assert_eq!(again, p);
    for (task, budget, spec) in [
        (Task::Binary, pure, LinearSpec::default()),
        (Task::Binary, approx, LinearSpec::default()),
        (
            Task::Regression { min: 0.0, max: 1.0 },
            pure,
            LinearSpec::default(),
        ),
        (Task::Multiclass { k: 3 }, pure, LinearSpec::default()),
        (
            Task::Binary,
            pure,
            LinearSpec {
                ridge: Some(2.0),
                ..LinearSpec::default()
            },
        ),
    ] {
        let p = spec.plan_for(task, budget, 1000, &shape).unwrap();
        assert_eq!(p.params.solver, LinearSolver::BlockDescent, "{task:?}");
        assert!(p.output.is_none() && p.objective.is_none());
    }
    // Steps by hand: 4 beta / lambda.
    assert_eq!(output::default_steps(Loss::Logistic, 0.25), 16);
    assert_eq!(output::default_steps(Loss::Logistic, 1.0 / 64.0), 68);
    assert_eq!(output::default_steps(Loss::Huber, 1.0 / 64.0), 260);
    assert_eq!(
        output::default_steps(Loss::Logistic, 1e-5),
        output::MAX_DEFAULT_STEPS
    );
}

/// Breast cancer (569 rows, 30 numeric columns): trained on four fifths
/// by output perturbation at pure epsilon 1 (default regulariser and
/// range share), scored
/// on the rest, with fixed seeds: mean accuracy over five seeds above 0.72
/// (the majority class is 0.63). The statement names the one mechanism, the model
/// is finite, and one release was drawn.
#[test]
fn breast_cancer_at_epsilon_1() {
    let (encoder, data) = load_one("breast-cancer", "wdbc.csv");
    let (train_rows, test_rows): (Vec<usize>, Vec<usize>) =
        (0..data.n_rows()).partition(|i| i % 5 != 0);
    let (train, test) = (data.subset(&train_rows), data.subset(&test_rows));
    let plan = AlgorithmSpec::DpLinear(LinearSpec {
        solver: Some(LinearSolver::OutputPerturbation),
        ..LinearSpec::default()
    })
    .plan(
        Budget::new(1.0, 0.0).unwrap(),
        PublicFacts::new(&encoder, train.n_rows()),
    )
    .unwrap();
    let labels = test.labels.as_ref().unwrap();
    let mut accuracies = Vec::new();
    for seed in [1u64, 2, 3, 4, 5] {
        mechanisms::take_ran();
        let model = plan
            .fit(&train, &encoder, &mut NoiseRng::seeded(seed), &mut |_| true)
            .unwrap();
        model.check_storable().unwrap();
        let Model::Linear(file) = &model else {
            panic!("a dp-linear model")
        };
        assert_eq!(file.params.solver, LinearSolver::OutputPerturbation);
        assert!(file.privacy.sigma_coefficient.is_some());
        // The release, then the decision threshold's report-noisy-max.
        let ran = mechanisms::take_ran();
        assert_eq!(
            ran,
            [
                mechanisms::DISCRETE_LAPLACE.id,
                mechanisms::REPORT_NOISY_MAX_LAPLACE.id
            ]
            .into()
        );
        let outputs = model.predictor().predict_all(&test);
        let accuracy = outputs
            .iter()
            .enumerate()
            .filter(|(i, o)| matches!(o, Output::Class(p) if p.positive == labels.get(*i)))
            .count() as f64
            / test.n_rows() as f64;
        eprintln!("output perturbation, breast cancer, epsilon 1, seed {seed}: {accuracy:.4}");
        accuracies.push(accuracy);
        let back = Model::from_json(&model.to_json()).unwrap();
        assert_eq!(back, model);
    }
    // The noise at epsilon 1 on 455 rows and 31 coefficients is large
    // (single runs from 0.69 to 0.90 were seen): the mean over five seeds
    // must clear the majority class (0.63) by 9 points.
    let mean = accuracies.iter().sum::<f64>() / accuracies.len() as f64;
    assert!(mean > 0.72, "{accuracies:?}");
}
