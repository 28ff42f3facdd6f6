//! `privboost randomize`: local-DP collection on the data owner's side.
//!
//! Every cell of every row is replaced by a k-ary randomized response over
//! its column's values (`data::Domains`, `privacy::randomized_response`),
//! the label by binary randomized response, and the output is a CSV of the
//! same schema, ready for a `local_dp` upload. Each row is then
//! `epsilon`-local DP by basic composition over its columns
//! (docs/privacy.md, "Local DP collection"). Noise comes from the OS CSPRNG;
//! there is no seed.

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use privboost::data::{Domains, Encoder, LocalDp};
use privboost::privacy::NoiseRng;
use privboost::privacy::randomized_response::RandomizedResponse;

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
    /// The label's share of epsilon; default an equal share of every
    /// column, epsilon / (feature columns + 1).
    #[arg(long, allow_negative_numbers = true)]
    label_epsilon: Option<f64>,
    /// The raw rows: CSV with a header row.
    input: PathBuf,
    /// Where to write the randomized CSV.
    #[arg(short = 'o', long = "out")]
    out: PathBuf,
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
        .from_path(&args.input)
        .with_context(|| format!("cannot open data {}", args.input.display()))?;
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
