//! The DP-EBM model file: the version-2 envelope (format, version, algorithm,
//! task) around the parameters, the privacy statement, the schema, the edits
//! made since training, and the model.

use serde::{Deserialize, Serialize};

use super::model::EbmModel;
use super::params::{Accounting, EbmParams, EbmPlan, INTERCEPT_SHARE, calibration_share};
use crate::data::{Encoder, Schema, Task};
use crate::learn::LearnError;
use crate::learn::model::{MODEL_FORMAT, SOFTWARE_VERSION};
use crate::learn::trained::ModelEdit;
use crate::privacy::mechanisms;

/// The envelope version of the newer learners' files.
pub const FILE_VERSION: u32 = 2;
/// The `algorithm` field of a DP-EBM file.
pub const ALGORITHM: &str = "dp-ebm";

/// The privacy statement of a DP-EBM model (SPEC §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EbmStatement {
    /// Total epsilon charged.
    pub epsilon: f64,
    /// Total delta charged.
    pub delta: f64,
    /// The neighbouring relation.
    pub neighbouring: String,
    /// Training rows (public under substitution).
    pub n_rows: usize,
    /// How the phases compose and convert.
    pub accounting: String,
    /// Total rho (zCDP runs, delta > 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho: Option<f64>,
    /// rho of the binning phase (zCDP runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_binning: Option<f64>,
    /// rho of the intercept (zCDP runs; absent in files from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_intercept: Option<f64>,
    /// rho of the training phase (zCDP runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_training: Option<f64>,
    /// epsilon of the binning phase (pure runs, delta = 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_binning: Option<f64>,
    /// epsilon of the intercept (pure runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_intercept: Option<f64>,
    /// epsilon of the training phase (pure runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_training: Option<f64>,
    /// rho of a classifier's threshold calibration (zCDP runs; absent
    /// without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rho_calibration: Option<f64>,
    /// The pure epsilon of the calibration's report-noisy-max (with delta >
    /// 0 it is `sqrt(2 rho_calibration)`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_calibration: Option<f64>,
    /// The calibration's Laplace scale, in rows; absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_scale: Option<f64>,
    /// The split between the phases.
    pub budget_split: String,
    /// What is released, with which noise.
    pub mechanism: String,
    /// Noise standard deviation on each bin count.
    pub sigma_binning: f64,
    /// Noise standard deviation on the intercept's sum (residual units;
    /// absent in files from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma_intercept: Option<f64>,
    /// Noise standard deviation on each leaf sum of normalised residuals.
    pub sigma_training: f64,
    /// The sensitivity argument in one line.
    pub sensitivity: String,
    /// How the noise is sampled.
    pub sampler: String,
    /// The ids of the mechanisms the run called (`privacy::mechanisms`).
    pub mechanisms: Vec<String>,
    /// Post-processing edits made since training, in order.
    pub post_processing: Vec<String>,
    /// The software that trained the model.
    pub software_version: String,
    /// The private binning phase, when the schema asked for private bins
    /// (`learn::binning`); absent otherwise, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binning: Option<crate::learn::binning::BinningStatement>,
}

