//! The dp-linear model: a coefficient per feature of every block (logit units
//! for a classifier, label units for a regressor), prediction folded to one
//! weight per literal, inspection and load checks.
//!
//! Everything here is the released output of training: reading, predicting
//! and inspecting cost no budget.

use serde::{Deserialize, Serialize};

use super::features::Block;
use crate::data::{Dataset, Task};

/// A trained dp-linear model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearModel {
    /// The blocks (from the schema; a ranged line's values and bounds from
    /// its released range, params.rs item 0); block 0 is the intercept.
    pub blocks: Vec<Block>,
    /// One coefficient per feature of each block.
    pub coefficients: Vec<Vec<f64>>,
    /// The released noisy curvature of each feature (rows for a literal; the
    /// intercept's is n), shown by inspection.
    pub curvatures: Vec<Vec<f64>>,
    /// Multiclass: the coefficients of classes 1..k (schema order), each
    /// table shaped like `coefficients`, which holds class 0's; a class's
    /// logit is its table's linear score. Empty (and not written) for a
    /// binary classifier or a regressor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub class_coefficients: Vec<Vec<Vec<f64>>>,
}

/// The model folded for prediction: `base + sum over the row's true
/// literals of delta[literal]`.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearPredictor {
    task: Task,
    base: f64,
    delta: Vec<f64>,
    /// Multiclass: classes 1..k's `(base, delta)`, folded like class 0's.
    others: Vec<(f64, Vec<f64>)>,
}

/// One coefficient as inspected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoefficientOut {
    /// The block (column) name.
    pub block: String,
    /// The feature (literal name, or the column for a linear feature).
    pub feature: String,
    /// The coefficient (logit or label units per unit of the feature).
    pub coefficient: f64,
    /// For a linear feature: per unit of the column's raw value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_unit: Option<f64>,
    /// The public noisy curvature (rows for a literal).
    pub curvature: f64,
}

/// dp-linear's inspection.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinearInspection {
    /// The intercept (logit, or label units); a multiclass model's first
    /// class's.
    pub intercept: f64,
    /// Every other coefficient, in block order (a multiclass model's first
    /// class's).
    pub coefficients: Vec<CoefficientOut>,
    /// Multiclass: every class's intercept and coefficients (its logit), in
    /// schema order. Empty (and not written) for a binary classifier or a
    /// regressor.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassCoefficients>,
}

/// One class's coefficients of a multiclass dp-linear model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassCoefficients {
    /// The class name (from the schema).
    pub class: String,
    /// The class's intercept (logit).
    pub intercept: f64,
    /// The class's other coefficients, in block order.
    pub coefficients: Vec<CoefficientOut>,
}

impl LinearInspection {
    /// Human-readable text, largest |coefficient| first (per class for a
    /// multiclass model).
    pub fn to_text(&self) -> String {
        if self.classes.is_empty() {
            return coefficients_text(self.intercept, &self.coefficients);
        }
        let mut out = String::from(
            "Multiclass: one logit per class; a class's probability is the softmax of the logits.\n",
        );
        for c in &self.classes {
            out.push_str(&format!("\nClass {:?}\n", c.class));
            out.push_str(&coefficients_text(c.intercept, &c.coefficients));
        }
        out
    }
}

/// One coefficient table as text, largest |coefficient| first.
fn coefficients_text(intercept: f64, coefficients: &[CoefficientOut]) -> String {
    let mut out = format!(
        "Intercept: {intercept:+.6}\n\nCoefficients (largest first; noisy curvature = rows):\n"
    );
    let mut order: Vec<&CoefficientOut> = coefficients.iter().collect();
    order.sort_by(|a, b| b.coefficient.abs().total_cmp(&a.coefficient.abs()));
    for c in order {
        let unit = c
            .per_unit
            .map_or_else(String::new, |u| format!("  ({u:+.6} per unit)"));
        out.push_str(&format!(
            "  {:+12.6}  {:<48} {:>10.1}{unit}\n",
            c.coefficient, c.feature, c.curvature
        ));
    }
    out
}

/// Largest number of literals a model may index (the schema cap).
const MAX_LITERALS: usize = crate::data::MAX_LITERALS;

