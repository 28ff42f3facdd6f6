//! `privboost eval`: accuracy and ROC AUC of LazyBB under a train/test split
//! or k-fold cross-validation, repeated with fresh noise, over a parameter
//! grid if asked. Owner-side: it reports accuracy on the data it reads.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use privboost::data::unit::UnitKey;
use privboost::data::{Dataset, Encoder, LabelMode, Task};
use privboost::eval::{self, Method, MethodResult, Protocol, paper_grid};
use privboost::learn::params;
use privboost::privacy::{Budget, NoiseRng};

use super::algorithm::{AlgorithmArg, AlgorithmArgs};
use super::files;

/// Options of `privboost eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Data (CSV with a header row); the training set when --test is given.
    #[arg(long)]
    data: PathBuf,
    /// The schema (JSON).
    #[arg(long)]
    schema: PathBuf,
    /// A separate test set; without it, k-fold cross-validation on --data.
    #[arg(long, conflicts_with = "folds")]
    test: Option<PathBuf>,
    /// Number of cross-validation folds.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// Seed of the row shuffle that assigns the folds (not privacy noise:
    /// noise always comes from the OS).
    #[arg(long, default_value_t = 1)]
    split_seed: u64,
    /// Total epsilon; a comma-separated list evaluates each, and `inf`
    /// evaluates LazyBB without noise (non-private).
    #[arg(
        long,
        value_delimiter = ',',
        required = true,
        allow_negative_numbers = true
    )]
    epsilon: Vec<String>,
    /// Total delta (0 = pure DP).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    delta: f64,
    /// Rounds tau (comma-separated list allowed).
    #[arg(long, value_delimiter = ',')]
    rounds: Vec<u32>,
    /// Learning rate lambda (comma-separated list allowed).
    #[arg(long, value_delimiter = ',')]
    learning_rate: Vec<f64>,
    /// Density kappa (comma-separated list allowed).
    #[arg(long, value_delimiter = ',')]
    density: Vec<f64>,
    /// The weak learner: `dp-1r` (DP 1-Rules) or `dp-top-down` (DP TopDown trees).
    #[arg(long, value_enum, default_value_t = super::algorithm::WeakLearnerArg::OneRule)]
    weak_learner: super::algorithm::WeakLearnerArg,
    /// Internal nodes per TopDown tree (comma-separated list allowed).
    #[arg(long, value_delimiter = ',', default_value = "3")]
    internal_nodes: Vec<u32>,
    /// LazyBB as `train` runs it, binary label: share of epsilon for the
    /// vote threshold, in [0, 0.5]; 0 for none [default: the largest of
    /// 0.025, 0.05, 0.1, 0.2 at most 100 / (n epsilon), else 0.025].
    #[arg(long)]
    vote_threshold_share: Option<f64>,
    /// TopDown calibration: `proven` (16 zeta, meets epsilon) or `paper`
    /// (the paper's 4 zeta: does NOT meet the stated epsilon; for reproducing
    /// its figures only).
    #[arg(long, value_enum, default_value_t = CalibrationArg::Proven)]
    calibration: CalibrationArg,
    /// Use the paper's Table 1 grid for every parameter not given.
    #[arg(long)]
    grid: bool,
    /// Repetitions with fresh noise.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Also evaluate the non-private baselines (majority class, single 1-Rule).
    #[arg(long)]
    baselines: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Evaluate a learner at its defaults unless its flags below are given
    /// (through the same plan and fit as `train`). `lazybb` with none of the
    /// grid's options (--rounds, --learning-rate, --density, --grid,
    /// --baselines, --weak-learner dp-top-down) is LazyBB as `train` runs it,
    /// vote threshold included; without --algorithm, the grid tool.
    #[arg(long, value_enum)]
    algorithm: Option<AlgorithmArg>,
    /// DP-EBM: epochs [default: 10, 20 for regression, 5 with --delta 0];
    /// dp-linear [default: 1 to 8 from n, the budget and the blocks].
    #[arg(long)]
    epochs: Option<u32>,
    /// DP-EBM: target bins per feature [default: 4 to 64 from the signal-to-noise ratio of a leaf sum; 32 for k classes].
    #[arg(long)]
    max_bins: Option<u32>,
    /// DP-EBM: leaves per iteration [default: 16 for binary and regression
    /// labels, 3 for k classes].
    #[arg(long)]
    max_leaves: Option<u32>,
    /// DP-EBM: share of the budget for the binning [default: 0.1].
    #[arg(long)]
    binning_share: Option<f64>,
    /// DP-EBM regression: residual clip in label units [default: a quarter
    /// of the label's public range].
    #[arg(long)]
    residual_clip: Option<f64>,
    /// dp-linear: ridge penalty in units of the gradient noise [default: 4].
    #[arg(long)]
    ridge: Option<f64>,
    /// dp-linear: share of the budget for the curvatures [default: 0.2].
    #[arg(long)]
    curvature_share: Option<f64>,
    /// dp-linear: numeric interval columns as `intervals`, `linear` or `both`.
    #[arg(long, value_enum)]
    numeric_features: Option<super::algorithm::NumericFeaturesArg>,
    /// dp-linear: share of the budget for the lines' private ranges (0: the
    /// schema's bounds).
    #[arg(long)]
    range_share: Option<f64>,
    /// dp-linear: `block-descent`, `output-perturbation` (binary
    /// classification and regression) or `objective-perturbation`
    /// (classification, --delta 0) [default: block-descent].
    #[arg(long, value_enum)]
    solver: Option<super::algorithm::SolverArg>,
    /// dp-linear output and objective perturbation: the regulariser lambda
    /// [default: from n, the budget and the feature count].
    #[arg(long)]
    regularization: Option<f64>,
    /// dp-linear and DPBoost, binary label: share of the budget for the
    /// decision threshold, in [0, 0.5]; 0 for none [default: from n and
    /// epsilon].
    #[arg(long)]
    threshold_share: Option<f64>,
    /// DPBoost: trees per ensemble [default: 10].
    #[arg(long)]
    trees_per_ensemble: Option<u32>,
    /// DPBoost: number of ensembles [default: 1].
    #[arg(long)]
    ensembles: Option<u32>,
    /// auto: share of the training rows held out to score the candidates.
    #[arg(long)]
    validation_share: Option<f64>,
    /// DPBoost: tree depth [default: 3].
    #[arg(long)]
    max_depth: Option<u32>,
    /// DPBoost: share of each ensemble's epsilon for the splits [default: 0.5].
    #[arg(long)]
    split_share: Option<f64>,
    /// DPBoost: share of epsilon for the noisy initial score [default: 0.05].
    #[arg(long)]
    init_share: Option<f64>,
    /// DPBoost: leaf values as `newton` steps from noisy sums or the
    /// paper's `clipped-mean` [default: newton].
    #[arg(long, value_enum)]
    leaves: Option<super::algorithm::LeavesArg>,
}

