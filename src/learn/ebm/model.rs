//! The DP-EBM model: one shape function per feature (a value per merged
//! bin, with the bin's public noisy count) and an intercept; prediction,
//! inspection and post-processing edits (DP-EBM §5).
//!
//! Everything here is the released output of training or post-processing of
//! it: reading, predicting and editing cost no budget.

use serde::{Deserialize, Serialize};

use crate::data::{Dataset, Encoder, Task};

/// One feature's shape function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeFunction {
    /// The column (or, for a one-literal feature, the literal) name.
    pub feature: String,
    /// The literal of each base bin (`None`: the "literal false" bin).
    pub base: Vec<Option<u32>>,
    /// The first `ordered` base bins are a numeric column's intervals.
    pub ordered: usize,
    /// The merged bin of each base bin.
    pub bin_of_base: Vec<u16>,
    /// Public noisy row count of each merged bin (from the binning phase).
    pub counts: Vec<f64>,
    /// The function's value on each merged bin (logit units for a
    /// classifier, label units for a regressor), centred on the counts.
    /// Empty for a multiclass model, which has `class_values` instead.
    pub values: Vec<f64>,
    /// A multiclass model: one function per class (`[class][bin]`, logit
    /// units, each centred on the counts, and the k values of each bin
    /// summing to 0: softmax ignores a constant added to every class, so
    /// that is post-processing which makes the functions unique). Absent
    /// for binary and regression models, whose files are as before.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_values: Vec<Vec<f64>>,
}

impl ShapeFunction {
    /// Merged bins that hold an ordered (interval) base bin: a prefix.
    pub fn ordered_bins(&self) -> usize {
        self.bin_of_base[..self.ordered]
            .iter()
            .map(|&b| usize::from(b) + 1)
            .max()
            .unwrap_or(0)
    }

    /// A readable label of each merged bin, from its literals' conditions.
    pub fn bin_labels(&self, encoder: &Encoder) -> Vec<String> {
        let literals = encoder.literals();
        let mut labels = vec![Vec::<String>::new(); self.counts.len()];
        for (j, base) in self.base.iter().enumerate() {
            let text = match base {
                Some(l) => literals
                    .get(*l as usize)
                    .map_or_else(|| format!("literal {l}"), |x| x.condition.clone()),
                None => "false".to_owned(),
            };
            labels[usize::from(self.bin_of_base[j])].push(text);
        }
        labels.into_iter().map(|l| l.join(" | ")).collect()
    }
}

/// A trained DP-EBM.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EbmModel {
    /// Added to every prediction (the centred functions' means, and for a
    /// regressor the public starting point). 0 for a multiclass model.
    pub intercept: f64,
    /// A multiclass model: one intercept per class, in schema order
    /// (summing to 0). Absent for binary and regression models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_intercepts: Vec<f64>,
    /// One per feature.
    pub shapes: Vec<ShapeFunction>,
}

/// The model folded into one weight per literal: the prediction is
/// `base + sum over the row's true literals of delta[literal]`.
#[derive(Debug, Clone, PartialEq)]
pub struct EbmPredictor {
    task: Task,
    base: f64,
    delta: Vec<f64>,
    /// A multiclass model: `base` and `delta` per class (`[class]`,
    /// `[class][literal]`); empty otherwise.
    class_base: Vec<f64>,
    class_delta: Vec<Vec<f64>>,
}

/// Largest number of literals a model may index (the schema cap).
const MAX_LITERALS: usize = crate::data::MAX_LITERALS;

