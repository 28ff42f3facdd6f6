//! `privboost randomize`: local-DP collection on the data owner's side.
//!
//! Two protocols (docs/privacy.md, "Local DP collection"):
//!
//! - `all-columns` (the default, the first protocol): every cell of every
//!   row is replaced by a k-ary randomized response over its column's values
//!   (`local_dp::Domains`, `local_dp::randomized_response`), the label by binary
//!   randomized response, and the output is a CSV of the same schema. Each
//!   row is `epsilon`-local DP by basic composition over its columns.
//! - `sampled-column`: each row draws one feature column uniformly and
//!   reports only that column's (value, label) pair, by randomized response
//!   at the full epsilon (`local_dp::sampled_column`, which has the privacy
//!   argument); the output has the columns `reported_column`,
//!   `reported_value` and the label. Much more accurate at small epsilon
//!   (docs/accuracy.md); train on it with `ldp-naive-bayes`.
//!
//! Noise comes from the OS CSPRNG; there is no seed.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use privboost::data::Encoder;
use privboost::local_dp::randomized_response::RandomizedResponse;
use privboost::local_dp::sampled_column::{REPORTED_COLUMN, REPORTED_VALUE, SampledColumn};
use privboost::local_dp::{Domains, LocalDp, Protocol};
use privboost::privacy::NoiseRng;

use super::files;

/// Options of `privboost randomize`.
#[derive(Debug, Args)]
pub struct RandomizeArgs {
    /// The public schema the server will encode the upload with (JSON).
    #[arg(long)]
    schema: PathBuf,
    /// Per-row local epsilon (> 0): the sum of the columns' and the label's epsilons.
    #[arg(long, allow_negative_numbers = true)]
    epsilon: f64,
    /// The label's share of epsilon (all-columns only); default an equal
    /// share of every column, epsilon / (feature columns + 1).
    #[arg(long, allow_negative_numbers = true)]
    label_epsilon: Option<f64>,
    /// all-columns: every column and the label, epsilon split over them;
    /// sampled-column: one uniformly drawn column per row, reported with
    /// the label at the full epsilon (train with ldp-naive-bayes).
    #[arg(long, value_enum, default_value_t = ProtocolArg::AllColumns)]
    protocol: ProtocolArg,
    /// The raw rows: CSV with a header row.
    input: PathBuf,
    /// Where to write the randomized CSV.
    #[arg(short = 'o', long = "out")]
    out: PathBuf,
}

/// The local-DP protocol, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtocolArg {
    /// Every column and the label, each at its share of epsilon.
    AllColumns,
    /// One uniformly drawn column per row, with the label, at the full epsilon.
    SampledColumn,
}

impl ProtocolArg {
    /// The library's value.
    pub fn value(self) -> Protocol {
        match self {
            ProtocolArg::AllColumns => Protocol::AllColumns,
            ProtocolArg::SampledColumn => Protocol::SampledColumn,
        }
    }
}

