//! `privboost train`: train a private model and write it as JSON.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use privboost::data::{Encoder, LabelMode};
use privboost::learn::PublicFacts;
use privboost::local_dp::{LocalDp, Protocol};
use privboost::privacy::{Budget, NoiseRng};

use super::algorithm::AlgorithmArgs;
use super::files;
use super::randomize::ProtocolArg;

/// Options of `privboost train`.
#[derive(Debug, Args)]
pub struct TrainArgs {
    /// Training data: CSV with a header row.
    #[arg(long)]
    data: PathBuf,
    /// The owner's schema (JSON).
    #[arg(long)]
    schema: PathBuf,
    /// Total privacy budget epsilon (> 0); not with --local-dp-epsilon.
    #[arg(
        long,
        allow_negative_numbers = true,
        required_unless_present = "local_dp_epsilon",
        conflicts_with = "local_dp_epsilon"
    )]
    epsilon: Option<f64>,
    /// The data was randomized on the client with `privboost randomize
    /// --epsilon E`: train on it as post-processing (LazyBB + dp-1r,
    /// debiased, no central noise).
    #[arg(long, allow_negative_numbers = true)]
    local_dp_epsilon: Option<f64>,
    /// The label's share the data was randomized with (`randomize
    /// --label-epsilon`); default an equal share of every column.
    #[arg(long, allow_negative_numbers = true, requires = "local_dp_epsilon")]
    local_dp_label_epsilon: Option<f64>,
    /// The protocol the data was randomized with (`randomize --protocol`):
    /// sampled-column data is a report file, trained with `--algorithm
    /// ldp-naive-bayes`.
    #[arg(long, value_enum, requires = "local_dp_epsilon", default_value_t = ProtocolArg::AllColumns)]
    local_dp_protocol: ProtocolArg,
    /// Total delta; 0 (the default) is pure DP; > 0 lets LazyBB use advanced
    /// composition where it beats basic (else the run stays pure) and runs
    /// DP-EBM and dp-linear in zCDP.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    delta: f64,
    /// The learner and its parameters.
    #[command(flatten)]
    algorithm: AlgorithmArgs,
    /// Where to write the model.
    #[arg(long)]
    out: PathBuf,
    /// Threads training may use [default: every core, or RAYON_NUM_THREADS].
    /// The model does not depend on it, only the time.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
}

/// Train and save.
pub fn run(args: TrainArgs) -> anyhow::Result<()> {
    // Every parameter is checked, and the noise calibrated, before the data
    // is read; only the row count is taken from the file first (public).
    // The budget (central, or the local epsilon the default rule reads) is
    // checked before any file is read.
    let budget = match (args.epsilon, args.local_dp_epsilon) {
        (Some(epsilon), _) => Budget::new(epsilon, args.delta)?,
        (None, Some(local)) => Budget::new(local, 0.0).context("--local-dp-epsilon")?,
        (None, None) => anyhow::bail!("give --epsilon or --local-dp-epsilon"),
    };
    let spec = args.algorithm.spec()?;
    let schema = files::load_schema(&args.schema)?;
    let local = args
        .local_dp_epsilon
        .map(|e| {
            LocalDp::with_protocol(
                args.local_dp_protocol.value(),
                &schema,
                e,
                args.local_dp_label_epsilon,
            )
        })
        .transpose()?;
    let encoder = Encoder::new(&schema)?;
    let data = match local {
        Some(l) if l.protocol == Protocol::SampledColumn => {
            files::load_reports(&args.data, &encoder, l.epsilon)?
        }
        _ => files::load_dataset(&args.data, &encoder, LabelMode::Required)?,
    };
    let facts = PublicFacts::new(&encoder, data.n_rows()).with_local_dp(local);
    let plan = spec.plan(budget, facts)?;
    let mut noise = NoiseRng::from_os()?;

    let bar = ProgressBar::new(u64::from(plan.steps)).with_style(
        ProgressStyle::with_template("training {bar:40} {pos}/{len} steps")
            .context("progress bar template")?,
    );
    let threads = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.map_or(0, usize::from)) // 0: rayon's default
        .build()
        .context("starting the training threads")?;
    let model = threads.install(|| {
        plan.fit(&data, &encoder, &mut noise, &mut |done| {
            bar.set_position(u64::from(done));
            true
        })
    })?;
    bar.finish_and_clear();
    files::write_atomically(&args.out, model.to_json().as_bytes())?;
    // Only public facts: no accuracy, no margins (SPEC §2).
    eprintln!(
        "trained {} ({}) on {} rows: {}; parameters {}; wrote {}",
        model.algorithm(),
        if plan.defaults_used {
            "default rule"
        } else {
            "given parameters"
        },
        data.n_rows(),
        plan.cost.describe(),
        serde_json::to_string(&plan.resolved)?,
        args.out.display()
    );
    Ok(())
}
