//! The dp-linear model file: the version-2 envelope (format, version,
//! algorithm, task) around the parameters, the privacy statement, the schema
//! and the model.

use serde::{Deserialize, Serialize};

use super::model::LinearModel;
use super::objective::ObjectivePlan;
use super::output::{self, OutputPlan};
use super::params::{LinearParams, LinearPlan, Noise};
use crate::data::{Encoder, Schema, Task};
use crate::learn::LearnError;
use crate::learn::model::{MODEL_FORMAT, SOFTWARE_VERSION};
use crate::learn::threshold::{ThresholdPlan, ThresholdRelease};
use crate::privacy::mechanisms::{self, Mechanism};

/// The envelope version of the newer learners' files.
pub const FILE_VERSION: u32 = 2;
/// The `algorithm` field of a dp-linear file.
pub const ALGORITHM: &str = "dp-linear";

/// The privacy statement of a dp-linear model (SPEC §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearStatement {
    /// Total epsilon charged.
    pub epsilon: f64,
    /// Total delta charged.
    pub delta: f64,
    /// The neighbouring relation.
    pub neighbouring: String,
    /// Training rows (public under substitution).
    pub n_rows: usize,
    /// How the releases compose (and convert).
    pub accounting: String,
    /// Total rho, for a zCDP run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// The split between the curvature release and the gradient releases.
    pub budget_split: String,
    /// What is released, with which noise.
    pub mechanism: String,
    /// Noise standard deviation on each curvature (rows).
    pub sigma_curvature: f64,
    /// Noise standard deviation on each gradient sum (residual units).
    pub sigma_gradient: f64,
    /// The sensitivity argument in one line.
    pub sensitivity: String,
    /// Output perturbation: the noise standard deviation on each released
    /// coefficient of the scaled problem (features divided by `sqrt(K)`);
    /// absent for block descent and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_coefficient: Option<f64>,
    /// How the noise is sampled.
    pub sampler: String,
    /// The ids of the mechanisms the run called (`privacy::mechanisms`).
    pub mechanisms: Vec<String>,
    /// The software that trained the model.
    pub software_version: String,
    /// The private binning phase, when the schema asked for private bins
    /// (`learn::binning`); absent otherwise, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binning: Option<crate::learn::binning::BinningStatement>,
    /// A binary classifier's decision threshold (`threshold`): its plan and
    /// the released logit, which the intercept absorbed; absent without one
    /// and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<ThresholdRelease>,
}

/// The public noise description of an output-perturbation plan (the
/// estimate route's `noise`).
pub fn noise_json(plan: &LinearPlan) -> serde_json::Value {
    if let Some(op) = &plan.objective {
        return serde_json::json!({
            "mechanism": format!(
                "dp-linear by objective perturbation: a hidden linear term in the objective, then {} on each of the {} rounded coefficients once, after {} accelerated gradient steps",
                mechanism_of(plan).name,
                op.dimension,
                op.steps
            ),
            "n_rows": plan.n_rows,
            "blocks": op.blocks,
            "coefficients": op.dimension,
            "steps": op.steps,
            "lambda": op.lambda,
            "epsilon_hidden": op.epsilon_hidden,
            "hidden_mean_norm": op.hidden_mean_norm(),
            "sigma_coefficient": op.output_std(),
            "grid": op.grid,
        });
    }
    let Some(op) = &plan.output else {
        return serde_json::Value::Null;
    };
    let mut noise = serde_json::json!({
        "mechanism": format!(
            "dp-linear by output perturbation: {} on each of the {} coefficients once, after {} noiseless gradient steps",
            mechanism_of(plan).name,
            op.dimension,
            op.steps
        ),
        "n_rows": plan.n_rows,
        "blocks": op.blocks,
        "coefficients": op.dimension,
        "steps": op.steps,
        "lambda": op.lambda,
        "sensitivity": op.sensitivity,
        "sigma_coefficient": op.coefficient_std(),
        "grid": op.grid,
    });
    if let Some(rho) = plan.rho {
        noise["rho"] = rho.into();
    }
    noise
}

/// The mechanism of a plan's noise.
pub fn mechanism_of(plan: &LinearPlan) -> Mechanism {
    match plan.gradient_noise {
        Noise::Laplace { .. } => mechanisms::DISCRETE_LAPLACE,
        Noise::Gaussian { .. } => mechanisms::DISCRETE_GAUSSIAN,
    }
}