impl EbmModel {
    /// Check a loaded model against its literal count: lengths agree, every
    /// literal exists and belongs to one feature only, every number is finite.
    pub fn check(&self, n_literals: usize, task: Task) -> Result<(), String> {
        if !self.intercept.is_finite() {
            return Err("the intercept is not finite".into());
        }
        let k = task.n_classes().unwrap_or(0);
        if self.class_intercepts.len() != k {
            return Err(format!(
                "{} class intercepts for {k} classes",
                self.class_intercepts.len()
            ));
        }
        if self.class_intercepts.iter().any(|v| !v.is_finite()) {
            return Err("a class intercept is not finite".into());
        }
        if n_literals > MAX_LITERALS || self.shapes.len() > n_literals {
            return Err("more shape functions than literals".into());
        }
        let mut seen = vec![false; n_literals];
        for s in &self.shapes {
            let bins = s.counts.len();
            let lengths_agree = if k == 0 {
                s.values.len() == bins && s.class_values.is_empty()
            } else {
                s.values.is_empty()
                    && s.class_values.len() == k
                    && s.class_values.iter().all(|v| v.len() == bins)
            };
            if bins == 0 || !lengths_agree || bins > u16::MAX as usize {
                return Err(format!("shape {:?}: values and counts differ", s.feature));
            }
            if s.base.len() != s.bin_of_base.len() || s.ordered > s.base.len() {
                return Err(format!("shape {:?}: base bins do not match", s.feature));
            }
            if s.bin_of_base.iter().any(|&b| usize::from(b) >= bins) {
                return Err(format!(
                    "shape {:?}: a base bin maps past the bins",
                    s.feature
                ));
            }
            if s.base.iter().filter(|b| b.is_none()).count() > 1 {
                return Err(format!("shape {:?}: two \"false\" bins", s.feature));
            }
            for l in s.base.iter().flatten() {
                let l = *l as usize;
                if l >= n_literals || std::mem::replace(&mut seen[l], true) {
                    return Err(format!(
                        "shape {:?}: literal {l} out of range or reused",
                        s.feature
                    ));
                }
            }
            if s.values
                .iter()
                .chain(&s.counts)
                .chain(s.class_values.iter().flatten())
                .any(|v| !v.is_finite())
                || s.counts.iter().any(|c| *c < 0.0)
            {
                return Err(format!(
                    "shape {:?}: a value or count is not finite",
                    s.feature
                ));
            }
        }
        Ok(())
    }

    /// The folded predictor for `n_literals` literals.
    pub fn predictor(&self, task: Task, n_literals: usize) -> EbmPredictor {
        let mut base = self.intercept;
        let mut delta = vec![0.0; n_literals];
        // A multiclass model's shapes have no `values` (`fold_classes`).
        for s in self.shapes.iter().filter(|s| !s.values.is_empty()) {
            let value = |j: usize| s.values[usize::from(s.bin_of_base[j])];
            let default = s.base.iter().position(Option::is_none).map_or(0.0, value);
            base += default;
            for (j, l) in s.base.iter().enumerate() {
                if let Some(l) = l {
                    delta[*l as usize] = value(j) - default;
                }
            }
        }
        let (class_base, class_delta) = self.fold_classes(n_literals);
        EbmPredictor {
            task,
            base,
            delta,
            class_base,
            class_delta,
        }
    }

    /// A multiclass model's per-class folded form (empty otherwise): as
    /// [`EbmModel::predictor`], once per class.
    fn fold_classes(&self, n_literals: usize) -> (Vec<f64>, Vec<Vec<f64>>) {
        let mut base = self.class_intercepts.clone();
        let mut delta = vec![vec![0.0; n_literals]; base.len()];
        for s in &self.shapes {
            for (c, values) in s.class_values.iter().enumerate() {
                let value = |j: usize| values[usize::from(s.bin_of_base[j])];
                let default = s.base.iter().position(Option::is_none).map_or(0.0, value);
                base[c] += default;
                for (j, l) in s.base.iter().enumerate() {
                    if let Some(l) = l {
                        delta[c][*l as usize] = value(j) - default;
                    }
                }
            }
        }
        (base, delta)
    }

    /// Whether the model has one function per class (a multiclass model).
    pub fn is_multiclass(&self) -> bool {
        !self.class_intercepts.is_empty()
    }

