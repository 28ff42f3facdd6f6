//! Private binning for every learner: the cut points of the schema's
//! `"bins": {"private": k}` columns, chosen by a DP quantile procedure as a
//! phase of its own before the learner's fit.
//!
//! At upload such a column is encoded on a public base grid of
//! `base_bins(k)` equal-width intervals (`data::base_bins`), so the stored
//! bit matrix holds the base literals. A job then, for each such column:
//!
//! 1. releases the histogram of its base intervals with exact discrete
//!    Laplace noise ([`noisy_histogram`]; the sensitivity argument is there);
//! 2. chooses `k - 1` of the base cut points from the public noisy
//!    cumulative counts, the first boundary at which the cumulative count
//!    reaches `j / k` of the noisy total, for `j = 1..k-1`
//!    ([`choose_cuts`]: post-processing). This is DP-EBM's left-to-right
//!    merge to about `n / k` rows per bin (Nori et al. 2021, App. 8.1;
//!    `ebm::bins::merge`), except that it always returns exactly `k` bins,
//!    so that the derived schema's shape (and with it every learner's plan)
//!    is public before any row is read;
//! 3. trains on the derived literals: each derived interval is the union
//!    (OR) of consecutive base intervals, each derived threshold `x <= c` is
//!    the base threshold at `c` ([`derive`](fn@derive)); the CSV is not read again.
//!
//! The model stores the derived schema (explicit `thresholds`), so
//! prediction and inspection need no private state.
//!
//! Budget ([`split`]): the phase takes [`BINNING_SHARE`] of the job's epsilon
//! (pure and (epsilon, delta) learners) or of its rho (zCDP learners), split
//! equally over the private columns; the cost composes in
//! [`PrivacyCost::then_pure`]. Proof: docs/privacy.md, "Private binning for
//! every learner".
//!
//! Timing: the phase's work depends on public sizes only: one popcount of
//! every base literal column, one noise draw per base interval, and one OR
//! of every base column into exactly one derived column.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::LearnError;
use crate::data::{Bins, Column, Dataset, Encoder, NumericEncoding, Schema};
use crate::privacy::{Budget, NoiseRng, PrivacyCost, exact, mechanisms, metrics, zcdp};

/// The share of the job's budget the binning phase takes: of epsilon for a
/// pure or (epsilon, delta) learner, of rho for a zCDP learner (DP-EBM's own
/// binning share, seed 003's default).
pub const BINNING_SHARE: f64 = 0.1;

/// L1 sensitivity of one column's released histogram under substitution
/// (see [`noisy_histogram`]).
const SENSITIVITY: f64 = 2.0;

/// The binning phase of a plan: public, fixed before any row is read.
#[derive(Debug, Clone, PartialEq)]
pub struct BinningPlan {
    /// Private-bins columns.
    pub columns: usize,
    /// The phase's pure epsilon (all columns, basic composition).
    pub epsilon: f64,
    /// Epsilon of each column's histogram.
    pub epsilon_per_column: f64,
    /// Whether the share was taken of rho (zCDP learner) or of epsilon.
    pub of_rho: bool,
    /// Discrete Laplace scale `2 / epsilon_per_column` as `num / den`,
    /// rounded up.
    pub scale: (u128, u128),
}

/// The job's budget split between the binning phase and the learner, for
/// `columns > 0` private-bins columns. `zcdp` says whether the learner
/// accounts in zCDP (known from its plan at the full budget).
///
/// - pure / (epsilon, delta) learner: the learner gets
///   `(1 - BINNING_SHARE) epsilon`, the phase the rest (computed as a
///   difference, which is exact in floating point, so the two add back to
///   the job's epsilon exactly);
/// - zCDP learner: `rho = rho_for(epsilon, delta)`; the phase gets
///   `epsilon_b = sqrt(2 BINNING_SHARE rho)` (so `epsilon_b^2 / 2` is its
///   share of rho) and the learner the budget whose conversion is the rest
///   of rho.
pub fn split(
    budget: Budget,
    columns: usize,
    zcdp: bool,
) -> Result<(Budget, BinningPlan), LearnError> {
    let (learner, epsilon) = if zcdp {
        let rho = zcdp::rho_for(budget.epsilon(), budget.delta())?;
        let rho_phase = BINNING_SHARE * rho;
        let learner = zcdp::epsilon_of(rho - rho_phase, budget.delta())?;
        (learner, (2.0 * rho_phase).sqrt())
    } else {
        let learner = (1.0 - BINNING_SHARE) * budget.epsilon();
        (learner, budget.epsilon() - learner)
    };
    let learner = Budget::new(learner, budget.delta())?;
    Ok((learner, BinningPlan::new(columns, epsilon, zcdp)?))
}