impl LinearStatement {
    fn new(plan: &LinearPlan, task: Task) -> LinearStatement {
        if let Some(op) = &plan.output {
            return Self::output(plan, op, task);
        }
        if let Some(op) = &plan.objective {
            return Self::objective(plan, op);
        }
        let p = plan.params;
        let m = mechanism_of(plan);
        let (epsilon, delta) = (plan.budget.epsilon(), plan.budget.delta());
        let accounting = match plan.rho {
            None => format!(
                "pure DP by basic composition: the curvature release and the {} gradient releases ({} epochs x {} blocks) sum to epsilon = {epsilon}",
                plan.iterations(),
                p.epochs,
                plan.blocks
            ),
            Some(rho) => format!(
                "zero-concentrated DP: the curvature release and the {} gradient releases ({} epochs x {} blocks) compose additively to rho = {rho:.6e}, which implies ({epsilon}, {delta})-DP by the conversion of Canonne, Kamath and Steinke 2020 (Cor. 13)",
                plan.iterations(),
                p.epochs,
                plan.blocks
            ),
        };
        LinearStatement {
            epsilon,
            delta,
            neighbouring: "substitution of one row; the row count n is public".into(),
            n_rows: plan.n_rows,
            accounting,
            rho: plan.rho,
            budget_split: if plan.ranged_lines > 0 {
                format!(
                    "{}% to the ranges of the {} lines (a noisy count per interval of each, standard deviation {:.3} rows), then of the rest {}% to the curvatures and the rest of it equally over the gradient releases",
                    p.range_share * 100.0,
                    plan.ranged_lines,
                    plan.range_std(),
                    p.curvature_share * 100.0
                )
            } else {
                format!(
                    "{}% to the curvatures, the rest equally over the gradient releases",
                    p.curvature_share * 100.0
                )
            },
            mechanism: format!(
                "dp-linear ({} regression on the schema's literals, numeric columns as {}): {}noisy curvature of every feature once, then cyclic block Newton steps, each block's gradient sums released with {}",
                match task {
                    Task::Binary => "logistic",
                    Task::Multiclass { .. } => "multinomial logistic",
                    Task::Regression { .. } => "linear",
                },
                p.numeric_features.as_str(),
                if plan.ranged_lines > 0 {
                    "a private range for every line (noisy counts of its intervals; the line is mapped from the intervals whose count clears a public threshold onto [-1, 1], the rest clamped), then "
                } else {
                    ""
                },
                m.cited()
            ),
            sigma_curvature: plan.curvature_std(),
            sigma_gradient: plan.gradient_std(),
            sensitivity: format!(
                "{}{}",
                if plan.ranged_lines > 0 {
                    format!(
                        "range counts: a row is on at most one interval of each of the {} lines, so L1 sensitivity {} and L2 sqrt({}); ",
                        plan.ranged_lines,
                        2 * plan.ranged_lines,
                        2 * plan.ranged_lines
                    )
                } else {
                    String::new()
                },
                if plan.classes > 0 {
                    format!(
                        "a row has at most one feature per block, of value in [-1, 1]; each gradient release is the block's {} vectors of softmax-gradient sums, a row's terms over the classes on the grid 1/{} with L1 norm at most 2 and L2 norm at most sqrt(2): each gradient release has L1 sensitivity 4 and L2 sensitivity 2 sqrt(2) whatever the number of classes, the curvature release L1 {} and L2 sqrt({}) (docs/privacy.md, \"DP linear models (dp-linear)\", multiclass)",
                        plan.classes,
                        plan.scale,
                        plan.curvature_sensitivity,
                        plan.curvature_sensitivity
                    )
                } else {
                    format!(
                        "a row has at most one feature per block, of value in [-1, 1]; residuals clamped to [-1, 1] (regression: (y - F) / ((max - min) / 2)) and every term rounded to the grid 1/{}: each gradient release has L1 and L2 sensitivity 2, the curvature release L1 {} and L2 sqrt({}) (docs/privacy.md, \"DP linear models (dp-linear)\")",
                        plan.scale, plan.curvature_sensitivity, plan.curvature_sensitivity
                    )
                }
            ),
            sampler: format!(
                "{}; scales and variances are rationals rounded up",
                mechanisms::sampler_text(&[m])
            ),
            mechanisms: vec![m.id.to_owned()],
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
            threshold: None,
            sigma_coefficient: None,
        }
    }

