//! ldp-naive-bayes: a naive Bayes classifier from sampled-column local-DP
//! reports (`local_dp::sampled_column`), emitted as a linear model over the
//! schema's literals so that prediction, OIP, inspection and the dashboard
//! treat it as they treat dp-linear (`learn::linear::LinearModel`).
//!
//! # Estimation (docs/privacy.md, "Local DP collection: sampled-column")
//!
//! For feature column `j`, let `n_j` rows have reported it (the draw is
//! uniform and independent of the data, so they are a uniform random subset
//! of the rows) and `c_j(z)` of them the pair `z = (v, y)`, one of `2 k_j`
//! values. Pair randomized response keeps `z` with probability `p` and moves
//! it to each other pair with `q` (`local_dp::randomized_response`), so
//! `E[c_j(z)] = n_j q + (p - q) N_j(z)` for the true count `N_j(z)` among
//! those rows, and
//!
//! `N^_j(z) = (c_j(z) - n_j q) / (p - q)`
//!
//! is unbiased (the generalized randomized response estimator of Wang et
//! al., "Locally differentially private protocols for frequency
//! estimation", USENIX Security 2017, §4.1, Eq. 2; the same inverse as
//! `randomized_response::Debias` with `m = 1`). Its variance is
//! `n_j q (1 - q) / (p - q)^2` where the true count is 0 (ibid., Eq. 3).
//!
//! Estimates can be negative or tiny, which would give infinite or wild log
//! ratios, so each is clipped to a floor of one standard deviation of a
//! zero cell's estimate, `sqrt(n_j q (1 - q)) / (p - q)`, and at least half
//! a row: a cell the noise cannot tell from empty is treated as being that
//! large (on Adult a floor of one standard deviation was as accurate as a
//! tiny floor at epsilon 2-8 and steadier at epsilon 1; docs/accuracy.md).
//!
//! The classifier is naive Bayes (Yilmaz et al., "Locally differentially
//! private naive Bayes classification", 2019, §3: the class prior and each
//! attribute's class-conditional frequencies from perturbed (value, label)
//! pairs):
//!
//! `log-odds(x) = log P(+)/P(-) + sum_j log P(x_j | +) / P(x_j | -)`
//!
//! with `P(y)` from the pooled label marginals of every column's estimates
//! (every row reports a label) and `P(v | y) = N^_j(v, y) / sum_u N^_j(u, y)`
//! from column `j`'s own clipped estimates. With a class list of `L`
//! classes (pairs `L v + y`, `local_dp::sampled_column`) the model has one
//! score per class, `log P(c) + sum_j log P(x_j | c)`, whose softmax is the
//! naive Bayes posterior (ibid.; the binary log-odds is the difference of
//! the two classes' scores).
//!
//! # As a linear model
//!
//! A column's term `w_j(v) = log P(v | +) / P(v | -)` depends only on which
//! of the column's literals value `v` lights, so it is an intercept share
//! plus one weight per literal ([`literal_weights`]): for a one-hot column
//! the weight of the value's literal; for a column with a value that lights
//! nothing (a boolean's `false`, a threshold column's last interval) that
//! value's term goes to the intercept and the others are differences. The
//! model's `curvatures` slot (dp-linear's public per-feature row count) holds
//! the estimated number of rows with each literal, `n / n_j sum N^_j`.
//!
//! # Privacy
//!
//! Nothing here draws noise or reads anything but the reports: the model is
//! post-processing of an epsilon-local-DP release and costs no central
//! budget (`PrivacyCost::LocalDp`).

pub mod file;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

pub use file::{ALGORITHM, NaiveBayesFile};

use super::LearnError;
use super::linear::features::{Block, layout};
use super::linear::{LinearModel, NumericFeatures};
use crate::data::{Dataset, Encoder, Task};
use crate::local_dp::sampled_column::{Report, SampledColumn, pair_index};
use crate::local_dp::{ColumnDomain, LocalDp, Protocol};

/// ldp-naive-bayes' parameters: none (the estimator and the floor are
/// fixed, module docs). Unknown fields are refused where requests are
/// parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NaiveBayesSpec {}

/// Smallest floor of a clipped count estimate, in rows.
pub const MIN_FLOOR: f64 = 0.5;

/// A checked plan: the sampled-column declaration it debiases.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NaiveBayesPlan {
    /// The dataset's declaration (sampled-column).
    pub local: LocalDp,
}

