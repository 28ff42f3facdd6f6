//! DPBoost's model (the released trees), its prediction and inspection, and
//! the version-2 model file with the privacy statement (SPEC §6).

use serde::{Deserialize, Serialize};

use super::params::{DpBoostParams, DpBoostPlan, L2, LeafRelease, clip_bound, leaf_sensitivity};
use super::tree::NEWTON_BOUND;
use super::tree::Tree;
use crate::data::{Encoder, Literal, Schema, Task};
use crate::learn::LearnError;
use crate::learn::lazybb::model::OneVsRestStatement;
use crate::learn::model::{MODEL_FORMAT, SOFTWARE_VERSION};
use crate::privacy::mechanisms;

/// The `algorithm` field of a DPBoost file.
pub const ALGORITHM: &str = "dpboost";
/// The envelope version (shared with the other newer learners).
pub const FILE_VERSION: u32 = 2;

/// The released model: a score is `initial_score` plus one leaf per tree;
/// a classifier's score is a logit, a regressor's is in scaled label units.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpBoostModel {
    /// The public or noisy initial score.
    pub initial_score: f64,
    /// Every tree, ensemble by ensemble.
    pub trees: Vec<Tree>,
}

impl DpBoostModel {
    /// The raw score of a row given its true literals (sorted ascending).
    pub fn raw(&self, active: &[u32]) -> f64 {
        self.initial_score
            + self
                .trees
                .iter()
                .map(|t| {
                    t.leaves
                        [t.leaf_of(|s| s.literals.iter().any(|l| active.binary_search(l).is_ok()))]
                })
                .sum::<f64>()
    }

    /// A regressor's raw score back in label units.
    pub fn unscale(task: Task, raw: f64) -> f64 {
        match task {
            Task::Binary | Task::Multiclass { .. } => raw,
            Task::Regression { min, max } => min + (raw.clamp(-1.0, 1.0) + 1.0) * (max - min) / 2.0,
        }
    }

    /// Structural check (a loaded file).
    pub fn check(&self, n_literals: usize, depth: u32) -> Result<(), String> {
        if !self.initial_score.is_finite() {
            return Err("non-finite initial score".into());
        }
        for t in &self.trees {
            if t.splits.len() != (1usize << depth) - 1 || t.leaves.len() != 1usize << depth {
                return Err("a tree does not have the model's depth".into());
            }
            if t.leaves.iter().any(|v| !v.is_finite()) {
                return Err("a non-finite leaf value".into());
            }
            if t.splits
                .iter()
                .any(|s| s.literals.iter().any(|&l| l as usize >= n_literals))
            {
                return Err("a split names an unknown literal".into());
            }
        }
        Ok(())
    }
}

/// The privacy statement of a DPBoost model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpBoostStatement {
    /// Total epsilon charged.
    pub epsilon: f64,
    /// Delta charged (always 0: pure DP).
    pub delta: f64,
    /// The neighbouring relation.
    pub neighbouring: String,
    /// Training rows (public).
    pub n_rows: usize,
    /// How the parts compose.
    pub accounting: String,
    /// The split of epsilon.
    pub budget_split: String,
    /// What is released, with which noise.
    pub mechanism: String,
    /// Laplace scale of report-noisy-max over the gains.
    pub split_scale: f64,
    /// Laplace scale of the first tree's leaf values (value units); for
    /// Newton leaves, of the gradient sums.
    pub leaf_scale: f64,
    /// The sensitivity argument in one line.
    pub sensitivity: String,
    /// Subset size of each tree position in an ensemble.
    pub subset_sizes: Vec<usize>,
    /// How the noise is sampled.
    pub sampler: String,
    /// Mechanism ids.
    pub mechanisms: Vec<String>,
    /// The software that trained it.
    pub software_version: String,
    /// The private binning phase, when the schema asked for private bins
    /// (`learn::binning`); absent otherwise, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binning: Option<crate::learn::binning::BinningStatement>,
    /// k classes: the one-vs-rest split of the budget (`super::multiclass`);
    /// absent for a binary or regression model, and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_vs_rest: Option<OneVsRestStatement>,
    /// A binary classifier's decision threshold (`super::threshold`): its
    /// plan and the released logit, which the initial score absorbed; absent
    /// without one and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<crate::learn::threshold::ThresholdRelease>,
}