    /// The statement of an output-perturbation run (`output.rs`): one
    /// release, the whole budget.
    fn output(plan: &LinearPlan, op: &OutputPlan, task: Task) -> LinearStatement {
        let m = mechanism_of(plan);
        let (epsilon, delta) = (plan.budget.epsilon(), plan.budget.delta());
        let accounting = match plan.rho {
            None => format!(
                "pure DP: one release (the {} rounded coefficients with discrete Laplace noise) spends epsilon = {epsilon}",
                op.dimension
            ),
            Some(rho) => format!(
                "zero-concentrated DP: one release (the {} rounded coefficients with discrete Gaussian noise) spends rho = {rho:.6e}, which implies ({epsilon}, {delta})-DP by the conversion of Canonne, Kamath and Steinke 2020 (Cor. 13)",
                op.dimension
            ),
        };
        let loss = match task {
            Task::Regression { .. } => {
                "Huber loss (knee 1) on the label scaled onto [-1, 1] by its public bounds"
            }
            _ => "logistic loss",
        };
        LinearStatement {
            epsilon,
            delta,
            neighbouring: "substitution of one row; the row count n is public".into(),
            n_rows: plan.n_rows,
            accounting,
            rho: plan.rho,
            budget_split: "all of it to the one release of the coefficients".into(),
            mechanism: format!(
                "dp-linear by output perturbation (numeric columns as {}): {} full-batch gradient steps without noise on the {loss} plus (lambda / 2) ||w||^2 with lambda = {}, features divided by sqrt({}) so every row has norm at most 1, projected on the ball of radius {:.6}; the final coefficients rounded to the grid {:e} and released once with {}",
                plan.params.numeric_features.as_str(),
                op.steps,
                op.lambda,
                op.blocks,
                op.radius,
                op.grid,
                m.cited()
            ),
            sigma_curvature: 0.0,
            sigma_gradient: 0.0,
            sensitivity: format!(
                "the loss is 1-Lipschitz and smooth, so each gradient step is a contraction and one substituted row moves the computed coefficients by at most 2 / (n lambda) in L2 (Chaudhuri, Monteleoni and Sarwate 2011; Wu et al. 2017), plus a relative margin of {} for float error: {:e}; after rounding, L1 sensitivity sqrt(d) of that plus d grid steps, L2 plus sqrt(d) (d = {}; docs/privacy.md, \"dp-linear by output perturbation\")",
                output::SENSITIVITY_MARGIN,
                op.sensitivity,
                op.dimension
            ),
            sigma_coefficient: Some(op.coefficient_std()),
            sampler: format!(
                "{}; scales and variances are rationals rounded up",
                mechanisms::sampler_text(&[m])
            ),
            mechanisms: vec![m.id.to_owned()],
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
            threshold: None,
        }
    }
}

impl LinearStatement {
    /// The statement of an objective-perturbation run (`objective.rs`).
    fn objective(plan: &LinearPlan, op: &ObjectivePlan) -> LinearStatement {
        let epsilon = plan.budget.epsilon();
        // The released noise first.
        let used = [
            mechanisms::DISCRETE_LAPLACE,
            mechanisms::OBJECTIVE_PERTURBATION,
        ];
        let ranges = if plan.ranged_lines > 0 {
            format!(
                "{}% to the ranges of the {} lines (a noisy count per interval of each, standard deviation {:.3} rows), then of the rest ",
                plan.params.range_share * 100.0,
                plan.ranged_lines,
                plan.range_std()
            )
        } else {
            String::new()
        };
        LinearStatement {
            epsilon,
            delta: plan.budget.delta(),
            neighbouring: "substitution of one row; the row count n is public".into(),
            n_rows: plan.n_rows,
            accounting: format!(
                "pure DP by basic composition: {}{}the perturbed objective's minimiser ({}) and the release of the rounded coefficients ({}) sum to epsilon = {epsilon}",
                if plan.ranged_lines > 0 {
                    "the lines' ranges and "
                } else {
                    ""
                },
                if op.fits > 1 {
                    format!(
                        "for each of the {} one-vs-rest fits (one per class) ",
                        op.fits
                    )
                } else {
                    String::new()
                },
                op.epsilon_objective,
                op.epsilon_output
            ),
            rho: None,
            budget_split: format!(
                "{ranges}{}{}% to the release of the rounded coefficients and the rest to the perturbation of the objective",
                if op.fits > 1 {
                    format!(
                        "an equal part to each of the {} one-vs-rest fits, and of each ",
                        op.fits
                    )
                } else {
                    String::new()
                },
                super::objective::OUTPUT_SHARE * 100.0
            ),
            mechanism: format!(
                "dp-linear by objective perturbation (Chaudhuri, Monteleoni and Sarwate 2011; numeric columns as {}): {}the logistic loss plus (Lambda / 2) ||w||^2 with Lambda = {:e} plus b . w / n for a hidden b of density ~ exp(-{:.6} ||b|| / 2) (mean norm {:.3}), features divided by sqrt({}); {} steps of Nesterov's accelerated descent bring the point within {:e} of the exact minimiser, which is rounded to the grid {:e} and released once with {}",
                plan.params.numeric_features.as_str(),
                if plan.ranged_lines > 0 {
                    "a private range for every line (noisy counts of its intervals; the line is mapped from the intervals whose count clears a public threshold onto [-1, 1], the rest clamped), then "
                } else {
                    ""
                },
                op.lambda,
                op.epsilon_hidden,
                op.hidden_mean_norm(),
                op.blocks,
                op.steps,
                op.error_radius,
                op.grid,
                mechanisms::DISCRETE_LAPLACE.cited()
            ),
            sigma_curvature: 0.0,
            sigma_gradient: 0.0,
            sensitivity: format!(
                "the logistic loss has |l'| <= 1 and l'' <= 1/4 and every row has norm at most 1, so the minimiser's densities on neighbours differ by at most exp(epsilon_b + 2 ln(1 + 1 / (4 n Lambda))) (Theorem 9); the computed point is within r of the minimiser, so after rounding two neighbours' points differ by at most 2d = {} grid steps in L1 (docs/privacy.md, \"dp-linear by objective perturbation\")",
                2 * op.dimension
            ),
            sigma_coefficient: Some(op.output_std()),
            sampler: format!(
                "{}; the Laplace scale is a rational rounded up",
                mechanisms::sampler_text(&used)
            ),
            mechanisms: used.iter().map(|m| m.id.to_owned()).collect(),
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
            threshold: None,
        }
    }
}