impl BinningPlan {
    fn new(columns: usize, epsilon: f64, of_rho: bool) -> Result<BinningPlan, LearnError> {
        let epsilon_per_column = epsilon / columns as f64;
        let scale = metrics::scale_for(SENSITIVITY, epsilon_per_column).map_err(|_| {
            LearnError::InvalidParameter(format!(
                "epsilon (epsilon): the private binning's share ({epsilon_per_column} per column) gives a noise scale the exact sampler cannot draw; use a larger epsilon"
            ))
        })?;
        Ok(BinningPlan {
            columns,
            epsilon,
            epsilon_per_column,
            of_rho,
            scale,
        })
    }

    /// The public summary stored with a job (its resource shows it).
    pub fn summary(&self) -> BinningSummary {
        BinningSummary {
            columns: self.columns,
            epsilon: self.epsilon,
            epsilon_per_column: self.epsilon_per_column,
            scale: self.noise_scale(),
            share: BINNING_SHARE,
            of_rho: self.of_rho,
        }
    }

    /// The noise scale on each base-interval count.
    pub fn noise_scale(&self) -> f64 {
        self.scale.0 as f64 / self.scale.1 as f64
    }

    fn budget_split(&self) -> String {
        format!(
            "{}% of the job's {} to the private binning ({} per column over {} columns, pure DP), the rest to the learner",
            BINNING_SHARE * 100.0,
            if self.of_rho { "rho" } else { "epsilon" },
            self.epsilon_per_column,
            self.columns
        )
    }

    /// The public noise description (estimate route, job resource).
    pub fn noise_json(&self) -> Value {
        json!({
            "mechanism": format!(
                "private binning: {} on each private-bins column's base-interval counts, then k - 1 cut points at the noisy quantiles",
                mechanisms::DISCRETE_LAPLACE.name
            ),
            "columns": self.columns,
            "epsilon": self.epsilon,
            "epsilon_per_column": self.epsilon_per_column,
            "scale": self.noise_scale(),
            "share": BINNING_SHARE,
            "budget_split": self.budget_split(),
        })
    }

    /// The phase's part of the model's privacy statement; `job` is the
    /// job's composed cost.
    pub fn statement(&self, columns: Vec<String>, job: PrivacyCost) -> BinningStatement {
        BinningStatement {
            epsilon: self.epsilon,
            epsilon_per_column: self.epsilon_per_column,
            columns,
            noise_scale: self.noise_scale(),
            budget_split: self.budget_split(),
            mechanism: format!(
                "{}: a noisy count of every base interval of each private-bins column, then k - 1 of the base cut points chosen at the noisy quantiles (post-processing)",
                mechanisms::DISCRETE_LAPLACE.cited()
            ),
            sensitivity: "each row lies in at most one base interval of a column, so substitution changes at most two counts by one: L1 sensitivity 2 per column (docs/privacy.md, \"Private binning for every learner\")".into(),
            job_cost: job,
        }
    }
}

/// The binning phase of a job as its resource shows it (public).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BinningSummary {
    /// Private-bins columns.
    pub columns: usize,
    /// The phase's pure epsilon.
    pub epsilon: f64,
    /// Epsilon of each column's histogram.
    pub epsilon_per_column: f64,
    /// Discrete Laplace scale on each base-interval count.
    pub scale: f64,
    /// The phase's share of the job's budget.
    pub share: f64,
    /// Whether the share is of the job's rho (a zCDP learner) rather than
    /// of its epsilon.
    pub of_rho: bool,
}

/// The binning phase in a model's privacy statement. The statement's
/// `epsilon` and `delta` are the job's totals; its learner-specific fields
/// (rho, per-round epsilon, noise) describe the learner's phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BinningStatement {
    /// The phase's pure epsilon.
    pub epsilon: f64,
    /// Epsilon of each column's histogram.
    pub epsilon_per_column: f64,
    /// The private-bins columns.
    pub columns: Vec<String>,
    /// Discrete Laplace scale on each count.
    pub noise_scale: f64,
    /// How the job's budget was split.
    pub budget_split: String,
    /// What was released, with which noise.
    pub mechanism: String,
    /// The sensitivity argument in one line.
    pub sensitivity: String,
    /// The job's cost, binning and learner composed.
    pub job_cost: PrivacyCost,
}

/// One private-bins column of the base schema.
#[derive(Debug, Clone)]
struct PrivateColumn {
    name: String,
    k: u32,
    /// The base cut points (`base_bins(k) - 1` of them).
    cuts: Vec<f64>,
    encoding: NumericEncoding,
    /// Index of the column's first literal.
    first: usize,
    /// Whether the column has an `is missing` literal (after the values).
    missing: bool,
}

fn private_columns(schema: &Schema) -> Result<Vec<PrivateColumn>, LearnError> {
    let mut out = Vec::new();
    let mut first = 0;
    for column in &schema.columns {
        if let Column::Numeric(c) = column
            && let Some(Bins::Private(k)) = c.bins
        {
            out.push(PrivateColumn {
                name: c.name.clone(),
                k,
                cuts: c.cut_points()?,
                encoding: c.encoding,
                first,
                missing: c.missing.is_some(),
            });
        }
        first += column.n_literals();
    }
    Ok(out)
}

