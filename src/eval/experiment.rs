//! The paper's experiment (LazyBB §5, appendices A–B) on the shipped data:
//! accuracy, AUROC and sparsity over the epsilon grid for LazyBB + DP-1R with
//! the paper's chosen parameters and with our default rule, LazyBB + DP
//! TopDown (proven calibration), and the non-private baselines.
//!
//! Like [`super::evaluate`], an owner-side research tool on public data.

use serde::Serialize;

use super::{EvalError, Method, MethodResult, Protocol, evaluate};
use crate::data::Encoder;
use crate::learn::params::{default_parameters, default_top_down_parameters};
use crate::privacy::{NoiseRng, PrivacyError};

/// The paper's epsilon grid (LazyBB §5).
pub const EPSILONS: [f64; 13] = [
    0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 1.0, 3.0, 5.0,
];

/// One row of the paper's appendix B tables: `(epsilon, kappa, lambda, tau)`.
pub type TunedRow = (f64, f64, f64, u32);

/// LazyBB Table 8: the CV-selected parameters for Adult.
pub const ADULT_TABLE_8: [TunedRow; 13] = [
    (0.05, 0.50, 0.50, 5),
    (0.10, 0.45, 0.50, 5),
    (0.15, 0.50, 0.40, 5),
    (0.20, 0.50, 0.30, 5),
    (0.25, 0.35, 0.50, 9),
    (0.30, 0.40, 0.40, 19),
    (0.35, 0.30, 0.45, 9),
    (0.40, 0.35, 0.50, 9),
    (0.45, 0.40, 0.45, 25),
    (0.50, 0.35, 0.50, 15),
    (1.00, 0.35, 0.45, 39),
    (3.00, 0.35, 0.45, 99),
    (5.00, 0.35, 0.45, 75),
];

/// LazyBB Table 10: the CV-selected parameters for Mushroom.
pub const MUSHROOM_TABLE_10: [TunedRow; 13] = [
    (0.05, 0.45, 0.50, 5),
    (0.10, 0.50, 0.40, 9),
    (0.15, 0.50, 0.45, 9),
    (0.20, 0.50, 0.40, 15),
    (0.25, 0.30, 0.40, 9),
    (0.30, 0.35, 0.50, 9),
    (0.35, 0.40, 0.35, 15),
    (0.40, 0.45, 0.40, 19),
    (0.45, 0.35, 0.20, 19),
    (0.50, 0.45, 0.25, 25),
    (1.00, 0.25, 0.30, 29),
    (3.00, 0.20, 0.20, 75),
    (5.00, 0.20, 0.50, 29),
];

/// One curve: a method at each epsilon.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// Short name for tables and legends.
    pub name: String,
    /// How its parameters were chosen.
    pub description: String,
    /// `(epsilon, result)` in grid order.
    pub points: Vec<(f64, MethodResult)>,
}

/// Everything measured on one data set.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetResults {
    /// Data set name.
    pub dataset: String,
    /// The protocol, in words.
    pub protocol: String,
    /// Repetitions with fresh noise per cell.
    pub repeats: usize,
    /// The private curves.
    pub series: Vec<Series>,
    /// Non-private baselines (independent of epsilon).
    pub baselines: Vec<(String, MethodResult)>,
}

/// Run the experiment on one data set.
///
/// `tuned` gives the paper's parameters per epsilon (rows whose epsilon is not
/// in `epsilons` are ignored); `non_private` are the LazyBB parameters of the
/// noise-free baseline `(tau, lambda, kappa)`.
#[allow(clippy::too_many_arguments)]
pub fn run_dataset(
    dataset: &str,
    protocol: &Protocol<'_>,
    protocol_text: &str,
    encoder: &Encoder,
    tuned: &[TunedRow],
    epsilons: &[f64],
    repeats: usize,
    noise: &(dyn Fn(usize) -> Result<NoiseRng, PrivacyError> + Sync),
    on_task_done: &(dyn Fn() + Sync),
) -> Result<DatasetResults, EvalError> {
    let lazybb = |epsilon: Option<f64>, tau, lambda, kappa, internal_nodes| Method::Lazybb {
        epsilon,
        delta: 0.0,
        tau,
        lambda,
        kappa,
        internal_nodes,
        paper_calibration: false,
    };
    let mut methods = Vec::new();
    let mut names = Vec::new();
    for &epsilon in epsilons {
        let &(_, kappa, lambda, tau) = tuned
            .iter()
            .find(|row| row.0 == epsilon)
            .ok_or_else(|| EvalError::Invalid(format!("no tuned row for epsilon {epsilon}")))?;
        let (d_tau, d_lambda, d_kappa) = default_parameters(epsilon);
        let (t_tau, t_lambda, t_kappa, t) = default_top_down_parameters(epsilon);
        methods.push(lazybb(Some(epsilon), tau, lambda, kappa, None));
        methods.push(lazybb(Some(epsilon), d_tau, d_lambda, d_kappa, None));
        methods.push(lazybb(Some(epsilon), t_tau, t_lambda, t_kappa, Some(t)));
        names.push(epsilon);
    }
    // Baselines: the paper's epsilon = 1 parameters without noise, a single
    // 1-Rule, the majority class.
    let &(_, kappa, lambda, tau) = tuned
        .iter()
        .find(|row| row.0 == 1.0)
        .ok_or_else(|| EvalError::Invalid("no tuned row for epsilon 1".into()))?;
    let baseline_methods = [
        lazybb(None, tau, lambda, kappa, None),
        Method::OneRule,
        Method::Majority,
    ];
    let first_baseline = methods.len();
    methods.extend(baseline_methods);
    let results = evaluate(protocol, encoder, &methods, repeats, noise, on_task_done)?;

    let descriptions = [
        (
            "DP-1R, paper's parameters",
            "LazyBB + DP-1R with the paper's CV-selected (tau, lambda, kappa) (appendix B)",
        ),
        (
            "DP-1R, default rule",
            "LazyBB + DP-1R with kappa = lambda = 0.25, tau = 15 sqrt(eps) (odd, in [5, 99])",
        ),
        (
            "DP-TopDown, default rule",
            "LazyBB + DP TopDown (proven 16-zeta calibration), t = 2, kappa 0.5, lambda 0.25, tau = 5 sqrt(eps) (odd, in [5, 25])",
        ),
    ];
    let series = descriptions
        .iter()
        .enumerate()
        .map(|(k, (name, description))| Series {
            name: name.to_string(),
            description: description.to_string(),
            points: names
                .iter()
                .enumerate()
                .map(|(e, &epsilon)| (epsilon, results[3 * e + k].clone()))
                .collect(),
        })
        .collect();
    let baseline_names = [
        format!("LazyBB without noise (tau {tau}, lambda {lambda}, kappa {kappa})"),
        "single 1-Rule (non-private)".to_string(),
        "majority class".to_string(),
    ];
    let baselines = baseline_names
        .into_iter()
        .zip(results[first_baseline..].iter().cloned())
        .collect();
    Ok(DatasetResults {
        dataset: dataset.to_string(),
        protocol: protocol_text.to_string(),
        repeats,
        series,
        baselines,
    })
}

