//! The ldp-naive-bayes model file: the version-2 envelope (format, version,
//! algorithm, task) around the local-DP statement, the schema and a
//! dp-linear model body (`learn::linear::LinearModel`: intercept and one
//! coefficient per literal), which predicts and inspects as dp-linear's.
//!
//! dp-linear's own file cannot hold it honestly: its statement describes
//! central noise (sigmas, a charged epsilon and delta) and its parameters
//! are dp-linear's. So the envelope and statement are this learner's, the
//! body is shared.

use serde::{Deserialize, Serialize};

use super::{NaiveBayesPlan, NaiveBayesSpec};
use crate::data::{Encoder, Schema, Task};
use crate::learn::LearnError;
use crate::learn::linear::LinearModel;
use crate::learn::linear::file::FILE_VERSION;
use crate::learn::model::{MODEL_FORMAT, SOFTWARE_VERSION};
use crate::privacy::mechanisms;

/// The `algorithm` field of an ldp-naive-bayes file.
pub const ALGORITHM: &str = "ldp-naive-bayes";

/// The privacy statement of an ldp-naive-bayes model (SPEC §6).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NaiveBayesStatement {
    /// The per-row local epsilon the owner declared.
    pub local_epsilon: f64,
    /// Central epsilon charged: 0 (post-processing of a local-DP release).
    pub epsilon: f64,
    /// Central delta charged: 0.
    pub delta: f64,
    /// The local-DP protocol (`sampled-column`).
    pub protocol: String,
    /// The neighbouring relation.
    pub neighbouring: String,
    /// Report rows (one per respondent).
    pub n_rows: usize,
    /// Why the run is epsilon-local DP and costs nothing centrally.
    pub accounting: String,
    /// What training computes from the reports.
    pub mechanism: String,
    /// The sensitivity argument in one line.
    pub sensitivity: String,
    /// How the client's noise is sampled.
    pub sampler: String,
    /// The ids of the mechanisms the collection ran (`privacy::mechanisms`).
    pub mechanisms: Vec<String>,
    /// The software that trained the model.
    pub software_version: String,
}

impl NaiveBayesStatement {
    fn new(plan: &NaiveBayesPlan, n_rows: usize) -> NaiveBayesStatement {
        let e = plan.local.epsilon;
        let rr = mechanisms::RANDOMIZED_RESPONSE;
        NaiveBayesStatement {
            local_epsilon: e,
            epsilon: 0.0,
            delta: 0.0,
            protocol: plan.local.protocol.as_str().into(),
            neighbouring: "any two values of one respondent's row: each row was randomized on the client before upload (local DP), so the guarantee holds against the server too".into(),
            n_rows,
            accounting: format!(
                "{e}-local DP, randomized on the client: each row drew one feature column uniformly (independently of its values) and reported that column's (value, label) pair by {} at the full epsilon {e}; one mechanism per row, no composition. Training is post-processing of that release and spends no central budget. The server cannot check the randomization: the dataset's owner declared it",
                rr.cited()
            ),
            mechanism: "no central mechanism: naive Bayes from the unbiased estimates (c - n q) / (p - q) of each column's (value, label) counts, clipped to one standard deviation of their noise (docs/privacy.md, \"Local DP collection: sampled-column\")".into(),
            sensitivity: "none needed: the reports are already local-DP, and every output of training is a function of them (post-processing)".into(),
            sampler: mechanisms::sampler_text(&[rr]),
            mechanisms: vec![rr.id.to_owned()],
            software_version: SOFTWARE_VERSION.into(),
        }
    }
}

/// An ldp-naive-bayes model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NaiveBayesFile {
    /// Always [`MODEL_FORMAT`].
    pub format: String,
    /// Always [`FILE_VERSION`].
    pub version: u32,
    /// Always [`ALGORITHM`].
    pub algorithm: String,
    /// The task (binary classification).
    pub task: Task,
    /// RFC 3339 creation time.
    pub created_at: String,
    /// The service job that trained it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The parameters (none today).
    pub params: NaiveBayesSpec,
    /// Whether every parameter took its default.
    pub defaults_used: bool,
    /// The local-DP statement.
    pub privacy: NaiveBayesStatement,
    /// The owner's schema, so that predictions take raw values.
    pub schema: Schema,
    /// Literal names in index order (a check against the schema).
    pub literals: Vec<String>,
    /// The log-odds as a linear model over the literals; `curvatures` holds
    /// the estimated rows with each literal.
    pub model: LinearModel,
}

impl NaiveBayesFile {
    /// Wrap a trained model.
    pub fn new(
        encoder: &Encoder,
        plan: &NaiveBayesPlan,
        n_rows: usize,
        model: LinearModel,
    ) -> Result<NaiveBayesFile, LearnError> {
        let created_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .map_err(|e| LearnError::InvalidParameter(format!("clock: {e}")))?;
        Ok(NaiveBayesFile {
            format: MODEL_FORMAT.into(),
            version: FILE_VERSION,
            algorithm: ALGORITHM.into(),
            task: encoder.schema().task(),
            created_at,
            job_id: None,
            params: NaiveBayesSpec::default(),
            defaults_used: true,
            privacy: NaiveBayesStatement::new(plan, n_rows),
            schema: encoder.schema().clone(),
            literals: encoder.literals().iter().map(|l| l.name.clone()).collect(),
            model,
        })
    }

    /// Parse and check (the caller checked format and version).
    pub fn from_value(value: serde_json::Value) -> Result<NaiveBayesFile, LearnError> {
        let file: NaiveBayesFile =
            serde_json::from_value(value).map_err(|e| LearnError::ModelFormat(e.to_string()))?;
        let n_literals = crate::learn::trained::check_envelope(
            &file.algorithm,
            ALGORITHM,
            file.task,
            &file.schema,
            &file.literals,
        )?;
        if matches!(file.task, Task::Regression { .. }) {
            return Err(LearnError::ModelFormat(
                "an ldp-naive-bayes model is a classifier".into(),
            ));
        }
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