/// The schema's encoder and the data `eval` reads.
struct EvalFiles {
    encoder: Encoder,
    data: Dataset,
    /// With a privacy unit, each row's unit key (folds keep units whole).
    units: Option<Vec<UnitKey>>,
    test: Option<Dataset>,
}

impl EvalFiles {
    fn load(args: &EvalArgs) -> anyhow::Result<EvalFiles> {
        let schema = files::load_schema(&args.schema)?;
        let encoder = Encoder::new(&schema)?;
        let report = files::load_report(&args.data, &encoder, LabelMode::Required)?;
        let (data, units) = (report.dataset, report.units);
        let test = match &args.test {
            Some(path) => Some(files::load_dataset(path, &encoder, LabelMode::Required)?),
            None => None,
        };
        Ok(EvalFiles {
            encoder,
            data,
            units,
            test,
        })
    }

    /// Train/test when a test file was given, else k-fold CV; and a line
    /// describing it.
    fn protocol(&self, args: &EvalArgs) -> (Protocol<'_>, String) {
        match &self.test {
            Some(test) => (
                Protocol::TrainTest {
                    train: &self.data,
                    test,
                },
                format!(
                    "train on {} rows, test on {} rows",
                    self.data.n_rows(),
                    test.n_rows()
                ),
            ),
            None => (
                Protocol::CrossValidation {
                    data: &self.data,
                    folds: args.folds,
                    split_seed: args.split_seed,
                    units: self.units.as_deref(),
                },
                format!(
                    "{}-fold cross-validation on {} rows{} (split seed {})",
                    args.folds,
                    self.data.n_rows(),
                    match &self.encoder.schema().privacy_unit {
                        Some(u) => format!(
                            " of {} privacy units, each unit's rows in one fold (unit {:?}, at most {} rows each)",
                            self.units.as_ref().map_or(0, |k| {
                                k.iter().collect::<std::collections::HashSet<_>>().len()
                            }),
                            u.column,
                            u.max_rows
                        ),
                        None => String::new(),
                    },
                    args.split_seed
                ),
            ),
        }
    }
}

