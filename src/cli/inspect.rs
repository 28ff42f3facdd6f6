//! `privboost inspect`: the vote table, sparsity and privacy statement of a model.

use std::path::PathBuf;

use clap::Args;
use privboost::learn::{self, Model};

use super::files;

/// Options of `privboost inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The model file.
    model: PathBuf,
    /// Print JSON (inspection, parameters and privacy statement) instead of text.
    #[arg(long)]
    json: bool,
}

/// Print the inspection.
pub fn run(args: InspectArgs) -> anyhow::Result<()> {
    let model = files::load_model(&args.model)?;
    let encoder = model.encoder()?;
    let model = match model {
        // A multiclass model has no single positive label: the generic
        // layout prints its per-class rules.
        Model::LazyBb(model) if !model.is_multiclass() => model,
        other => return print_generic(&other, &encoder, args.json),
    };
    let inspection = learn::inspect(&model, &encoder);
    if args.json {
        let value = serde_json::json!({
            "params": model.params,
            "privacy": model.privacy,
            "inspection": inspection,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    let p = &model.params;
    let s = &model.privacy;
    println!(
        "LazyBB + {} model, created {}: tau = {}, lambda = {}, kappa = {}{}",
        match p.internal_nodes {
            Some(t) => format!("DP-TopDown (t = {t})"),
            None => "DP-1R".to_string(),
        },
        model.created_at,
        p.tau,
        p.lambda,
        p.kappa,
        if p.defaults_used {
            " (default rule)"
        } else {
            ""
        }
    );
    println!(
        "Label: {} (positive = {})\n",
        model.schema.label.column, model.schema.label.positive
    );
    print!("{}", inspection.to_text());
    println!("\nPrivacy statement");
    match &s.local_dp {
        Some(local) => println!(
            "  guarantee:     {}-local differential privacy, randomized on the client (no central noise)",
            local.local_epsilon
        ),
        None => println!(
            "  guarantee:     ({}, {})-differential privacy",
            s.epsilon, s.delta
        ),
    }
    println!("  neighbouring:  {}", s.neighbouring);
    println!("  rows (n):      {}", s.n_rows);
    println!("  accounting:    {}", s.accounting);
    println!("  budget split:  {}", s.budget_split);
    println!("  mechanism:     {}", s.mechanism);
    println!(
        "  noise:         eta = {:.4}, zeta = 1/(kappa n) = {:.4e}",
        s.eta, s.zeta
    );
    println!("  sensitivity:   {}", s.sensitivity);
    println!("  sampler:       {}", s.sampler);
    println!("  software:      {}", s.software_version);
    Ok(())
}

/// Any learner's model: the inspection, parameters and privacy statement.
fn print_generic(
    model: &Model,
    encoder: &privboost::data::Encoder,
    json: bool,
) -> anyhow::Result<()> {
    let inspection = model.inspect(encoder);
    if json {
        let value = serde_json::json!({
            "algorithm": model.algorithm(),
            "task": model.task(),
            "params": model.params_json(),
            "privacy": model.privacy_json(),
            "inspection": inspection,
        });
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    println!(
        "{} model for {} of {:?}; parameters {}\n",
        model.algorithm(),
        model.task().name(),
        model.schema().label.column,
        model.params_json()
    );
    print!("{}", inspection.to_text());
    println!("\nPrivacy statement");
    if let serde_json::Value::Object(statement) = model.privacy_json() {
        for (key, value) in statement {
            let text = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            println!("  {key}: {text}");
        }
    }
    Ok(())
}