impl EbmStatement {
    fn new(plan: &EbmPlan) -> EbmStatement {
        let p = plan.params;
        let calibrated = if plan.calibration.is_some() {
            " and the threshold calibration (one report-noisy-max)"
        } else {
            ""
        };
        let (noise, accounting, unit) = match plan.accounting {
            Accounting::Zcdp { rho_total, .. } => (
                mechanisms::DISCRETE_GAUSSIAN,
                format!(
                    "zero-concentrated DP: the binning, the intercept, the {} training iterations ({} epochs x {} features){} compose additively to rho = {:.6e}, which implies ({}, {})-DP by the conversion of Canonne, Kamath and Steinke 2020 (Cor. 13)",
                    plan.iterations(),
                    p.epochs,
                    plan.n_features,
                    calibrated,
                    rho_total,
                    plan.budget.epsilon(),
                    plan.budget.delta()
                ),
                "rho",
            ),
            Accounting::Pure { .. } => (
                mechanisms::DISCRETE_LAPLACE,
                format!(
                    "pure DP: the binning, the intercept, the {} training iterations ({} epochs x {} features){} compose to epsilon = {} by basic composition",
                    plan.iterations(),
                    p.epochs,
                    plan.n_features,
                    calibrated,
                    plan.budget.epsilon()
                ),
                "epsilon",
            ),
        };
        let (zcdp, pure) = match plan.accounting {
            Accounting::Zcdp {
                rho_binning,
                rho_intercept,
                rho_training,
                ..
            } => (Some((rho_binning, rho_intercept, rho_training)), None),
            Accounting::Pure {
                epsilon_binning,
                epsilon_intercept,
                epsilon_training,
            } => (
                None,
                Some((epsilon_binning, epsilon_intercept, epsilon_training)),
            ),
        };
        let mut used = vec![noise];
        if plan.calibration.is_some() {
            used.push(mechanisms::REPORT_NOISY_MAX_LAPLACE);
        }
        EbmStatement {
            epsilon: plan.budget.epsilon(),
            delta: plan.budget.delta(),
            neighbouring: "substitution of one row; the row count n is public".into(),
            n_rows: plan.n_rows,
            accounting,
            rho: plan.rho(),
            rho_binning: zcdp.map(|z| z.0),
            rho_intercept: zcdp.map(|z| z.1),
            rho_training: zcdp.map(|z| z.2),
            epsilon_binning: pure.map(|p| p.0),
            epsilon_intercept: pure.map(|p| p.1),
            epsilon_training: pure.map(|p| p.2),
            rho_calibration: plan.calibration.and_then(|c| c.rho),
            epsilon_calibration: plan.calibration.map(|c| c.epsilon),
            calibration_scale: plan.calibration.map(|c| c.scale),
            budget_split: format!(
                "{}% of {unit} to the private binning, {}% to the intercept, {}the rest equally over the training iterations",
                p.binning_share * 100.0,
                INTERCEPT_SHARE * 100.0,
                if plan.calibration.is_some() {
                    format!(
                        "{}% to the threshold calibration, ",
                        calibration_share(plan.task) * 100.0
                    )
                } else {
                    String::new()
                }
            ),
            mechanism: format!(
                "DP-EBM (Nori et al. 2021, Alg. 2) with {}: noisy counts of every feature's base bins (the schema's literals), merged into bins of about n/{} rows; a noisy sum of the labels{}, from which boosting starts (the intercept); then cyclic boosting of one-feature functions with {} random leaves per iteration, each leaf's sum of residuals{} released with noise and divided by the leaf's public noisy count{}",
                noise.cited(),
                p.max_bins,
                if let Task::Multiclass { k } = plan.task {
                    format!(" (the {k} class counts)")
                } else {
                    String::new()
                },
                p.max_leaves,
                if let Task::Multiclass { k } = plan.task {
                    format!(" (one per class: the {k} sums of the softmax residuals e_y - p, one shape function per class)")
                } else {
                    String::new()
                },
                plan.calibration.map_or_else(String::new, |c| format!(
                    "; then the threshold: {} over {} public thresholds around the model's mean score, scored by the number of training rows it classifies correctly minus 2 per row by which its predicted-positive count falls outside the intercept's positive count +- 4% of n (sensitivity 3), and the intercept moved by the chosen threshold",
                    mechanisms::REPORT_NOISY_MAX_LAPLACE.cited(),
                    c.candidates
                ))
            ),
            sigma_binning: plan.sigma_binning,
            sigma_intercept: Some(plan.sigma_intercept),
            sigma_training: plan.sigma_training,
            sensitivity: if let Task::Multiclass { k } = plan.task { format!(
                "bin counts: L1 sensitivity 2 (L2 sqrt(2)) per feature under substitution; intercept: the {k} class counts (L1 2, L2 sqrt(2)); leaf sums: each row adds its {k} softmax residuals e_y - p, rounded to the grid 1/{} with at most 1 in total over the classes other than y (so L1 <= 2 and L2 <= sqrt(2) per row), to one leaf: L1 sensitivity 4 and L2 2 sqrt(2) per iteration, whatever k (docs/privacy.md, \"DP-EBM for k classes\")",
                plan.scale
            ) } else { format!(
                "bin counts: L1 sensitivity 2 (L2 sqrt(2)) per feature under substitution; intercept: the sum of y - 1/2 (classifier, sensitivity 1) or (y - mid) / half (regressor, 2); leaf sums: residuals clamped to [-1, 1] (regression: (y - F) / {}, the residual clip in label units) and rounded to the grid 1/{}, L1 and L2 sensitivity 2 per iteration{} (docs/privacy.md, \"DP-EBM (zero-concentrated DP, exact discrete Gaussian noise)\" and \"DP-EBM with delta = 0 (pure DP, exact discrete Laplace noise)\")",
                p.residual_clip
                    .map_or_else(|| "c".to_owned(), |c| c.to_string()),
                plan.scale,
                if plan.calibration.is_some() {
                    "; calibration: each row adds 0 or 1 to each threshold's correct count and to its count of rows above, sensitivity 1 + 2 = 3 per score"
                } else {
                    ""
                }
            ) },
            sampler: format!(
                "{}; the variances and scales are rationals rounded up; the cut points are drawn uniformly by exact rejection, independently of the data",
                mechanisms::sampler_text(&used)
            ),
            mechanisms: used.iter().map(|m| m.id.to_owned()).collect(),
            post_processing: Vec::new(),
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
        }
    }
}