impl DpBoostStatement {
    fn new(plan: &DpBoostPlan) -> DpBoostStatement {
        let p = plan.params;
        let unit = f64::from(1u32 << super::params::LEAF_BITS);
        let (leaf_text, leaf_scale, leaf_sensitivity_text) = match p.leaves {
            LeafRelease::ClippedMean => {
                let (_, leaf_units) = plan.leaf_noise(0);
                (
                    "exact discrete Laplace noise on the clipped leaf values".to_owned(),
                    leaf_units / unit,
                    format!(
                        "leaf vector L1 min(2/(1 + {L2}), 4 c) with c = (1 - eta)^p (GLC), {} for p = 0",
                        leaf_sensitivity(clip_bound(p.learning_rate, 0))
                    ),
                )
            }
            LeafRelease::Newton => {
                let (g, h) = plan.newton_noise();
                (
                    format!(
                        "Newton leaves (Maddock et al. 2022): exact discrete Laplace noise on every leaf's gradient sum (scale {}) and hessian sum (scale {}), value -S/(max(H, {}) + {L2}) clamped to [-{NEWTON_BOUND}, {NEWTON_BOUND}] as post-processing",
                        g / unit,
                        h / unit,
                        2.0 * h / unit
                    ),
                    g / unit,
                    "gradient-sum vector L1 2, hessian-sum vector L1 2 (one row leaves one leaf and joins one), half of the leaves' epsilon each".to_owned(),
                )
            }
        };
        DpBoostStatement {
            epsilon: plan.budget.epsilon(),
            delta: 0.0,
            neighbouring: "substitution of one row; the row count n is public".into(),
            n_rows: plan.n_rows,
            accounting: format!(
                "pure DP, basic composition: the initial score ({}) then {} ensembles of {} epsilon each; inside an ensemble the {} trees use disjoint random subsets (parallel composition); inside a tree {} levels of split selections and one release of the leaves compose sequentially",
                plan.epsilon_init,
                p.ensembles,
                plan.epsilon_ensemble,
                p.trees_per_ensemble,
                p.max_depth
            ),
            budget_split: format!(
                "{}% of epsilon to the initial score; of each ensemble's epsilon {}% to the splits ({} per level) and the rest to the leaves",
                p.init_share * 100.0,
                p.split_share * 100.0,
                plan.epsilon_level
            ),
            mechanism: format!(
                "DPBoost (Li et al. 2020, Alg. 1-2) on the schema's public split candidates: {} per node over the split gains, {leaf_text}; initial score {}",
                mechanisms::REPORT_NOISY_MAX_LAPLACE.cited(),
                if plan.epsilon_init > 0.0 {
                    "from a noisy label count/sum (exact discrete Laplace)"
                } else {
                    "0 (public)"
                }
            ),
            split_scale: plan.split_scale,
            leaf_scale,
            sensitivity: format!(
                "gradients clipped to [-1, 1] (GDF); gain 6 under substitution (twice Lemma 1's 3), plus a float margin: {}; {leaf_sensitivity_text} (docs/privacy.md, \"DPBoost\")",
                plan.split_sensitivity,
            ),
            subset_sizes: plan.sizes.clone(),
            sampler: format!(
                "{}; exact discrete Laplace draws on a 2^-20 grid of the leaf values (or sums); subsets from a uniform permutation drawn with exact integer sampling",
                mechanisms::sampler_text(&[mechanisms::REPORT_NOISY_MAX_LAPLACE])
            ),
            mechanisms: vec![mechanisms::REPORT_NOISY_MAX_LAPLACE.id.to_owned()],
            software_version: SOFTWARE_VERSION.into(),
            binning: None,
            one_vs_rest: None,
            threshold: None,
        }
    }