    /// Global importance of each feature: the count-weighted mean of |f|
    /// (a multiclass model: of the mean of |f_c| over the classes).
    pub fn importances(&self) -> Vec<(String, f64)> {
        self.shapes
            .iter()
            .map(|s| {
                let total: f64 = s.counts.iter().sum();
                let magnitude = |b: usize| {
                    if s.class_values.is_empty() {
                        s.values[b].abs()
                    } else {
                        s.class_values.iter().map(|v| v[b].abs()).sum::<f64>()
                            / s.class_values.len() as f64
                    }
                };
                let weighted: f64 = s
                    .counts
                    .iter()
                    .enumerate()
                    .map(|(b, c)| magnitude(b) * c)
                    .sum();
                (
                    s.feature.clone(),
                    if total > 0.0 { weighted / total } else { 0.0 },
                )
            })
            .collect()
    }

    fn shape_mut(&mut self, feature: &str) -> Result<&mut ShapeFunction, String> {
        if self.is_multiclass() {
            return Err(
                "a multiclass dp-ebm model has one shape function per class; editing them is not supported yet".into(),
            );
        }
        self.shapes
            .iter_mut()
            .find(|s| s.feature == feature)
            .ok_or_else(|| format!("the model has no feature {feature:?}"))
    }

    /// Make a feature's function monotone over its ordered (interval) bins
    /// by pool-adjacent-violators weighted by the public noisy counts
    /// (DP-EBM §5.2); the unordered bins (e.g. `is missing`) keep their values.
    pub fn make_monotone(&mut self, feature: &str, increasing: bool) -> Result<(), String> {
        let s = self.shape_mut(feature)?;
        let m = s.ordered_bins();
        if m < 2 {
            return Err(format!(
                "feature {feature:?} has no order (it is not a numeric column with several bins)"
            ));
        }
        let weights: Vec<f64> = s.counts[..m].iter().map(|c| c.max(1.0)).collect();
        let fitted = pav(&s.values[..m], &weights, increasing);
        s.values[..m].copy_from_slice(&fitted);
        Ok(())
    }

    /// Set a feature's values by hand, one per merged bin.
    pub fn set_values(&mut self, feature: &str, values: &[f64]) -> Result<(), String> {
        let s = self.shape_mut(feature)?;
        if values.len() != s.values.len() {
            return Err(format!(
                "feature {feature:?} has {} bins; got {} values",
                s.values.len(),
                values.len()
            ));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err("values must be finite numbers".into());
        }
        s.values.copy_from_slice(values);
        Ok(())
    }
}

impl EbmPredictor {
    /// The folded form `(base, delta per literal)` (for export).
    pub(crate) fn parts(&self) -> (f64, &[f64]) {
        (self.base, &self.delta)
    }

    /// A multiclass model's k raw scores (logits, schema order) of one row:
    /// each class's base plus its literals' values in ascending order, the
    /// additions [`EbmPredictor::raw_classes_all`] makes, so one row scores
    /// bit for bit as it does in a batch.
    pub fn raw_classes(&self, active: &[u32]) -> Vec<f64> {
        self.class_base
            .iter()
            .zip(&self.class_delta)
            .map(|(&b, d)| active.iter().fold(b, |sum, &l| sum + d[l as usize]))
            .collect()
    }

    /// A multiclass model's k raw scores of every row (`[row][class]`): one
    /// pass per literal column and class, whatever the rows hold (as
    /// [`EbmPredictor::raw_all`]).
    pub fn raw_classes_all(&self, data: &Dataset) -> Vec<Vec<f64>> {
        let n = data.n_rows();
        let mut rows = vec![Vec::with_capacity(self.class_base.len()); n];
        for (&b, d) in self.class_base.iter().zip(&self.class_delta) {
            let mut out = vec![b; n];
            for (l, &w) in d.iter().enumerate() {
                if w != 0.0 {
                    data.features.add_where_set(l, w, &mut out);
                }
            }
            for (row, v) in rows.iter_mut().zip(out) {
                row.push(v);
            }
        }
        rows
    }

