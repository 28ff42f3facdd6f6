//! `auto`'s public prior: which learner to run for a dataset, from public
//! facts only, fitted on the public benchmark suite (`../shared/data/suite`,
//! `scripts/suite.py`) and read from `prior.json` beside this file, which
//! `scripts/suite_lodo.py --emit-prior` writes (docs/accuracy.md, "auto").
//!
//! The rule: every cell of the suite (a set, an epsilon, pure or
//! approximate DP) ranks the learners by their measured accuracy (RMSE for
//! regression); a key of public facts collects the mean rank of each
//! learner over the cells that share it. A job's keys, finest first, are
//! (task, majority column kind, `n * epsilon` bucket, pure?), (task,
//! bucket, pure?), (task, pure?) and (pure?); the finest key the suite saw
//! gives the learners' order (a tie of mean ranks is broken by the next
//! coarser key's, then by name: `scripts/suite_lodo.py`'s `order`, which
//! writes `ranking` in that order). The buckets' width and offset on the
//! log10 scale ([`Buckets`]) are chosen leave-one-dataset-out too, and the
//! same file records them. It reads no row, so it costs nothing.
//!
//! The rule's quality is reported leave-one-dataset-out (each set scored by
//! the rule fitted on the others), never on the sets it was fitted on.

use std::sync::OnceLock;

use serde::Deserialize;

use crate::data::Task;
use crate::learn::family::{ColumnKinds, PublicFacts};
use crate::privacy::Budget;

/// The generated prior (see the module docs).
const PRIOR_JSON: &str = include_str!("prior.json");

/// One key of the prior and its learners, best first.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Entry {
    /// `binary`, `regression` or `multiclass`; `None` at the coarsest
    /// level.
    pub task: Option<String>,
    /// `numeric` or `categorical` (the majority of the feature columns).
    pub kind: Option<String>,
    /// The `n * epsilon` bucket ([`Buckets::label`]).
    pub bucket: Option<String>,
    /// Pure DP (delta = 0) or not.
    pub pure: bool,
    /// Learners, best mean rank first.
    pub ranking: Vec<String>,
}

/// How `n * epsilon` is cut into the prior's buckets: `per_decade` buckets
/// per power of ten, shifted by `offset` of a bucket. `scripts/suite_lodo.py`
/// chooses the pair from a grid leave-one-dataset-out (docs/accuracy.md,
/// "The prior's `n ε` buckets, chosen leave-one-dataset-out").
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct Buckets {
    /// Buckets per power of ten of `n * epsilon`.
    pub per_decade: f64,
    /// The shift of the bucket boundaries, in buckets.
    pub offset: f64,
}

impl Buckets {
    /// The bucket of `n * epsilon` (the signal-to-noise of a count query on
    /// `n` rows at `epsilon`, the quantity the learners' accuracy follows):
    /// `b{k}`, `k = floor(per_decade * log10(max(n epsilon, 1)) + offset)`,
    /// as the script's `n_eps_bucket` computes it (the `1e-9` keeps an exact
    /// boundary such as 1e4 in the bucket it opens, in both).
    pub fn label(self, n_rows: usize, epsilon: f64) -> String {
        let v = (n_rows as f64 * epsilon).max(1.0);
        let k = (self.per_decade * v.log10() + self.offset + 1e-9).floor();
        format!("b{k}")
    }
}

#[derive(Debug, Deserialize)]
struct PriorFile {
    buckets: Buckets,
    entries: Vec<Entry>,
}

/// The parsed prior. Invariant: `prior.json` is generated and checked by
/// the tests (it parses, every task and purity has a coarse entry).
fn file() -> &'static PriorFile {
    static FILE: OnceLock<PriorFile> = OnceLock::new();
    FILE.get_or_init(|| {
        serde_json::from_str::<PriorFile>(PRIOR_JSON)
            .expect("src/learn/auto/prior.json parses (tested)")
    })
}

/// The prior's entries.
pub fn entries() -> &'static [Entry] {
    &file().entries
}

/// The prior's `n * epsilon` buckets.
pub fn buckets() -> Buckets {
    file().buckets
}

/// The majority kind of the feature columns: `numeric` when at least half
/// are numeric, else `categorical` (booleans count as categorical).
pub fn majority_kind(kinds: ColumnKinds) -> &'static str {
    if kinds.numeric >= kinds.categorical {
        "numeric"
    } else {
        "categorical"
    }
}

fn task_name(task: Task) -> &'static str {
    match task {
        Task::Binary => "binary",
        Task::Regression { .. } => "regression",
        Task::Multiclass { .. } => "multiclass",
    }
}

/// The learners in the order the finest matching key of `entries` gives,
/// with `n * epsilon` cut by `buckets` (empty if no key matches).
pub fn ranking_in<'a>(
    entries: &'a [Entry],
    buckets: Buckets,
    facts: &PublicFacts,
    budget: Budget,
) -> &'a [String] {
    let task = task_name(facts.task);
    let kind = majority_kind(facts.kinds);
    let bucket = buckets.label(facts.n_rows, budget.epsilon());
    let bucket = bucket.as_str();
    let pure = budget.delta() == 0.0;
    let levels: [(Option<&str>, Option<&str>, Option<&str>); 4] = [
        (Some(task), Some(kind), Some(bucket)),
        (Some(task), None, Some(bucket)),
        (Some(task), None, None),
        (None, None, None),
    ];
    for (t, k, b) in levels {
        if let Some(e) = entries.iter().find(|e| {
            e.pure == pure
                && e.task.as_deref() == t
                && e.kind.as_deref() == k
                && e.bucket.as_deref() == b
        }) {
            return &e.ranking;
        }
    }
    &[]
}

/// The multiclass order of `entries` for the budget's purity: the entry
/// whose task is `multiclass` with no finer key (the multiclass rule has one
/// key, task and purity: seven suite sets are too few for finer ones;
/// `scripts/suite_lodo.py`, `multiclass_rule_keys`). Empty without one.
pub fn multiclass_ranking_in(entries: &[Entry], budget: Budget) -> &[String] {
    let pure = budget.delta() == 0.0;
    entries
        .iter()
        .find(|e| {
            e.pure == pure
                && e.task.as_deref() == Some("multiclass")
                && e.kind.is_none()
                && e.bucket.is_none()
        })
        .map_or(&[], |e| &e.ranking)
}

/// The shipped prior's multiclass order for a budget.
pub fn multiclass_ranking(budget: Budget) -> &'static [String] {
    multiclass_ranking_in(entries(), budget)
}

/// The shipped prior's order for a job.
pub fn ranking(facts: &PublicFacts, budget: Budget) -> &'static [String] {
    ranking_in(entries(), buckets(), facts, budget)
}