    /// A k-class model's statement: one binary fit's, wrapped in the
    /// one-vs-rest composition, with the job's whole epsilon.
    fn new_classes(plan: &DpBoostPlan, k: usize, total: f64) -> DpBoostStatement {
        let mut s = DpBoostStatement::new(plan);
        let per_fit = plan.budget.epsilon();
        s.epsilon = total;
        s.accounting = format!(
            "one-vs-rest over {k} classes: {k} binary DPBoost fits over the same rows, composed sequentially (basic composition: every row is in every fit), each {per_fit:e}-DP; within each fit, {}",
            s.accounting
        );
        s.budget_split = format!(
            "equal over the {k} one-vs-rest fits (epsilon / k each, rounded down); within each fit, {}",
            s.budget_split
        );
        s.mechanism = format!(
            "one-vs-rest over {k} classes, in each fit: {}; the class probabilities are the k fits' sigmoid probabilities normalised to sum to 1 (post-processing, not calibrated)",
            s.mechanism
        );
        s.one_vs_rest = Some(OneVsRestStatement {
            fits: k,
            epsilon_per_fit: per_fit,
            delta_per_fit: 0.0,
            composition: "basic (sequential) composition over the k fits; every fit is binary DPBoost with its own proof unchanged (docs/privacy.md, \"DPBoost for k classes\")".into(),
        });
        s
    }
}

/// A DPBoost model file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpBoostFile {
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
    pub params: DpBoostParams,
    /// Whether every parameter took its default.
    pub defaults_used: bool,
    /// What was spent and how.
    pub privacy: DpBoostStatement,
    /// The owner's schema.
    pub schema: Schema,
    /// Literal names in index order (a check against the schema).
    pub literals: Vec<String>,
    /// The trees of a binary or regression model; for k classes, empty (no
    /// trees, initial score 0): the trees are in `one_vs_rest`.
    pub model: DpBoostModel,
    /// k classes: one binary model per class, in the schema's class order
    /// ("is the row's class c?", `super::multiclass`); absent for a binary
    /// or regression model, and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub one_vs_rest: Vec<DpBoostModel>,
}

impl DpBoostFile {
    /// Wrap a trained model.
    pub fn new(
        encoder: &Encoder,
        plan: &DpBoostPlan,
        defaults_used: bool,
        model: DpBoostModel,
    ) -> Result<DpBoostFile, LearnError> {
        Ok(DpBoostFile {
            format: MODEL_FORMAT.into(),
            version: FILE_VERSION,
            algorithm: ALGORITHM.into(),
            task: encoder.schema().task(),
            created_at: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .map_err(|e| LearnError::InvalidParameter(format!("clock: {e}")))?,
            job_id: None,
            params: plan.params,
            defaults_used,
            privacy: DpBoostStatement::new(plan),
            schema: encoder.schema().clone(),
            literals: encoder.literals().iter().map(|l| l.name.clone()).collect(),
            model,
            one_vs_rest: Vec::new(),
        })
    }

    /// The file of a binary run whose decision threshold (`plan`) chose
    /// `logit` (already absorbed into the initial score): the statement
    /// gives the whole run's epsilon and how the two parts compose.
    pub fn with_threshold(
        mut self,
        plan: &crate::learn::threshold::ThresholdPlan,
        logit: f64,
    ) -> DpBoostFile {
        let s = &mut self.privacy;
        (s.accounting, s.budget_split) =
            plan.statement_texts(&s.accounting, &s.budget_split, s.epsilon);
        s.epsilon = plan.run_budget.epsilon();
        s.threshold = Some(crate::learn::threshold::ThresholdRelease { plan: *plan, logit });
        self
    }

