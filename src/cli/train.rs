//! `privboost train`: train a private model and write it as JSON.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use privboost::data::{Encoder, LabelMode};
use privboost::learn::{
    self, LazyBbParams, Model, PrivacyMode, SensitivityBound, WeakLearnerKind, params,
};
use privboost::privacy::{Budget, NoiseRng};

use super::files;

/// Options of `privboost train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Training data: CSV with a header row.
    #[arg(long)]
    data: PathBuf,
    /// The owner's schema (JSON).
    #[arg(long)]
    schema: PathBuf,
    /// Total privacy budget epsilon (> 0).
    #[arg(long, allow_negative_numbers = true)]
    epsilon: f64,
    /// Total delta; 0 (the default) is pure DP, > 0 uses advanced composition.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    delta: f64,
    /// Boosting rounds tau [default: from the default rule for epsilon].
    #[arg(long)]
    rounds: Option<u32>,
    /// Learning rate lambda in (0, 1) [default: 0.25].
    #[arg(long)]
    learning_rate: Option<f64>,
    /// Density kappa in (0, 1) [default: 0.25].
    #[arg(long)]
    density: Option<f64>,
    /// The weak learner.
    #[arg(long, value_enum, default_value_t = WeakLearnerArg::OneRule)]
    weak_learner: WeakLearnerArg,
    /// Internal nodes per tree, for `--weak-learner top-down` [default: from
    /// the TopDown default rule].
    #[arg(long)]
    internal_nodes: Option<u32>,
    /// Where to write the model.
    #[arg(long)]
    out: PathBuf,
}

/// The weak learner, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WeakLearnerArg {
    /// DP decision stumps (LazyBB §4.1).
    OneRule,
    /// DP TopDown trees (LazyBB §4.2), calibrated with the proven bound.
    TopDown,
}

impl WeakLearnerArg {
    /// The library's weak learner; TopDown always with the proven bound.
    pub fn kind(self, internal_nodes: u32) -> WeakLearnerKind {
        match self {
            WeakLearnerArg::OneRule => WeakLearnerKind::OneRule,
            WeakLearnerArg::TopDown => WeakLearnerKind::TopDown {
                internal_nodes,
                bound: SensitivityBound::Proven,
            },
        }
    }
}

/// Train and save.
pub fn run(args: TrainArgs) -> anyhow::Result<()> {
    // Every parameter is checked before the data is read.
    let budget = Budget::new(args.epsilon, args.delta)?;
    let (default_tau, default_lambda, default_kappa, default_t) = match args.weak_learner {
        WeakLearnerArg::OneRule => {
            let (tau, lambda, kappa) = params::default_parameters(args.epsilon);
            (tau, lambda, kappa, None)
        }
        WeakLearnerArg::TopDown => {
            let (tau, lambda, kappa, t) = params::default_top_down_parameters(args.epsilon);
            (tau, lambda, kappa, Some(t))
        }
    };
    let defaults_used = args.rounds.is_none()
        || args.learning_rate.is_none()
        || args.density.is_none()
        || (default_t.is_some() && args.internal_nodes.is_none());
    let params = LazyBbParams {
        tau: args.rounds.unwrap_or(default_tau),
        lambda: args.learning_rate.unwrap_or(default_lambda),
        kappa: args.density.unwrap_or(default_kappa),
        weak_learner: args
            .weak_learner
            .kind(args.internal_nodes.or(default_t).unwrap_or(1)),
        privacy: PrivacyMode::Private(budget),
    }
    .check()?;
    let schema = files::load_schema(&args.schema)?;
    let encoder = Encoder::new(&schema)?;
    let data = files::load_dataset(&args.data, &encoder, LabelMode::Required)?;
    let mut noise = NoiseRng::from_os()?;

    let p = params.get();
    let bar = ProgressBar::new(u64::from(p.tau)).with_style(
        ProgressStyle::with_template("training {bar:40} {pos}/{len} rounds")
            .context("progress bar template")?,
    );
    let ensemble = learn::train(&data, &params, Some(&mut noise), &mut |done| {
        bar.set_position(u64::from(done));
        true
    })?;
    bar.finish_and_clear();
    let model = Model::new(&schema, &encoder, &params, defaults_used, &ensemble)?;
    files::write_atomically(&args.out, model.to_json().as_bytes())?;
    // Only public facts: no accuracy, no margins (SPEC §2).
    eprintln!(
        "trained LazyBB + {}: tau = {}, lambda = {}, kappa = {}{} on {} rows; spent epsilon = {}, delta = {} ({} composition, eta = {:.3}); wrote {}",
        match p.weak_learner {
            WeakLearnerKind::OneRule => "DP-1R".to_string(),
            WeakLearnerKind::TopDown { internal_nodes, .. } =>
                format!("DP-TopDown (t = {internal_nodes})"),
        },
        p.tau,
        p.lambda,
        p.kappa,
        if defaults_used { " (default rule)" } else { "" },
        data.n_rows(),
        model.privacy.epsilon,
        model.privacy.delta,
        match model.privacy.composition {
            privboost::privacy::Composition::Basic => "basic",
            privboost::privacy::Composition::Advanced => "advanced",
        },
        model.privacy.eta,
        args.out.display()
    );
    Ok(())
}
