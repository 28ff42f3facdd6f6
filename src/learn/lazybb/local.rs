//! LazyBB on rows randomized on the client (local DP): the boosting weights
//! debiased over the randomized label ([`local_class_weights`]) and the
//! per-column correction of the 1-Rule's debiased errors ([`Corrector`],
//! the estimator on [`ColumnRr`]). docs/privacy.md, "Local DP collection".
//!
//! Everything here is post-processing of the randomized rows: no noise is
//! drawn and nothing is charged.

use super::LearnError;
use super::boost::FLUSH_BELOW;
use super::hypothesis::Hypothesis;
use super::one_rule::{ColumnRr, LiteralCorrection};
use crate::data::BitMatrix;

/// The class weights of `boost::class_weights` on rows with randomized
/// labels: the signed weights and `P+` debiased over the label. A row of
/// margin class `k` (margin `s = y~ H`) would have margin `-s` (class
/// `2 tau - k`) with the other label, so for any `f(y)` of its true label
/// `f^(y~) = (p_y f(y~) - (1 - p_y) f(-y~)) / g` is unbiased
/// (`g = 2 p_y - 1`; `E[f^] = f(y)` over `y~`). Applied to `mu(y H)` (the
/// normaliser), `-y mu(y H)` (the signed weights) and `mu(y H) [y = +1]`
/// (`P+`, per class in `positive_of_class`), it gives weights whose errors
/// need no further label debiasing. `H` is the ensemble's vote on the
/// randomized features; [`Corrector`] handles the columns it uses.
pub(crate) fn local_class_weights(
    count: &[u64],
    mu: &[f64],
    keep: f64,
    g: f64,
    signed_of_class: &mut [f64],
    positive_of_class: &mut [f64],
) -> Result<f64, LearnError> {
    let groups = mu.len();
    let flip = |k: usize| groups - 1 - k;
    let total: f64 = (0..groups)
        .map(|k| {
            let rows = (count[2 * k] + count[2 * k + 1]) as f64;
            rows * (keep * mu[k] - (1.0 - keep) * mu[flip(k)]) / g
        })
        .sum();
    if !(total.is_finite() && total > 0.0) {
        return Err(LearnError::InvalidParameter(
            "local DP: the label-debiased weights sum to no positive mass; use fewer rounds or a larger label epsilon".into(),
        ));
    }
    let mut p_positive = 0.0;
    for k in 0..groups {
        let weight = (keep * mu[k] + (1.0 - keep) * mu[flip(k)]) / (g * total);
        let weight = if weight < FLUSH_BELOW { 0.0 } else { weight };
        signed_of_class[2 * k] = weight; // y~ = -1
        signed_of_class[2 * k + 1] = -weight; // y~ = +1
        positive_of_class[2 * k] = -(1.0 - keep) * mu[flip(k)] / (g * total);
        positive_of_class[2 * k + 1] = keep * mu[k] / (g * total);
        p_positive += count[2 * k] as f64 * positive_of_class[2 * k]
            + count[2 * k + 1] as f64 * positive_of_class[2 * k + 1];
    }
    Ok(p_positive)
}

/// The per-column correction of [`ColumnRr`]: each row's reported value of
/// every column, the ensemble's vote `H_c(v)` on each value of each
/// column, and the corrections of the current round.
pub(crate) struct Corrector<'a> {
    columns: &'a [ColumnRr],
    /// Per column, per row: the index of the reported value.
    reported: Vec<Vec<u16>>,
    /// Per column, per value: the ensemble's vote on the column so far.
    votes: Vec<Vec<i32>>,
    used: Vec<bool>,
    column_of: Vec<usize>,
    tau: i32,
    corrections: Vec<LiteralCorrection>,
}