    /// Wrap the k one-vs-rest fits of a multiclass plan (class 0 first).
    pub fn new_classes(
        encoder: &Encoder,
        plan: &DpBoostPlan,
        defaults_used: bool,
        fits: Vec<DpBoostModel>,
    ) -> Result<DpBoostFile, LearnError> {
        let Some((k, total)) = plan.one_vs_rest else {
            return Err(LearnError::InvalidParameter(
                "DPBoost: class fits need a multiclass plan".into(),
            ));
        };
        if fits.len() != k {
            return Err(LearnError::InvalidParameter(format!(
                "DPBoost: {} class fits for {k} classes",
                fits.len()
            )));
        }
        let empty = DpBoostModel {
            initial_score: 0.0,
            trees: Vec::new(),
        };
        let mut file = DpBoostFile::new(encoder, plan, defaults_used, empty)?;
        file.privacy = DpBoostStatement::new_classes(plan, k, total.epsilon());
        file.one_vs_rest = fits;
        Ok(file)
    }

    /// Whether the model predicts k classes (one-vs-rest fits).
    pub fn is_multiclass(&self) -> bool {
        matches!(self.task, Task::Multiclass { .. })
    }

    /// Parse and check (the caller checked format and version).
    pub fn from_value(value: serde_json::Value) -> Result<DpBoostFile, LearnError> {
        let file: DpBoostFile =
            serde_json::from_value(value).map_err(|e| LearnError::ModelFormat(e.to_string()))?;
        let n_literals = crate::learn::trained::check_envelope(
            &file.algorithm,
            ALGORITHM,
            file.task,
            &file.schema,
            &file.literals,
        )?;
        if !(1..=10).contains(&file.params.max_depth) {
            return Err(LearnError::ModelFormat("max_depth out of range".into()));
        }
        file.model
            .check(n_literals, file.params.max_depth)
            .map_err(LearnError::ModelFormat)?;
        match file.task {
            Task::Multiclass { k } => {
                if file.one_vs_rest.len() != k {
                    return Err(LearnError::ModelFormat(format!(
                        "a multiclass DPBoost model needs one fit per class ({k}), got {}",
                        file.one_vs_rest.len()
                    )));
                }
                if !file.model.trees.is_empty() || file.model.initial_score != 0.0 {
                    return Err(LearnError::ModelFormat(
                        "a multiclass DPBoost model keeps its trees in one_vs_rest, not in model"
                            .into(),
                    ));
                }
                for fit in &file.one_vs_rest {
                    fit.check(n_literals, file.params.max_depth)
                        .map_err(LearnError::ModelFormat)?;
                }
            }
            Task::Binary | Task::Regression { .. } => {
                if !file.one_vs_rest.is_empty() {
                    return Err(LearnError::ModelFormat(
                        "only a multiclass DPBoost model has one_vs_rest fits".into(),
                    ));
                }
            }
        }
        Ok(file)
    }

    /// Every row's output of `data` (encoded with the model's schema).
    pub fn raw_all(&self, data: &crate::data::Dataset) -> Vec<f64> {
        model_raw_all(&self.model, data)
            .into_iter()
            .map(|raw| DpBoostModel::unscale(self.task, raw))
            .collect()
    }

    /// k classes: every row's scores whose softmax is its normalised
    /// one-vs-rest probabilities (`multiclass::normalising_scores`), one
    /// vector of k per row.
    pub fn class_scores_all(&self, data: &crate::data::Dataset) -> Vec<Vec<f64>> {
        let logits: Vec<Vec<f64>> = self
            .one_vs_rest
            .iter()
            .map(|m| model_raw_all(m, data))
            .collect();
        (0..data.n_rows())
            .map(|i| {
                let row: Vec<f64> = logits.iter().map(|l| l[i]).collect();
                super::multiclass::normalising_scores(&row)
            })
            .collect()
    }

