//! `privboost experiment paper`: the paper's experiment on the shipped data,
//! written as JSON, Markdown tables and one accuracy-vs-epsilon plot per data
//! set. Owner-side, on public data.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use plotters::prelude::*;
use privboost::data::{Encoder, LabelMode};
use privboost::eval::experiment::{
    self, ADULT_TABLE_8, DatasetResults, EPSILONS, MUSHROOM_TABLE_10,
};
use privboost::eval::{self, Protocol};
use privboost::privacy::NoiseRng;

use super::files;

/// Options of `privboost experiment`.
#[derive(Debug, Args)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    command: ExperimentCommand,
}

#[derive(Debug, Subcommand)]
enum ExperimentCommand {
    /// LazyBB §5: Adult (canonical train/test) and Mushroom (5-fold CV) over
    /// the epsilon grid {0.05, ..., 0.5, 1, 3, 5}.
    Paper {
        /// Repetitions with fresh noise per cell.
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Only these epsilons (comma-separated; default: the whole grid).
        #[arg(long, value_delimiter = ',')]
        epsilon: Vec<f64>,
        /// The folder holding `adult/` and `mushroom/`.
        #[arg(long, default_value = "data")]
        data: PathBuf,
        /// Where to write results.json, <set>.md and <set>.svg.
        #[arg(long, default_value = "docs/results")]
        out: PathBuf,
    },
}

/// The paper's published points, drawn on the plots for comparison:
/// Adult 0.82 at epsilon 0.4 (Table 4) and 0.83 at 1 (Table 11); Mushroom
/// 0.98 at 1 (Table 11).
const PAPER_POINTS: [(&str, f64, f64); 3] = [
    ("adult", 0.4, 0.82),
    ("adult", 1.0, 0.83),
    ("mushroom", 1.0, 0.98),
];

/// Run the experiment.
pub fn run(args: ExperimentArgs) -> anyhow::Result<()> {
    let ExperimentCommand::Paper {
        repeats,
        epsilon,
        data,
        out,
    } = args.command;
    let epsilons = if epsilon.is_empty() {
        EPSILONS.to_vec()
    } else {
        epsilon
    };
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;

    let load = |set: &str, file: &str| -> anyhow::Result<(Encoder, privboost::data::Dataset)> {
        let schema = files::load_schema(&data.join(set).join("schema.json"))?;
        let encoder = Encoder::new(&schema)?;
        let rows = files::load_dataset(&data.join(set).join(file), &encoder, LabelMode::Required)?;
        Ok((encoder, rows))
    };
    let (adult_encoder, adult_train) = load("adult", "adult-train.csv")?;
    let (_, adult_test) = load("adult", "adult-test.csv")?;
    let (mushroom_encoder, mushroom) = load("mushroom", "mushroom.csv")?;
    let adult = Protocol::TrainTest {
        train: &adult_train,
        test: &adult_test,
    };
    let mushroom_cv = Protocol::CrossValidation {
        data: &mushroom,
        folds: 5,
        split_seed: 1,
        units: None,
    };
    let methods = 3 * epsilons.len() + 3;
    let total = eval::task_count(&adult, methods, repeats)
        + eval::task_count(&mushroom_cv, methods, repeats);
    let bar = ProgressBar::new(total as u64).with_style(
        ProgressStyle::with_template("experiment {bar:40} {pos}/{len} runs, eta {eta}")
            .context("progress bar template")?,
    );
    let noise = |_| NoiseRng::from_os();
    let tick = || bar.inc(1);
    let results = [
        experiment::run_dataset(
            "adult",
            &adult,
            &format!(
                "Adult, canonical split: train on {} rows, test on {}",
                adult_train.n_rows(),
                adult_test.n_rows()
            ),
            &adult_encoder,
            &ADULT_TABLE_8,
            &epsilons,
            repeats,
            &noise,
            &tick,
        )?,
        experiment::run_dataset(
            "mushroom",
            &mushroom_cv,
            &format!(
                "Mushroom, 5-fold cross-validation on {} rows (split seed 1)",
                mushroom.n_rows()
            ),
            &mushroom_encoder,
            &MUSHROOM_TABLE_10,
            &epsilons,
            repeats,
            &noise,
            &tick,
        )?,
    ];
    bar.finish_and_clear();

    let json = serde_json::json!({
        "command": format!("privboost experiment paper --repeats {repeats}"),
        "software_version": privboost::learn::model::SOFTWARE_VERSION,
        "datasets": results,
    });
    files::write_atomically(
        &out.join("results.json"),
        serde_json::to_string_pretty(&json)?.as_bytes(),
    )?;
    for r in &results {
        let markdown = r.to_markdown();
        files::write_atomically(&out.join(format!("{}.md", r.dataset)), markdown.as_bytes())?;
        // Where the curves leave room for the legend.
        let legend = if r.dataset == "adult" {
            SeriesLabelPosition::UpperLeft
        } else {
            SeriesLabelPosition::LowerRight
        };
        plot(r, &out.join(format!("{}.svg", r.dataset)), legend)?;
        println!("{markdown}");
    }
    eprintln!(
        "wrote results.json, adult.md, mushroom.md, adult.svg, mushroom.svg to {}",
        out.display()
    );
    Ok(())
}