/// Randomize `input` into `out`.
pub fn run(args: RandomizeArgs) -> anyhow::Result<()> {
    if !(args.epsilon.is_finite() && args.epsilon > 0.0) {
        bail!(
            "--epsilon must be a finite number > 0, got {}",
            args.epsilon
        );
    }
    if let Some(l) = args.label_epsilon
        && !(l.is_finite() && l > 0.0 && l < args.epsilon)
    {
        bail!(
            "--label-epsilon must be a finite number > 0 and below --epsilon ({}), got {l}",
            args.epsilon
        );
    }
    if args.protocol == ProtocolArg::SampledColumn {
        if args.label_epsilon.is_some() {
            bail!(
                "--label-epsilon is for --protocol all-columns: sampled-column reports the label jointly with one column at the full epsilon"
            );
        }
        return run_sampled(&args);
    }
    let schema = files::load_schema(&args.schema)?;
    let local = LocalDp::new(&schema, args.epsilon, args.label_epsilon)
        .with_context(|| format!("schema {}", args.schema.display()))?;
    let encoder = Encoder::new(&schema)?;
    let domains = Domains::new(&schema)?;
    let feature_epsilon = local.feature_epsilon(&schema);
    let label_rr = RandomizedResponse::new(2, local.label_epsilon).context("label epsilon")?;
    let column_rr = domains
        .columns
        .iter()
        .map(|d| {
            d.as_ref()
                .map(|d| RandomizedResponse::new(d.values.len() as u32, feature_epsilon))
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()
        .context("a column's epsilon")?;
    let mut rng = NoiseRng::from_os()?;

    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(files::open_csv_text(&args.input)?);
    let header = reader
        .headers()
        .with_context(|| format!("data {}: header", args.input.display()))?
        .clone();
    // Each header field: Some(schema column), or None for the label.
    let roles = header_roles(&header, &schema)
        .with_context(|| format!("data {}: header", args.input.display()))?;

    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(&header)?;
    let mut active = Vec::new();
    let mut out = Vec::with_capacity(header.len());
    let mut rows = 0usize;
    for (i, record) in reader.records().enumerate() {
        let row = i + 1;
        let record = record.with_context(|| format!("data {}: row {row}", args.input.display()))?;
        out.clear();
        for (value, role) in record.iter().zip(&roles) {
            let cell = match role {
                Role::Label => {
                    let v = domains.label_index(&encoder, value, row)?;
                    domains.label[label_rr.sample(&mut rng, v)? as usize].clone()
                }
                // Nothing of an ignored column leaves the owner's machine.
                Role::Ignored => String::new(),
                Role::Feature(c) => {
                    let v = domains.value_index(&encoder, *c, value, row, &mut active)?;
                    let rr = column_rr[*c].as_ref().expect("a feature column has an RR");
                    let domain = domains.columns[*c].as_ref().expect("a feature column");
                    domain.values[rr.sample(&mut rng, v)? as usize].cell.clone()
                }
            };
            out.push(cell);
        }
        writer.write_record(&out)?;
        rows += 1;
    }
    let bytes = writer.into_inner().context("writing the CSV")?;
    files::write_atomically(&args.out, &bytes)?;
    eprintln!(
        "randomized {rows} rows: {}-local DP per row (label {}, each of {} feature columns {feature_epsilon}); wrote {}",
        local.epsilon,
        local.label_epsilon,
        column_rr.iter().flatten().count(),
        args.out.display()
    );
    eprintln!(
        "upload it flagged local_dp with epsilon {} and label_epsilon {}",
        local.epsilon, local.label_epsilon
    );
    Ok(())
}

/// The sampled-column protocol: one report line per row.
fn run_sampled(args: &RandomizeArgs) -> anyhow::Result<()> {
    let schema = files::load_schema(&args.schema)?;
    let local = LocalDp::sampled_column(&schema, args.epsilon)
        .with_context(|| format!("schema {}", args.schema.display()))?;
    let encoder = Encoder::new(&schema)?;
    let protocol = SampledColumn::new(&schema, local.epsilon)?;
    let mut rng = NoiseRng::from_os()?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(files::open_csv_text(&args.input)?);
    let header = reader
        .headers()
        .with_context(|| format!("data {}: header", args.input.display()))?
        .clone();
    let roles = header_roles(&header, &schema)
        .with_context(|| format!("data {}: header", args.input.display()))?;
    // Where each schema column's and the label's cell is in a record.
    let mut field_of = vec![usize::MAX; schema.columns.len()];
    let mut label_field = usize::MAX;
    for (i, (name, role)) in header.iter().zip(&roles).enumerate() {
        match role {
            Role::Label => label_field = i,
            _ => {
                if let Some(c) = schema.columns.iter().position(|c| c.name() == name.trim()) {
                    field_of[c] = i;
                }
            }
        }
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record([REPORTED_COLUMN, REPORTED_VALUE, schema.label_column()])?;
    let mut rows = 0usize;
    for (i, record) in reader.records().enumerate() {
        let row = i + 1;
        let record = record.with_context(|| format!("data {}: row {row}", args.input.display()))?;
        let cell = |c: usize| record.get(field_of[c]).map_or("", str::trim);
        let report = protocol.report(&mut rng, &encoder, cell, &record[label_field], row)?;
        writer.write_record(protocol.cells(&encoder, report))?;
        rows += 1;
    }
    let bytes = writer.into_inner().context("writing the CSV")?;
    files::write_atomically(&args.out, &bytes)?;
    eprintln!(
        "randomized {rows} rows: {}-local DP per row (sampled-column: one of {} feature columns drawn per row, its value and the label reported together at the full epsilon); wrote {}",
        local.epsilon,
        protocol.n_features(),
        args.out.display()
    );
    eprintln!(
        "upload it flagged local_dp with epsilon {} and protocol sampled-column",
        local.epsilon
    );
    Ok(())
}

enum Role {
    Label,
    Ignored,
    Feature(usize),
}

/// The role of each header field; the same header rules as the upload:
/// every schema column and the label present once, no other column.
fn header_roles(
    header: &csv::StringRecord,
    schema: &privboost::data::Schema,
) -> anyhow::Result<Vec<Role>> {
    let mut seen = HashSet::new();
    let mut roles = Vec::with_capacity(header.len());
    for name in header.iter().map(str::trim) {
        if !seen.insert(name) {
            bail!("duplicate column {name:?}");
        }
        roles.push(if name == schema.label_column() {
            Role::Label
        } else {
            match schema.columns.iter().position(|c| c.name() == name) {
                Some(c) if schema.columns[c].is_feature() => Role::Feature(c),
                Some(_) => Role::Ignored,
                None => bail!(
                    "column {name:?} is not in the schema (declare it with \"type\": \"ignore\" to drop it)"
                ),
            }
        });
    }
    let absent: Vec<&str> = std::iter::once(schema.label_column())
        .chain(schema.columns.iter().map(|c| c.name()))
        .filter(|n| !seen.contains(n))
        .collect();
    if !absent.is_empty() {
        bail!("columns declared in the schema but not in the CSV: {absent:?}");
    }
    Ok(roles)
}