    /// k classes: one row's scores ([`Self::class_scores_all`]).
    pub fn class_scores(&self, active: &[u32]) -> Vec<f64> {
        let logits: Vec<f64> = self.one_vs_rest.iter().map(|m| m.raw(active)).collect();
        super::multiclass::normalising_scores(&logits)
    }

    /// A row's output: a classifier's logit or a regressor's value in label
    /// units.
    pub fn raw(&self, active: &[u32]) -> f64 {
        DpBoostModel::unscale(self.task, self.model.raw(active))
    }
}

/// Every row's raw score under `model`: every literal of every split of
/// every tree is read for every row (`Tree::leaves_of_rows`): work
/// independent of the rows, for DP evaluations (issue 26). The leaves are
/// summed in tree order and then added to the initial score, as
/// [`DpBoostModel::raw`] does, so a batch prediction equals the single-row
/// one bit for bit.
pub(crate) fn model_raw_all(model: &DpBoostModel, data: &crate::data::Dataset) -> Vec<f64> {
    let mut sums = vec![0.0f64; data.n_rows()];
    for t in &model.trees {
        for (s, leaf) in sums.iter_mut().zip(t.leaves_of_rows(&data.features)) {
            *s += t.leaves[leaf];
        }
    }
    sums.into_iter()
        .map(|sum| model.initial_score + sum)
        .collect()
}

/// What `inspect` shows of a DPBoost model: every tree with its splits (by
/// literal names) and leaf values; for k classes, every class's fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DpBoostInspection {
    /// The initial score (logit or scaled label); 0 for k classes.
    pub initial_score: f64,
    /// Trees per ensemble.
    pub trees_per_ensemble: u32,
    /// The trees in order (empty for k classes: see `classes`).
    pub trees: Vec<TreeOut>,
    /// k classes: each class's one-vs-rest fit, in schema order; absent
    /// otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<Vec<ClassTrees>>,
}

/// One class's one-vs-rest fit as inspected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassTrees {
    /// The class name.
    pub class: String,
    /// The fit's initial score (a logit of "class c").
    pub initial_score: f64,
    /// The fit's trees in order.
    pub trees: Vec<TreeOut>,
}

/// One tree as inspected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TreeOut {
    /// Splits in heap order: a row goes left when it matches the condition.
    pub splits: Vec<String>,
    /// Leaf values left to right (added to the score).
    pub leaves: Vec<f64>,
}

impl DpBoostInspection {
    /// Build from a file (post-processing: free).
    pub fn new(file: &DpBoostFile, encoder: &Encoder) -> DpBoostInspection {
        let classes = file.is_multiclass().then(|| {
            file.schema
                .class_names()
                .iter()
                .zip(&file.one_vs_rest)
                .map(|(name, fit)| ClassTrees {
                    class: name.clone(),
                    initial_score: fit.initial_score,
                    trees: trees_out(fit, encoder),
                })
                .collect()
        });
        DpBoostInspection {
            initial_score: file.model.initial_score,
            trees_per_ensemble: file.params.trees_per_ensemble,
            trees: trees_out(&file.model, encoder),
            classes,
        }
    }

    /// Human-readable text.
    pub fn to_text(&self) -> String {
        let Some(classes) = &self.classes else {
            return trees_text(self.initial_score, &self.trees, self.trees_per_ensemble);
        };
        let mut out = format!(
            "One-vs-rest over {} classes: one binary fit per class; a class's probability is its fit's, normalised over the classes\n",
            classes.len()
        );
        for c in classes {
            out.push_str(&format!("\nClass {:?}:\n", c.class));
            out.push_str(&trees_text(
                c.initial_score,
                &c.trees,
                self.trees_per_ensemble,
            ));
        }
        out
    }
}