impl LinearModel {
    /// Check a loaded model against its literal count: block 0 and only it
    /// is the intercept (one feature, no literal), lengths agree, every
    /// literal exists and appears at most once among the line blocks and at
    /// most once among the others (the `both` layout puts a numeric column's
    /// interval literals on its line and on its corrections), every number
    /// is finite, every value in `[-1, 1]`.
    pub fn check(&self, n_literals: usize) -> Result<(), String> {
        if n_literals > MAX_LITERALS {
            return Err("too many literals".into());
        }
        let Some(first) = self.blocks.first() else {
            return Err("the model has no block".into());
        };
        if !first.intercept || first.features.len() != 1 || !first.features[0].literals.is_empty() {
            return Err("block 0 is not the intercept".into());
        }
        if self.coefficients.len() != self.blocks.len()
            || self.curvatures.len() != self.blocks.len()
        {
            return Err("coefficients, curvatures and blocks differ in number".into());
        }
        for table in &self.class_coefficients {
            if table.len() != self.coefficients.len()
                || table
                    .iter()
                    .zip(&self.coefficients)
                    .any(|(t, c)| t.len() != c.len())
            {
                return Err("a class's coefficients do not match the blocks".into());
            }
            if table.iter().flatten().any(|x| !x.is_finite()) {
                return Err("a class's coefficient is not finite".into());
            }
        }
        let mut seen = vec![[false; 2]; n_literals];
        for (b, block) in self.blocks.iter().enumerate() {
            if b > 0 && block.intercept {
                return Err(format!("block {:?}: a second intercept", block.name));
            }
            let k = block.features.len();
            if k == 0 || k > usize::from(u16::MAX) {
                return Err(format!("block {:?}: no feature or too many", block.name));
            }
            if self.coefficients[b].len() != k || self.curvatures[b].len() != k {
                return Err(format!(
                    "block {:?}: coefficients or curvatures do not match its features",
                    block.name
                ));
            }
            if self.coefficients[b]
                .iter()
                .chain(&self.curvatures[b])
                .any(|x| !x.is_finite())
            {
                return Err(format!("block {:?}: a number is not finite", block.name));
            }
            if let Some((lo, hi)) = block.bounds
                && !(lo.is_finite() && hi.is_finite() && lo < hi)
            {
                return Err(format!("block {:?}: bad bounds", block.name));
            }
            for f in &block.features {
                for &(l, v) in &f.literals {
                    let l = l as usize;
                    if l >= n_literals
                        || std::mem::replace(&mut seen[l][usize::from(block.is_line())], true)
                    {
                        return Err(format!(
                            "block {:?}: literal {l} out of range or reused",
                            block.name
                        ));
                    }
                    if !(-1.0..=1.0).contains(&v) {
                        return Err(format!("block {:?}: a value outside [-1, 1]", block.name));
                    }
                }
            }
        }
        Ok(())
    }

    /// The intercept.
    pub fn intercept(&self) -> f64 {
        self.coefficients[0][0]
    }

    /// The folded predictor for `n_literals` literals.
    pub fn predictor(&self, task: Task, n_literals: usize) -> LinearPredictor {
        let (base, delta) = self.fold(&self.coefficients, n_literals);
        LinearPredictor {
            task,
            base,
            delta,
            others: self
                .class_coefficients
                .iter()
                .map(|t| self.fold(t, n_literals))
                .collect(),
        }
    }

    /// One coefficient table folded to `(intercept, weight per literal)`.
    fn fold(&self, table: &[Vec<f64>], n_literals: usize) -> (f64, Vec<f64>) {
        let mut delta = vec![0.0; n_literals];
        for (block, coefficients) in self.blocks.iter().zip(table).skip(1) {
            for (f, &w) in block.features.iter().zip(coefficients) {
                for &(l, v) in &f.literals {
                    if let Some(d) = delta.get_mut(l as usize) {
                        *d += w * v;
                    }
                }
            }
        }
        (table[0][0], delta)
    }

    /// The inspection (a binary classifier's or a regressor's).
    pub fn inspect(&self) -> LinearInspection {
        self.inspect_classes(&[])
    }

    /// The inspection, with every class's coefficients under its name from
    /// `classes` (the schema's class list) for a multiclass model.
    pub fn inspect_classes(&self, classes: &[String]) -> LinearInspection {
        let tables = std::iter::once(&self.coefficients).chain(&self.class_coefficients);
        let classes = if self.class_coefficients.is_empty() {
            Vec::new()
        } else {
            tables
                .enumerate()
                .map(|(c, table)| ClassCoefficients {
                    class: classes.get(c).cloned().unwrap_or_else(|| c.to_string()),
                    intercept: table[0][0],
                    coefficients: self.coefficients_of(table),
                })
                .collect()
        };
        LinearInspection {
            intercept: self.intercept(),
            coefficients: self.coefficients_of(&self.coefficients),
            classes,
        }
    }