impl<'a> Corrector<'a> {
    /// Read each row's reported value of each column from `features`.
    pub(crate) fn new(
        columns: &'a [ColumnRr],
        features: &BitMatrix,
        tau: i32,
    ) -> Result<Corrector<'a>, LearnError> {
        let d = features.n_cols();
        let mut column_of = vec![usize::MAX; d];
        let mut reported = Vec::with_capacity(columns.len());
        for (c, column) in columns.iter().enumerate() {
            for j in column.literals.clone() {
                column_of[j] = c;
            }
            let mut values = Vec::with_capacity(features.n_rows());
            let mut lit = Vec::new();
            for i in 0..features.n_rows() {
                lit.clear();
                lit.extend(
                    column
                        .literals
                        .clone()
                        .filter(|&j| features.get(i, j))
                        .map(|j| j as u32),
                );
                let v = column
                    .values
                    .iter()
                    .position(|v| *v == lit)
                    .ok_or_else(|| {
                        LearnError::InvalidParameter(format!(
                            "local DP: row {} is not a value of its column's domain",
                            i + 1
                        ))
                    })?;
                values.push(v as u16);
            }
            reported.push(values);
        }
        if column_of.contains(&usize::MAX) {
            return Err(LearnError::InvalidParameter(
                "local DP: the column domains do not cover every literal".into(),
            ));
        }
        Ok(Corrector {
            columns,
            reported,
            votes: columns.iter().map(|c| vec![0; c.values.len()]).collect(),
            used: vec![false; columns.len()],
            column_of,
            tau,
            corrections: Vec::with_capacity(d),
        })
    }

    /// Record a chosen hypothesis' votes on its column.
    pub(crate) fn add(&mut self, h: &Hypothesis) {
        let Hypothesis::Literal { literal, negated } = *h else {
            return; // constants vote on no column (TopDown is refused)
        };
        let c = self.column_of[literal as usize];
        self.used[c] = true;
        for (v, vote) in self.columns[c].values.iter().zip(&mut self.votes[c]) {
            let lit = v.contains(&literal);
            *vote += if lit != negated { 1 } else { -1 };
        }
    }

    /// This round's corrections, from the rows' margin classes (`class[i] =
    /// 2 (s + tau) + [y~ = +1]`) and the per-class label-debiased weights.
    pub(crate) fn compute(
        &mut self,
        class: &[i32],
        signed_of_class: &[f64],
        positive_of_class: &[f64],
        p_positive: f64,
    ) -> &[LiteralCorrection] {
        let total = 1.0 - 2.0 * p_positive;
        self.corrections.clear();
        let max_index = 2 * self.tau;
        for (c, column) in self.columns.iter().enumerate() {
            let k = column.values.len();
            let (a, b): (Vec<f64>, Vec<f64>) = if self.used[c] {
                let votes = &self.votes[c];
                let mut a = vec![0.0; k];
                let mut b = vec![0.0; k];
                for (&cls, &rep) in class.iter().zip(&self.reported[c]) {
                    let (margin_index, positive) = (cls / 2, cls % 2);
                    let sign = 2 * positive - 1;
                    let base = votes[rep as usize];
                    for v in 0..k {
                        let index = (margin_index + sign * (votes[v] - base)).clamp(0, max_index);
                        let slot = (2 * index + positive) as usize;
                        a[v] += signed_of_class[slot];
                        b[v] += positive_of_class[slot];
                    }
                }
                (a, b)
            } else {
                // The weights do not depend on this column: A_c(v) = T~ and
                // B_c(v) = P~+ for every value.
                (vec![total; k], vec![p_positive; k])
            };
            let b_sum: f64 = b.iter().sum();
            for j in column.literals.clone() {
                let a_sum: f64 = column
                    .values
                    .iter()
                    .zip(&a)
                    .filter(|(v, _)| v.contains(&(j as u32)))
                    .map(|(_, a)| a)
                    .sum();
                self.corrections.push(LiteralCorrection {
                    a_sum,
                    b_sum,
                    other: column.other,
                    scale: column.scale,
                });
            }
        }
        &self.corrections
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::BitMatrixBuilder;

    /// Column 0: one-hot over literals 0..3 (3 values); column 1: a boolean
    /// (literal 3; values "false" lights nothing, "true" lights 3).
    fn columns() -> Vec<ColumnRr> {
        vec![
            ColumnRr {
                literals: 0..3,
                values: vec![vec![0], vec![1], vec![2]],
                other: 0.2,
                scale: 0.4,
            },
            ColumnRr {
                literals: 3..4,
                values: vec![vec![], vec![3]],
                other: 0.3,
                scale: 0.4,
            },
        ]
    }

    /// A used column's sums `A_c(v)`, `B_c(v)` match a brute-force
    /// recomputation of each row's class had its column been `v`; an unused
    /// column gives the plain `m T~` and `k P~+`.
    #[test]
    fn corrections_match_brute_force() {
        let n = 40usize;
        let tau = 3i32;
        let value_a: Vec<usize> = (0..n).map(|i| (i * 7) % 3).collect();
        let value_b: Vec<bool> = (0..n).map(|i| i % 4 == 1).collect();
        let mut builder = BitMatrixBuilder::new(4);
        for i in 0..n {
            let mut active = vec![value_a[i] as u32];
            if value_b[i] {
                active.push(3);
            }
            builder.push_row(&active);
        }
        let features = builder.finish();
        let columns = columns();
        let mut corrector = Corrector::new(&columns, &features, tau).unwrap();
        // One stump on literal 1 (column 0 == value 1), not negated.
        let h = Hypothesis::Literal {
            literal: 1,
            negated: false,
        };
        corrector.add(&h);
        assert_eq!(corrector.votes[0], [-1, 1, -1]);
        // Classes after that stump: margin s = y h(x), class 2 (s + tau) + [y = +1].
        let y: Vec<i32> = (0..n).map(|i| if i % 3 == 0 { 1 } else { -1 }).collect();
        let class: Vec<i32> = (0..n)
            .map(|i| {
                let h = if value_a[i] == 1 { 1 } else { -1 };
                2 * (y[i] * h + tau) + i32::from(y[i] > 0)
            })
            .collect();
        let classes = 2 * (2 * tau as usize + 1);
        let signed: Vec<f64> = (0..classes)
            .map(|c| 0.01 * (c as f64 + 1.0) * if c % 2 == 1 { -1.0 } else { 1.0 })
            .collect();
        let positive: Vec<f64> = (0..classes).map(|c| 0.003 * (c as f64 - 4.0)).collect();
        let p_positive = 0.37;
        let got = corrector
            .compute(&class, &signed, &positive, p_positive)
            .to_vec();
        assert_eq!(got.len(), 4);
        // Brute force for column 0.
        let votes = [-1, 1, -1];
        let mut a = [0.0; 3];
        let mut b = [0.0; 3];
        for &label in &y {
            for v in 0..3 {
                let margin = label * votes[v] + tau; // the row's margin had its value been v
                let slot = (2 * margin + i32::from(label > 0)) as usize;
                a[v] += signed[slot];
                b[v] += positive[slot];
            }
        }
        for j in 0..3 {
            assert!((got[j].a_sum - a[j]).abs() < 1e-12, "literal {j}");
            assert!((got[j].b_sum - b.iter().sum::<f64>()).abs() < 1e-12);
            assert_eq!((got[j].other, got[j].scale), (0.2, 0.4));
        }
        // Column 1 is unused: m T~ with m = 1 (only "true" lights it), k P~+.
        assert!((got[3].a_sum - (1.0 - 2.0 * p_positive)).abs() < 1e-12);
        assert!((got[3].b_sum - 2.0 * p_positive).abs() < 1e-12);
    }
}