/// A model's trees with their splits by literal names.
fn trees_out(model: &DpBoostModel, encoder: &Encoder) -> Vec<TreeOut> {
    let literals = encoder.literals();
    model
        .trees
        .iter()
        .map(|t| TreeOut {
            splits: t
                .splits
                .iter()
                .map(|s| {
                    let parts: Vec<&Literal> =
                        s.literals.iter().map(|&l| &literals[l as usize]).collect();
                    split_text(&parts)
                })
                .collect(),
            leaves: t.leaves.clone(),
        })
        .collect()
}

/// A tree list as text, after its initial score.
fn trees_text(initial_score: f64, trees: &[TreeOut], per_ensemble: u32) -> String {
    let mut out = format!(
        "Initial score: {:.6}\nTrees: {} ({} per ensemble)\n",
        initial_score,
        trees.len(),
        per_ensemble
    );
    for (i, t) in trees.iter().enumerate() {
        out.push_str(&format!("\nTree {}:\n", i + 1));
        write_node(&mut out, t, 0, 1);
    }
    out
}

fn write_node(out: &mut String, t: &TreeOut, node: usize, indent: usize) {
    let pad = "  ".repeat(indent);
    if node < t.splits.len() {
        out.push_str(&format!("{pad}if {}:\n", t.splits[node]));
        write_node(out, t, 2 * node + 1, indent + 1);
        out.push_str(&format!("{pad}else:\n"));
        write_node(out, t, 2 * node + 2, indent + 1);
    } else {
        out.push_str(&format!(
            "{pad}leaf {:+.6}\n",
            t.leaves[node - t.splits.len()]
        ));
    }
}

/// How a split reads: a prefix of one numeric column's intervals (the
/// candidates of `tree::candidates` for a numeric feature) as `x <= c`, the
/// upper bound of its last interval; any other set of literals (categories,
/// missing, booleans) as its names joined by "or".
fn split_text(parts: &[&Literal]) -> String {
    prefix_bound(parts)
        .map(|(column, bound)| format!("{column} <= {bound}"))
        .unwrap_or_else(|| {
            parts
                .iter()
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(" or ")
        })
}

/// `(column, c)` when `parts` are one column's first interval (`<= c0`)
/// followed by the next intervals in order (`in (c0, c1]`, `in (c1, c2]`,
/// ...), whose union is `column <= c`.
fn prefix_bound<'a>(parts: &[&'a Literal]) -> Option<(&'a str, &'a str)> {
    let (first, rest) = parts.split_first()?;
    let mut bound = first.condition.strip_prefix("<= ")?;
    for l in rest {
        let (lo, hi) = l
            .condition
            .strip_prefix("in (")?
            .strip_suffix(']')?
            .split_once(", ")?;
        if l.feature != first.feature || lo != bound {
            return None;
        }
        bound = hi;
    }
    Some((first.feature_name.as_str(), bound))
}

#[cfg(test)]
mod split_text_tests {
    use super::*;

    #[test]
    fn a_prefix_of_intervals_reads_as_one_bound() {
        let age = Literal::intervals(0, "age", &[25.0, 35.0, 45.5]);
        let parts: Vec<&Literal> = age[..3].iter().collect();
        assert_eq!(split_text(&parts), "age <= 45.5");
        assert_eq!(split_text(&[&age[0]]), "age <= 25");
    }

    #[test]
    fn other_sets_are_listed() {
        let age = Literal::intervals(0, "age", &[25.0, 35.0, 45.5]);
        let hours = Literal::intervals(1, "hours", &[40.0, 50.0]);
        // Not a prefix (skips the first interval), another column, categories.
        assert_eq!(
            split_text(&[&age[1], &age[2]]),
            "25 < age <= 35 or 35 < age <= 45.5"
        );
        assert_eq!(
            split_text(&[&age[0], &hours[1]]),
            "age <= 25 or 40 < hours <= 50"
        );
        let a = Literal::category(2, "workclass", "Private");
        let b = Literal::category(2, "workclass", "State-gov");
        assert_eq!(
            split_text(&[&a, &b]),
            "workclass == Private or workclass == State-gov"
        );
    }
}