    /// A coefficient table's coefficients (the intercept left out), in
    /// block order.
    fn coefficients_of(&self, table: &[Vec<f64>]) -> Vec<CoefficientOut> {
        let mut coefficients = Vec::new();
        for (b, block) in self.blocks.iter().enumerate().skip(1) {
            for (j, f) in block.features.iter().enumerate() {
                let w = table[b][j];
                coefficients.push(CoefficientOut {
                    block: block.name.clone(),
                    feature: f.name.clone(),
                    coefficient: w,
                    // v = 2 (x - lo) / (hi - lo) - 1, so dv/dx = 2 / (hi - lo).
                    per_unit: block.bounds.map(|(lo, hi)| 2.0 * w / (hi - lo)),
                    curvature: self.curvatures[b][j],
                });
            }
        }
        coefficients
    }
}

impl LinearPredictor {
    /// The folded form `(base, delta per literal)` (for export).
    pub(crate) fn parts(&self) -> (f64, &[f64]) {
        (self.base, &self.delta)
    }

    /// The task.
    pub fn task(&self) -> Task {
        self.task
    }

    /// A regressor's value clamped to the schema's public label range
    /// (post-processing: it reads only the released model and public
    /// bounds). Every label lies in the range, so clamping never increases
    /// any row's error, and it caps the error of any prediction at the range
    /// whatever the noise did to the coefficients: the model cannot diverge
    /// the way an unclamped DP regression does on Abalone.
    fn clamped(&self, raw: f64) -> f64 {
        match self.task {
            Task::Binary | Task::Multiclass { .. } => raw,
            Task::Regression { min, max } => raw.clamp(min, max),
        }
    }

    /// `(b, W)`: the intercept and the sum of the absolute per-literal
    /// weights, so that every row's linear score is within `W` of `b`
    /// (whatever literals it has). A function of the model alone.
    pub fn score_bound(&self) -> (f64, f64) {
        (self.base, self.delta.iter().map(|d| d.abs()).sum())
    }

    /// The linear score (logit, or value) of a row given its true literals
    /// (in increasing order): added from the base in literal order, as
    /// [`Self::raw_all`] does, so one row predicts bit for bit as a table.
    pub fn raw(&self, active: &[u32]) -> f64 {
        self.clamped(
            active
                .iter()
                .filter_map(|&l| self.delta.get(l as usize))
                .fold(self.base, |acc, d| acc + d),
        )
    }

    /// Multiclass: the k logits of a row given its true literals (class 0
    /// first, as [`Self::raw`] gives it).
    pub fn raw_classes(&self, active: &[u32]) -> Vec<f64> {
        std::iter::once((self.base, &self.delta))
            .chain(self.others.iter().map(|(b, d)| (*b, d)))
            .map(|(base, delta)| {
                active
                    .iter()
                    .filter_map(|&l| delta.get(l as usize))
                    .fold(base, |acc, d| acc + d)
            })
            .collect()
    }

    /// Multiclass: the k logits of every row of `data`, `[row][class]`.
    pub fn raw_classes_all(&self, data: &Dataset) -> Vec<Vec<f64>> {
        let per_class: Vec<Vec<f64>> = std::iter::once((self.base, &self.delta))
            .chain(self.others.iter().map(|(b, d)| (*b, d)))
            .map(|(base, delta)| sums(base, delta, data))
            .collect();
        (0..data.n_rows())
            .map(|i| per_class.iter().map(|c| c[i]).collect())
            .collect()
    }

    /// The linear score of every row of `data`.
    pub fn raw_all(&self, data: &Dataset) -> Vec<f64> {
        sums(self.base, &self.delta, data)
            .into_iter()
            .map(|v| self.clamped(v))
            .collect()
    }
}

/// `base` plus the weights `delta` of each row's true literals, for every
/// row of `data` (literal by literal over the packed columns, in work that
/// does not depend on the rows: [`crate::data::BitMatrix::add_where_set`]).
/// A zero weight is skipped: the weights are the released model, public.
fn sums(base: f64, delta: &[f64], data: &Dataset) -> Vec<f64> {
    let mut out = vec![base; data.n_rows()];
    for (l, &d) in delta.iter().enumerate().take(data.n_literals()) {
        if d != 0.0 {
            data.features.add_where_set(l, d, &mut out);
        }
    }
    out
}