/// `eval --algorithm NAME` for a learner other than LazyBB's grid tool:
/// every epsilon of the list, `repeats` x folds runs each, through
/// `eval::learners`.
fn run_learner(args: &EvalArgs, algorithm: AlgorithmArg) -> anyhow::Result<()> {
    if !args.rounds.is_empty() || !args.density.is_empty() || args.grid || args.baselines {
        bail!(
            "--rounds, --density, --grid and --baselines are LazyBB's grid options, not available with --algorithm or with a schema that asks for private bins (give that learner's flags)"
        );
    }
    let spec = AlgorithmArgs {
        learning_rate: match args.learning_rate.as_slice() {
            [] => None,
            [one] => Some(*one),
            _ => bail!("--algorithm takes one --learning-rate"),
        },
        epochs: args.epochs,
        max_bins: args.max_bins,
        max_leaves: args.max_leaves,
        binning_share: args.binning_share,
        residual_clip: args.residual_clip,
        ridge: args.ridge,
        curvature_share: args.curvature_share,
        numeric_features: args.numeric_features,
        range_share: args.range_share,
        solver: args.solver,
        regularization: args.regularization,
        threshold_share: args.threshold_share,
        trees_per_ensemble: args.trees_per_ensemble,
        ensembles: args.ensembles,
        max_depth: args.max_depth,
        split_share: args.split_share,
        init_share: args.init_share,
        leaves: args.leaves,
        validation_share: args.validation_share,
        vote_threshold_share: args.vote_threshold_share,
        ..AlgorithmArgs::defaults(algorithm)
    }
    .spec()?;
    let files = EvalFiles::load(args)?;
    let (protocol, description) = files.protocol(args);
    let encoder = &files.encoder;
    println!("{description}");
    let mut results = Vec::new();
    for text in &args.epsilon {
        let Some(epsilon) = parse_epsilon(text)? else {
            bail!("--algorithm evaluates private runs only; drop `inf`");
        };
        let budget = Budget::new(epsilon, args.delta)?;
        let runs = eval::task_count(&protocol, 1, args.repeats);
        let bar = ProgressBar::new(runs as u64).with_style(
            ProgressStyle::with_template("evaluating {bar:40} {pos}/{len} runs, eta {eta}")
                .context("progress bar template")?,
        );
        let r = eval::learners::evaluate_spec(
            &protocol,
            encoder,
            &spec,
            budget,
            args.repeats,
            &|_| NoiseRng::from_os(),
            &|| bar.inc(1),
        )?;
        bar.finish_and_clear();
        let metrics = match r.scores {
            eval::learners::Scores::Class {
                accuracy,
                auc,
                positive_rate,
                ..
            } => format!(
                "accuracy {:.4} ± {:.4}, ROC AUC {:.4} ± {:.4}, predicted positive {:.4}",
                accuracy.mean, accuracy.std, auc.mean, auc.std, positive_rate.mean
            ),
            eval::learners::Scores::Regression { rmse, mae } => format!(
                "RMSE {:.4} ± {:.4}, MAE {:.4} ± {:.4}",
                rmse.mean, rmse.std, mae.mean, mae.std
            ),
            eval::learners::Scores::Multiclass { accuracy, macro_f1 } => format!(
                "accuracy {:.4} ± {:.4}, macro-F1 {:.4} ± {:.4}",
                accuracy.mean, accuracy.std, macro_f1.mean, macro_f1.std
            ),
        };
        println!(
            "{} epsilon {} delta {}: {metrics} over {} runs; parameters {}",
            spec.name().as_str(),
            epsilon,
            args.delta,
            r.runs,
            serde_json::to_string(&r.spec)?
        );
        results.push(r);
    }
    if let Some(path) = &args.json {
        let value = serde_json::json!({
            "std": "sample standard deviation over repeats x folds runs",
            "software_version": privboost::learn::model::SOFTWARE_VERSION,
            "results": results,
        });
        files::write_atomically(path, serde_json::to_string_pretty(&value)?.as_bytes())?;
    }
    Ok(())
}