/// Accuracy against epsilon (log scale): one line per series with ±1 std
/// bars, dashed lines for the non-private baselines, crosses for the paper.
fn plot(results: &DatasetResults, path: &Path, legend: SeriesLabelPosition) -> anyhow::Result<()> {
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
        root.fill(&WHITE)?;
        let lowest = results
            .series
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .map(|(_, m)| m.accuracy_mean - m.accuracy_std)
            })
            .chain(results.baselines.iter().map(|(_, m)| m.accuracy_mean))
            .fold(1.0f64, f64::min);
        let highest = results
            .series
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .map(|(_, m)| m.accuracy_mean + m.accuracy_std)
            })
            .chain(results.baselines.iter().map(|(_, m)| m.accuracy_mean))
            .chain(
                PAPER_POINTS
                    .iter()
                    .filter(|p| p.0 == results.dataset)
                    .map(|p| p.2),
            )
            .fold(0.0f64, f64::max);
        let y_min = ((lowest - 0.02) * 50.0).floor() / 50.0;
        let y_max = (((highest + 0.01) * 50.0).ceil() / 50.0).min(1.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "{}: test accuracy vs epsilon (mean ± std, {} repetitions)",
                    results.dataset, results.repeats
                ),
                ("sans-serif", 20),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d((0.04f64..6.0).log_scale(), y_min..y_max)?;
        chart
            .configure_mesh()
            .x_desc("epsilon (log scale)")
            .y_desc("accuracy")
            .draw()?;
        let colours = [BLUE, GREEN, MAGENTA];
        for (series, colour) in results.series.iter().zip(colours) {
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .map(|(e, m)| (*e, m.accuracy_mean))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?
                .label(series.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
            chart.draw_series(series.points.iter().map(|(e, m)| {
                PathElement::new(
                    vec![
                        (*e, m.accuracy_mean - m.accuracy_std),
                        (*e, m.accuracy_mean + m.accuracy_std),
                    ],
                    colour,
                )
            }))?;
        }
        for ((name, m), colour) in results
            .baselines
            .iter()
            .take(2)
            .zip([BLACK, RGBColor(128, 128, 128)])
        {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(0.04, m.accuracy_mean), (6.0, m.accuracy_mean)],
                    6,
                    4,
                    colour.stroke_width(1),
                ))?
                .label(name.clone())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        }
        let paper: Vec<(f64, f64)> = PAPER_POINTS
            .iter()
            .filter(|(set, _, _)| *set == results.dataset)
            .map(|(_, e, a)| (*e, *a))
            .collect();
        chart
            .draw_series(paper.iter().map(|&p| Cross::new(p, 6, RED.stroke_width(2))))?
            .label("paper (LazyBB Tables 4, 11)")
            .legend(|(x, y)| Cross::new((x + 10, y), 5, RED.stroke_width(2)));
        chart
            .configure_series_labels()
            .position(legend)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow::anyhow!("cannot draw {}: {e}", path.display()))
}