impl DatasetResults {
    /// A Markdown table: one row per epsilon, a column group per series.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "### {}\n\n{}; {} repetitions with fresh noise per cell; mean ± sample std over repetitions x folds. Accuracy / AUROC / distinct features used.\n\n",
            self.dataset, self.protocol, self.repeats
        );
        out.push_str("| epsilon |");
        for s in &self.series {
            out.push_str(&format!(" {} |", s.name));
        }
        out.push_str("\n|---|");
        for _ in &self.series {
            out.push_str("---|");
        }
        out.push('\n');
        let rows = self.series.first().map_or(0, |s| s.points.len());
        for r in 0..rows {
            out.push_str(&format!("| {} |", self.series[0].points[r].0));
            for s in &self.series {
                let m = &s.points[r].1;
                out.push_str(&format!(
                    " {:.4} ± {:.4} / {:.3} / {:.1} |",
                    m.accuracy_mean, m.accuracy_std, m.auc_mean, m.features_used_mean
                ));
            }
            out.push('\n');
        }
        out.push_str("\nNon-private baselines:\n\n| baseline | accuracy | AUROC | features |\n|---|---|---|---|\n");
        for (name, m) in &self.baselines {
            out.push_str(&format!(
                "| {name} | {:.4} ± {:.4} | {:.3} | {:.1} |\n",
                m.accuracy_mean, m.accuracy_std, m.auc_mean, m.features_used_mean
            ));
        }
        out.push_str("\nSeries:\n\n");
        for s in &self.series {
            out.push_str(&format!("- **{}**: {}\n", s.name, s.description));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(set: &str, file: &str) -> (Encoder, crate::data::Dataset) {
        let (encoder, mut sets) = crate::data::shipped::load(set, &[file]);
        (encoder, sets.remove(0))
    }

    /// The small version of the experiment (one epsilon, two repetitions):
    /// every DP-1R curve beats the non-private single 1-Rule at epsilon 1 on
    /// both data sets.
    #[test]
    fn small_experiment_beats_the_one_rule_at_epsilon_1() {
        let seeded = |task: usize| Ok(NoiseRng::seeded(500 + task as u64));
        let (encoder, adult) = load("adult", "adult-train.csv");
        let (_, adult_test) = load("adult", "adult-test.csv");
        let adult_protocol = Protocol::TrainTest {
            train: &adult,
            test: &adult_test,
        };
        let (m_encoder, mushroom) = load("mushroom", "mushroom.csv");
        let m_protocol = Protocol::CrossValidation {
            data: &mushroom,
            folds: 5,
            split_seed: 1,
            units: None,
        };
        for (encoder, protocol, table) in [
            (&encoder, &adult_protocol, &ADULT_TABLE_8[..]),
            (&m_encoder, &m_protocol, &MUSHROOM_TABLE_10[..]),
        ] {
            let results = run_dataset(
                "t",
                protocol,
                "t",
                encoder,
                table,
                &[1.0],
                2,
                &seeded,
                &|| (),
            )
            .unwrap();
            let one_rule = results.baselines[1].1.accuracy_mean;
            for series in &results.series[..2] {
                let acc = series.points[0].1.accuracy_mean;
                assert!(
                    acc > one_rule,
                    "{}: {acc} vs 1-Rule {one_rule}",
                    series.name
                );
            }
            assert_eq!(results.series.len(), 3);
            assert!(results.to_markdown().contains("| 1 |"));
        }
    }

    #[test]
    fn tables_cover_the_grid() {
        for table in [&ADULT_TABLE_8, &MUSHROOM_TABLE_10] {
            let eps: Vec<f64> = table.iter().map(|r| r.0).collect();
            assert_eq!(eps, EPSILONS.to_vec());
        }
    }
}