/// Which TopDown sensitivity bound to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum CalibrationArg {
    /// 16 zeta per split (proved in docs/privacy.md).
    Proven,
    /// The paper's 4 zeta (too small; not private at the stated epsilon).
    Paper,
}

/// Run the evaluation and print one line per cell.
pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    if let Some(algorithm) = args.algorithm
        && algorithm != AlgorithmArg::Lazybb
    {
        return run_learner(&args, algorithm);
    }
    // LazyBB's grid path trains on the schema's literals directly; private
    // bins need the family's plan, which runs the binning phase first, and
    // a regression or multiclass label gets the plan's refusal with its
    // reason (LazyBB cannot do regression) instead of the grid's "no
    // labels", and a privacy unit needs the plan to work at the per-row
    // budget (issue 28).
    //
    // `--algorithm lazybb` without any of the grid's options measures the
    // learner as `train` runs it (the same plan and fit, with its vote
    // threshold), as every other `--algorithm` does.
    let schema = files::load_schema(&args.schema)?;
    let lazybb_as_trained = (args.algorithm == Some(AlgorithmArg::Lazybb)
        || args.vote_threshold_share.is_some())
        && args.rounds.is_empty()
        && args.learning_rate.is_empty()
        && args.density.is_empty()
        && !args.grid
        && !args.baselines
        && args.weak_learner == super::algorithm::WeakLearnerArg::OneRule
        && args.calibration == CalibrationArg::Proven;
    if args.vote_threshold_share.is_some() && !lazybb_as_trained {
        bail!(
            "--vote-threshold-share is a parameter of LazyBB as `train` runs it, not of the grid tool: drop --rounds, --learning-rate, --density, --grid, --baselines and --weak-learner"
        );
    }
    if lazybb_as_trained
        || schema.has_private_bins()
        || !matches!(schema.task(), Task::Binary)
        || schema.privacy_unit.is_some()
    {
        return run_learner(&args, AlgorithmArg::Lazybb);
    }
    let methods = methods(&args)?;
    if args.calibration == CalibrationArg::Paper {
        if args.weak_learner != super::algorithm::WeakLearnerArg::TopDown {
            bail!("--calibration paper applies to --weak-learner dp-top-down only");
        }
        eprintln!(
            "WARNING: --calibration paper uses the paper's TopDown sensitivity (4 zeta), which is too small: these runs do NOT meet the stated epsilon (see docs/privacy.md). Use them only to compare with the paper's figures."
        );
    }
    let files = EvalFiles::load(&args)?;
    let (protocol, description) = files.protocol(&args);
    let encoder = &files.encoder;
    let tasks = eval::task_count(&protocol, methods.len(), args.repeats);
    let bar = ProgressBar::new(tasks as u64).with_style(
        ProgressStyle::with_template("evaluating {bar:40} {pos}/{len} runs, eta {eta}")
            .context("progress bar template")?,
    );
    let results = eval::evaluate(
        &protocol,
        encoder,
        &methods,
        args.repeats,
        &|_| NoiseRng::from_os(),
        &|| bar.inc(1),
    )?;
    bar.finish_and_clear();

    println!(
        "{description}; {} repeats with fresh noise; mean ± sample std over {} runs per cell",
        args.repeats,
        tasks / methods.len().max(1)
    );
    println!("{}", header());
    for r in &results {
        println!("{}", row(r));
    }
    // The best cell per epsilon, where a grid gave several. Chosen on the
    // evaluation data itself, so the figure is optimistic (and the choice is
    // not private: PAPERS.md §4 item 12).
    let mut epsilons: Vec<f64> = results
        .iter()
        .filter_map(|r| match r.method {
            Method::Lazybb {
                epsilon: Some(e), ..
            } => Some(e),
            _ => None,
        })
        .collect();
    epsilons.sort_by(f64::total_cmp);
    epsilons.dedup();
    for epsilon in epsilons {
        let cells: Vec<&MethodResult> = results
            .iter()
            .filter(|r| matches!(r.method, Method::Lazybb { epsilon: Some(e), .. } if e == epsilon))
            .collect();
        if cells.len() > 1
            && let Some(best) = cells
                .iter()
                .max_by(|a, b| a.accuracy_mean.total_cmp(&b.accuracy_mean))
        {
            println!(
                "best of {} cells at epsilon {epsilon} (chosen on this data, so optimistic):\n{}",
                cells.len(),
                row(best)
            );
        }
    }
    if let Some(path) = &args.json {
        let value = serde_json::json!({
            "protocol": description,
            "repeats": args.repeats,
            "std": "sample standard deviation over repeats x folds runs",
            "software_version": privboost::learn::model::SOFTWARE_VERSION,
            "results": results,
        });
        files::write_atomically(path, serde_json::to_string_pretty(&value)?.as_bytes())?;
    }
    Ok(())
}