/// A DP-EBM model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EbmFile {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// Always [`FILE_VERSION`].
    pub version: u32,
    /// Always [`ALGORITHM`].
    pub algorithm: String,
    /// The task (from the schema).
    pub task: Task,
    /// RFC 3339 creation time (of this version).
    pub created_at: String,
    /// The service job that trained it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The parameters of the run.
    pub params: EbmParams,
    /// Whether every parameter took its default.
    pub defaults_used: bool,
    /// What was spent and how.
    pub privacy: EbmStatement,
    /// The owner's schema, so that predictions take raw values.
    pub schema: Schema,
    /// Literal names in index order (a check against the schema).
    pub literals: Vec<String>,
    /// Edits since training (post-processing), in order.
    #[serde(default)]
    pub edits: Vec<ModelEdit>,
    /// The shape functions.
    pub model: EbmModel,
}

fn now() -> Result<String, LearnError> {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .map_err(|e| LearnError::InvalidParameter(format!("clock: {e}")))
}

impl EbmFile {
    /// Wrap a trained model.
    pub fn new(
        encoder: &Encoder,
        plan: &EbmPlan,
        defaults_used: bool,
        model: EbmModel,
    ) -> Result<EbmFile, LearnError> {
        Ok(EbmFile {
            format: MODEL_FORMAT.into(),
            version: FILE_VERSION,
            algorithm: ALGORITHM.into(),
            task: encoder.schema().task(),
            created_at: now()?,
            job_id: None,
            params: plan.params,
            defaults_used,
            privacy: EbmStatement::new(plan),
            schema: encoder.schema().clone(),
            literals: encoder.literals().iter().map(|l| l.name.clone()).collect(),
            edits: Vec::new(),
            model,
        })
    }

    /// Parse and check (the caller checked format and version).
    pub fn from_value(value: serde_json::Value) -> Result<EbmFile, LearnError> {
        let file: EbmFile =
            serde_json::from_value(value).map_err(|e| LearnError::ModelFormat(e.to_string()))?;
        let n_literals = crate::learn::trained::check_envelope(
            &file.algorithm,
            ALGORITHM,
            file.task,
            &file.schema,
            &file.literals,
        )?;
        file.model
            .check(n_literals, file.task)
            .map_err(LearnError::ModelFormat)?;
        Ok(file)
    }

    /// A new version with `edit` applied and recorded.
    pub fn edited(&self, edit: &ModelEdit) -> Result<EbmFile, LearnError> {
        let mut next = self.clone();
        match edit {
            ModelEdit::Monotone {
                feature,
                increasing,
            } => next.model.make_monotone(feature, *increasing),
            ModelEdit::SetValues { feature, values } => next.model.set_values(feature, values),
        }
        .map_err(LearnError::InvalidParameter)?;
        next.privacy.post_processing.push(format!(
            "{}: {} (post-processing of the released model; no further privacy cost)",
            now()?,
            serde_json::to_string(edit).unwrap_or_default()
        ));
        next.edits.push(edit.clone());
        next.created_at = now()?;
        Ok(next)
    }
}