/// The number of private-bins columns of a schema (public).
pub fn count_private(schema: &Schema) -> usize {
    private_columns(schema).map_or(0, |c| c.len())
}

/// The exact histogram of a private column's base intervals (missing rows
/// are in none). Work: one popcount per base literal column.
fn histogram(data: &Dataset, col: &PrivateColumn) -> Vec<i128> {
    let n_values = match col.encoding {
        NumericEncoding::Intervals => col.cuts.len() + 1,
        NumericEncoding::Thresholds => col.cuts.len(),
    };
    let count = |l: usize| -> i128 {
        data.features
            .column(l)
            .iter()
            .map(|w| i128::from(w.count_ones()))
            .sum()
    };
    let values: Vec<i128> = (0..n_values).map(|j| count(col.first + j)).collect();
    match col.encoding {
        NumericEncoding::Intervals => values,
        NumericEncoding::Thresholds => {
            // Literal j is `x <= c_j`: interval counts are the differences of
            // the cumulative counts, the last interval the rest of the
            // non-missing rows.
            let present = data.n_rows() as i128
                - if col.missing {
                    count(col.first + n_values)
                } else {
                    0
                };
            let mut hist = Vec::with_capacity(n_values + 1);
            let mut below = 0;
            for &c in &values {
                hist.push(c - below);
                below = c;
            }
            hist.push(present - below);
            hist
        }
    }
}

/// The histogram plus exact discrete Laplace noise of the plan's scale on
/// every count, clamped at 0 (post-processing).
///
/// # Privacy (substitution neighbours, n public)
///
/// Every row lies in exactly one base interval of the column, or in none if
/// its value is missing (a missing count is not released). Substituting one
/// row therefore changes at most two counts, each by one: the L1
/// sensitivity of the histogram is 2. Discrete Laplace noise of scale
/// `2 / epsilon_c` on every count is `epsilon_c`-DP (the geometric
/// mechanism; `exact::discrete_laplace`, CKS20 §2), the scale being rounded
/// up. The `m` columns compose to `m epsilon_c = epsilon_b` (basic
/// composition).
pub fn noisy_histogram(
    hist: &[i128],
    plan: &BinningPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<u64>, LearnError> {
    let (num, den) = plan.scale;
    hist.iter()
        .map(|&h| {
            let z = exact::additive_discrete_laplace(rng, num, den)?;
            Ok(u64::try_from((h + z).max(0)).unwrap_or(u64::MAX))
        })
        .collect()
}

/// `k - 1` strictly increasing base boundaries (boundary `i` is the cut
/// point after base interval `i`) from public noisy counts: for
/// `j = 1..k-1`, the first boundary whose cumulative count reaches `j / k`
/// of the noisy total, kept strictly after the previous one and early
/// enough that the rest still fit. Needs `counts.len() >= k`.
pub fn choose_cuts(counts: &[u64], k: u32) -> Vec<usize> {
    let k = k as usize;
    let boundaries = counts.len() - 1;
    let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    let mut prefix = Vec::with_capacity(boundaries);
    let mut sum: u128 = 0;
    for &c in &counts[..boundaries] {
        sum += u128::from(c);
        prefix.push(sum);
    }
    let mut cuts = Vec::with_capacity(k - 1);
    for j in 1..k {
        let lo = cuts.last().map_or(0, |&p| p + 1);
        let hi = boundaries - (k - j);
        // `prefix * k >= j * total`, in integers.
        let at = (lo..=hi)
            .find(|&i| prefix[i] * k as u128 >= j as u128 * total)
            .unwrap_or(hi);
        cuts.push(at);
    }
    cuts
}

/// Run the phase: choose every private column's cut points, and return the
/// derived encoder and dataset the learner trains on, with the names of the
/// private columns.
pub fn run(
    plan: &BinningPlan,
    data: &Dataset,
    encoder: &Encoder,
    rng: &mut NoiseRng,
) -> Result<(Encoder, Dataset, Vec<String>), LearnError> {
    let columns = private_columns(encoder.schema())?;
    if columns.len() != plan.columns {
        return Err(LearnError::InvalidParameter(
            "the schema's private-bins columns differ from the plan's".into(),
        ));
    }
    let mut chosen = Vec::with_capacity(columns.len());
    for col in &columns {
        let noisy = noisy_histogram(&histogram(data, col), plan, rng)?;
        let cuts = choose_cuts(&noisy, col.k);
        chosen.push(cuts.iter().map(|&i| col.cuts[i]).collect::<Vec<f64>>());
    }
    let derived = encoder.schema().with_private_cuts(&chosen);
    let (encoder, data) = derive(data, encoder.schema(), &derived)?;
    Ok((encoder, data, columns.into_iter().map(|c| c.name).collect()))
}

mod derive;

pub use derive::derive;

#[cfg(test)]
mod tests;