/// The cells: every combination of the given (or grid, or default) values.
fn methods(args: &EvalArgs) -> anyhow::Result<Vec<Method>> {
    let mut methods = Vec::new();
    for text in &args.epsilon {
        let epsilon = parse_epsilon(text)?;
        let (default_tau, default_lambda, default_kappa) =
            params::default_parameters(epsilon.unwrap_or(f64::INFINITY));
        let pick = |given: &[f64], grid: &[f64], default: f64| -> Vec<f64> {
            if !given.is_empty() {
                given.to_vec()
            } else if args.grid {
                grid.to_vec()
            } else {
                vec![default]
            }
        };
        let taus: Vec<u32> = if !args.rounds.is_empty() {
            args.rounds.clone()
        } else if args.grid {
            paper_grid::TAU.to_vec()
        } else {
            vec![default_tau]
        };
        for &tau in &taus {
            for &lambda in &pick(&args.learning_rate, &paper_grid::LAMBDA, default_lambda) {
                for &kappa in &pick(&args.density, &paper_grid::KAPPA, default_kappa) {
                    let nodes: Vec<Option<u32>> = match args.weak_learner {
                        super::algorithm::WeakLearnerArg::OneRule => vec![None],
                        super::algorithm::WeakLearnerArg::TopDown => {
                            args.internal_nodes.iter().map(|&t| Some(t)).collect()
                        }
                    };
                    for internal_nodes in nodes {
                        methods.push(Method::Lazybb {
                            epsilon,
                            delta: args.delta,
                            tau,
                            lambda,
                            kappa,
                            internal_nodes,
                            paper_calibration: args.calibration == CalibrationArg::Paper,
                        });
                    }
                }
            }
        }
    }
    if args.baselines {
        methods.push(Method::OneRule);
        methods.push(Method::Majority);
    }
    Ok(methods)
}

fn parse_epsilon(text: &str) -> anyhow::Result<Option<f64>> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("inf") {
        return Ok(None);
    }
    let value: f64 = text
        .parse()
        .with_context(|| format!("epsilon: not a number: {text}"))?;
    if !(value.is_finite() && value > 0.0) {
        bail!("epsilon must be a finite number > 0 (or `inf` for the non-private run), got {text}");
    }
    Ok(Some(value))
}

fn header() -> String {
    format!(
        "{:<14} {:>8} {:>7} {:>4} {:>6} {:>6}  {:<17}  {:<17}  {:>8}  {:>8}",
        "method",
        "epsilon",
        "delta",
        "tau",
        "lambda",
        "kappa",
        "accuracy",
        "AUC",
        "features",
        "literals"
    )
}

fn row(r: &MethodResult) -> String {
    let (name, epsilon, delta, tau, lambda, kappa) = match r.method {
        Method::Lazybb {
            epsilon,
            delta,
            tau,
            lambda,
            kappa,
            internal_nodes,
            paper_calibration,
        } => (
            match (internal_nodes, paper_calibration) {
                (None, _) => "lazybb-1r".to_string(),
                (Some(t), false) => format!("lazybb-td{t}"),
                (Some(t), true) => format!("lazybb-td{t}-PAPER"),
            },
            epsilon.map_or("inf".into(), |e| format!("{e}")),
            format!("{delta}"),
            tau.to_string(),
            format!("{lambda:.2}"),
            format!("{kappa:.2}"),
        ),
        Method::OneRule => (
            "1-rule (NP)".to_string(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ),
        Method::Majority => (
            "majority".to_string(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
        ),
    };
    format!(
        "{:<14} {:>8} {:>7} {:>4} {:>6} {:>6}  {:<17}  {:<17}  {:>8.1}  {:>8.1}",
        name,
        epsilon,
        delta,
        tau,
        lambda,
        kappa,
        format!("{:.4} ± {:.4}", r.accuracy_mean, r.accuracy_std),
        format!("{:.4} ± {:.4}", r.auc_mean, r.auc_std),
        r.features_used_mean,
        r.literals_used_mean
    )
}