impl NaiveBayesSpec {
    /// Check that the rows are sampled-column reports (the only data this
    /// learner reads).
    pub fn plan(&self, local: Option<LocalDp>) -> Result<NaiveBayesPlan, LearnError> {
        match local {
            Some(local) if local.protocol == Protocol::SampledColumn => Ok(NaiveBayesPlan { local }),
            Some(local) => Err(LearnError::InvalidParameter(format!(
                "algorithm ldp-naive-bayes reads sampled-column reports; this dataset was randomized with the {} protocol, so choose lazybb with the dp-1r weak learner",
                local.protocol.as_str()
            ))),
            None => Err(LearnError::InvalidParameter(
                "algorithm ldp-naive-bayes trains only on rows randomized on the client with the sampled-column protocol (privboost randomize --protocol sampled-column, uploaded with local_dp_protocol = sampled-column); this dataset holds raw rows, so choose a central-DP learner".into(),
            )),
        }
    }
}

/// Per feature column: the debiased (value, label) count estimates.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnEstimate {
    /// Rows that reported the column.
    pub n: u64,
    /// `N^(z)` per pair `z = L v + y` (unclipped, may be negative).
    pub counts: Vec<f64>,
    /// The clipping floor (module docs).
    pub floor: f64,
}

/// The unbiased joint-count estimates of every feature column from the
/// reports (module docs, `N^_j(z)`).
pub fn estimate(protocol: &SampledColumn, reports: &[Report]) -> Vec<ColumnEstimate> {
    let d = protocol.n_features();
    let mut observed: Vec<Vec<u64>> = (0..d)
        .map(|f| vec![0; (protocol.n_labels() * protocol.k(f)) as usize])
        .collect();
    for r in reports {
        observed[r.feature][r.pair as usize] += 1;
    }
    observed
        .into_iter()
        .enumerate()
        .map(|(f, c)| {
            let rr = protocol.rr(f);
            let (p, q) = (rr.keep(), rr.other());
            let n: u64 = c.iter().sum();
            let nf = n as f64;
            // Wang et al. 2017, Eq. 2: (c - n q) / (p - q).
            let counts = c.iter().map(|&c| (c as f64 - nf * q) / (p - q)).collect();
            // Ibid., Eq. 3 at a true count of 0: n q (1 - q) / (p - q)^2.
            let sd = (nf * q * (1.0 - q)).sqrt() / (p - q);
            ColumnEstimate {
                n,
                counts,
                floor: sd.max(MIN_FLOOR),
            }
        })
        .collect()
}

/// Train: decode the stored reports, estimate, and fold naive Bayes into a
/// linear model over the literals. Errors if the rows are not
/// sampled-column reports of `encoder`'s schema.
pub fn fit(
    data: &Dataset,
    encoder: &Encoder,
    plan: &NaiveBayesPlan,
) -> Result<LinearModel, LearnError> {
    let protocol = SampledColumn::new(encoder.schema(), plan.local.epsilon)?;
    let reports = protocol.decode_reports(encoder, data)?;
    if reports.is_empty() {
        return Err(LearnError::NoRows);
    }
    let estimates = estimate(&protocol, &reports);
    naive_bayes(&protocol, encoder, &estimates, reports.len())
}

/// The naive Bayes model of the estimates (module docs), as a linear model:
/// binary, one table of log-odds (label 0, the positive class, over label
/// 1); k classes, one table per class of `log P(c) + sum_j log P(x_j | c)`,
/// whose softmax is the naive Bayes posterior.
pub fn naive_bayes(
    protocol: &SampledColumn,
    encoder: &Encoder,
    estimates: &[ColumnEstimate],
    n_rows: usize,
) -> Result<LinearModel, LearnError> {
    let labels = protocol.n_labels();
    let binary = matches!(encoder.schema().task(), Task::Binary);
    // The prior from every column's label marginal (each row reports its
    // label with the column it drew), clipped to half a row.
    let mut class = vec![0.0f64; labels as usize];
    for e in estimates {
        for (z, &c) in e.counts.iter().enumerate() {
            class[z % labels as usize] += c;
        }
    }
    let prior = |y: usize| class[y].max(MIN_FLOOR).ln();
    let tables = if binary { 1 } else { labels as usize };
    let mut intercepts: Vec<f64> = if binary {
        vec![prior(0) - prior(1)]
    } else {
        (0..tables).map(prior).collect()
    };
    let mut weights = vec![vec![0.0; encoder.n_literals()]; tables];
    let mut rows = vec![0.0; encoder.n_literals()];
    let domains = protocol.domains();
    for (f, e) in estimates.iter().enumerate() {
        let c = protocol.schema_column(f);
        let domain = domains.columns[c]
            .as_ref()
            .expect("a feature column has a domain");
        let k = domain.values.len();
        let count = |v: usize, y: u32| e.counts[pair_index(v as u32, y, labels) as usize];
        let clipped = |v: usize, y: u32| count(v, y).max(e.floor);
        let totals: Vec<f64> = (0..labels)
            .map(|y| (0..k).map(|v| clipped(v, y)).sum::<f64>())
            .collect();
        // log P(v | y) from the column's own clipped estimates.
        let log_p = |v: usize, y: u32| (clipped(v, y) / totals[y as usize]).ln();
        let name = encoder.schema().columns[c].name();
        let Some(Some(fi)) = encoder.column_role(name) else {
            return Err(LearnError::InvalidParameter(format!(
                "ldp-naive-bayes: column {name:?} is not a feature column"
            )));
        };
        let first = encoder.first_literal(fi) as usize;
        for (t, table) in weights.iter_mut().enumerate() {
            let terms: Vec<f64> = (0..k)
                .map(|v| {
                    if binary {
                        log_p(v, 0) - log_p(v, 1)
                    } else {
                        log_p(v, t as u32)
                    }
                })
                .collect();
            let (base, literal) = literal_weights(domain, &terms).ok_or_else(|| {
                LearnError::InvalidParameter(format!(
                    "ldp-naive-bayes: column {name:?}'s values are not a sum of literal weights"
                ))
            })?;
            intercepts[t] += base;
            for (o, w) in literal.into_iter().enumerate() {
                table[first + o] = w;
            }
        }
        let scale = if e.n > 0 {
            n_rows as f64 / e.n as f64
        } else {
            0.0
        };
        for o in 0..domain.n_literals as usize {
            rows[first + o] = domain
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.literals.contains(&(o as u32)))
                .map(|(v, _)| (0..labels).map(|y| count(v, y)).sum::<f64>() * scale)
                .sum();
        }
    }
    Ok(linear_model(encoder, &intercepts, &weights, &rows, n_rows))
}