/// A dp-linear model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearFile {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// Always [`FILE_VERSION`].
    pub version: u32,
    /// Always [`ALGORITHM`].
    pub algorithm: String,
    /// The task (from the schema).
    pub task: Task,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// The service job that trained it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The parameters of the run.
    pub params: LinearParams,
    /// Whether every parameter took its default.
    pub defaults_used: bool,
    /// What was spent and how.
    pub privacy: LinearStatement,
    /// The owner's schema, so that predictions take raw values.
    pub schema: Schema,
    /// Literal names in index order (a check against the schema).
    pub literals: Vec<String>,
    /// The coefficients.
    pub model: LinearModel,
}

fn now() -> Result<String, LearnError> {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| LearnError::InvalidParameter(format!("clock: {e}")))
}

impl LinearFile {
    /// Wrap a trained model.
    pub fn new(
        encoder: &Encoder,
        plan: &LinearPlan,
        defaults_used: bool,
        model: LinearModel,
    ) -> Result<LinearFile, LearnError> {
        Ok(LinearFile {
            format: MODEL_FORMAT.into(),
            version: FILE_VERSION,
            algorithm: ALGORITHM.into(),
            task: encoder.schema().task(),
            created_at: now()?,
            job_id: None,
            params: plan.params,
            defaults_used,
            privacy: LinearStatement::new(plan, encoder.schema().task()),
            schema: encoder.schema().clone(),
            literals: encoder.literals().iter().map(|l| l.name.clone()).collect(),
            model,
        })
    }

    /// The file of a run whose decision threshold (`plan`) chose `logit`
    /// (already absorbed into the model's intercept): the statement gives
    /// the whole run's charge and how the two parts compose.
    pub fn with_threshold(mut self, plan: &ThresholdPlan, logit: f64) -> LinearFile {
        let s = &mut self.privacy;
        (s.accounting, s.budget_split) =
            plan.statement_texts(&s.accounting, &s.budget_split, s.epsilon);
        s.epsilon = plan.run_budget.epsilon();
        s.delta = plan.run_budget.delta();
        if plan.run_rho.is_some() {
            s.rho = plan.run_rho;
        }
        let rnm = mechanisms::REPORT_NOISY_MAX_LAPLACE.id.to_owned();
        if !s.mechanisms.contains(&rnm) {
            s.mechanisms.push(rnm);
        }
        s.threshold = Some(ThresholdRelease { plan: *plan, logit });
        self
    }

    /// Parse and check (the caller checked format and version).
    pub fn from_value(value: serde_json::Value) -> Result<LinearFile, LearnError> {
        let file: LinearFile =
            serde_json::from_value(value).map_err(|e| LearnError::ModelFormat(e.to_string()))?;
        let n_literals = crate::learn::trained::check_envelope(
            &file.algorithm,
            ALGORITHM,
            file.task,
            &file.schema,
            &file.literals,
        )?;
        file.model
            .check(n_literals)
            .map_err(LearnError::ModelFormat)?;
        // One coefficient table per class: class 0's and k - 1 more.
        let more = file.task.n_classes().map_or(0, |k| k - 1);
        if file.model.class_coefficients.len() != more {
            return Err(LearnError::ModelFormat(
                "the model's class coefficient tables do not match its classes".into(),
            ));
        }
        Ok(file)
    }
}