    /// The raw score of one row (logit, or the value for a regressor), added
    /// up in the order of [`EbmPredictor::raw_all`] (the same float result).
    pub fn raw(&self, active: &[u32]) -> f64 {
        active
            .iter()
            .fold(self.base, |sum, &l| sum + self.delta[l as usize])
    }

    /// Raw scores of every row: one pass per literal column.
    pub fn raw_all(&self, data: &Dataset) -> Vec<f64> {
        // Work that does not depend on the rows (a DP evaluation reads
        // private rows): `BitMatrix::add_where_set`. Zero weights are the
        // released model's, public.
        let mut out = vec![self.base; data.n_rows()];
        for (l, &d) in self.delta.iter().enumerate() {
            if d != 0.0 {
                data.features.add_where_set(l, d, &mut out);
            }
        }
        out
    }

    /// The task this predictor answers.
    pub fn task(&self) -> Task {
        self.task
    }
}

/// The logistic function, stable for large |x|.
pub fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `exp(x)` for `x` in [-40, 40] (clamped), branch-free so that the training
/// loop vectorises and takes the same time for every value: `x = k ln 2 + r`
/// with `|r| <= ln(2)/2`, `e^r` by its Taylor polynomial of degree 9
/// (relative error below 1e-11), times `2^k` built from the exponent bits.
/// Training uses it for residuals only; their clamp, not this accuracy, is
/// what the privacy argument rests on.
#[inline]
pub fn fast_exp(x: f64) -> f64 {
    const LN2_HI: f64 = 0.693_147_180_369_123_8;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    // Adding 1.5 * 2^52 rounds to an integer in the low mantissa bits (no
    // libm call): `t` holds k, and `t - MAGIC` is k as a float.
    const MAGIC: f64 = 6_755_399_441_055_744.0;
    let x = x.clamp(-40.0, 40.0);
    let t = x * std::f64::consts::LOG2_E + MAGIC;
    let k = t - MAGIC;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 362_880.0;
    for c in [
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    // t's bits are C + k with C's low 12 bits zero, so shifting C + k + 1023
    // left by 52 leaves exactly the exponent field of 2^k.
    p * f64::from_bits(t.to_bits().wrapping_add(1023) << 52)
}

/// The logistic function by [`fast_exp`], branch-free.
#[inline]
pub fn fast_sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + fast_exp(-x))
}

/// Weighted isotonic regression by pool-adjacent-violators: the
/// non-decreasing (or non-increasing) sequence closest to `values` in
/// weighted squared error. Weights must be positive.
pub fn pav(values: &[f64], weights: &[f64], increasing: bool) -> Vec<f64> {
    assert_eq!(values.len(), weights.len());
    let sign = if increasing { 1.0 } else { -1.0 };
    // Blocks of (weighted mean, weight, length), merged while they violate.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::with_capacity(values.len());
    for (&v, &w) in values.iter().zip(weights) {
        blocks.push((sign * v, w, 1));
        while blocks.len() >= 2 {
            let (m2, w2, n2) = blocks[blocks.len() - 1];
            let (m1, w1, n1) = blocks[blocks.len() - 2];
            if m1 <= m2 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = ((m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2);
        }
    }
    blocks
        .into_iter()
        .flat_map(|(m, _, n)| std::iter::repeat_n(sign * m, n))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_is_accurate_over_its_range() {
        let mut worst = 0.0f64;
        for i in -40_000..=40_000 {
            let x = f64::from(i) / 1000.0;
            worst = worst.max((fast_exp(x) / x.exp() - 1.0).abs());
        }
        assert!(worst < 1e-10, "{worst}");
        assert!((fast_sigmoid(0.3) - sigmoid(0.3)).abs() < 1e-12);
        assert_eq!(fast_exp(1e6), fast_exp(40.0));
    }
}