/// `(base, w_l)` with `base + sum_{l lit by v} w_l = terms[v]` for every
/// value `v` of `domain` (module docs, "As a linear model"). The base is
/// the term of a value that lights no literal (0 if there is none); then,
/// values taken by increasing number of literals, each fixes its one
/// literal not yet known. `None` if some value cannot be matched (no
/// encoding the schema has today).
pub fn literal_weights(domain: &ColumnDomain, terms: &[f64]) -> Option<(f64, Vec<f64>)> {
    let base = domain
        .values
        .iter()
        .position(|v| v.literals.is_empty())
        .map_or(0.0, |v| terms[v]);
    let mut w: Vec<Option<f64>> = vec![None; domain.n_literals as usize];
    let mut order: Vec<usize> = (0..domain.values.len()).collect();
    order.sort_by_key(|&v| domain.values[v].literals.len());
    for &v in &order {
        let lits = &domain.values[v].literals;
        let unknown: Vec<u32> = lits
            .iter()
            .copied()
            .filter(|&l| w[l as usize].is_none())
            .collect();
        let known: f64 = lits.iter().filter_map(|&l| w[l as usize]).sum();
        match unknown.as_slice() {
            [] => {}
            [l] => w[*l as usize] = Some(terms[v] - base - known),
            _ => return None,
        }
    }
    let w: Vec<f64> = w.into_iter().map(|x| x.unwrap_or(0.0)).collect();
    let exact = domain.values.iter().zip(terms).all(|(v, &t)| {
        let sum = base + v.literals.iter().map(|&l| w[l as usize]).sum::<f64>();
        (sum - t).abs() <= 1e-9 * (1.0 + t.abs())
    });
    exact.then_some((base, w))
}

/// The dp-linear model body with these per-literal weights (one feature
/// per literal, value 1: `layout` with interval features puts every literal
/// in exactly one block): table 0 in `coefficients`, any others (classes
/// 1..k) in `class_coefficients`.
fn linear_model(
    encoder: &Encoder,
    intercepts: &[f64],
    weights: &[Vec<f64>],
    rows: &[f64],
    n_rows: usize,
) -> LinearModel {
    let blocks: Vec<Block> = layout(encoder, NumericFeatures::Intervals);
    let literal = |f: &super::linear::features::Feature| f.literals[0].0 as usize;
    let table = |t: usize| -> Vec<Vec<f64>> {
        blocks
            .iter()
            .map(|block| {
                if block.intercept {
                    vec![intercepts[t]]
                } else {
                    block
                        .features
                        .iter()
                        .map(|f| weights[t][literal(f)])
                        .collect()
                }
            })
            .collect()
    };
    let curvatures = blocks
        .iter()
        .map(|block| {
            if block.intercept {
                vec![n_rows as f64]
            } else {
                block.features.iter().map(|f| rows[literal(f)]).collect()
            }
        })
        .collect();
    LinearModel {
        coefficients: table(0),
        curvatures,
        class_coefficients: (1..intercepts.len()).map(table).collect(),
        blocks,
    }
}
