//! The weak hypotheses a LazyBB model is made of: 1-Rules (LazyBB §4.1) and
//! TopDown decision trees over the literals (LazyBB §4.2).

use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use crate::data::BitMatrix;

/// Rows per parallel chunk of the margin updates (a multiple of 64, the bit
/// matrix's word).
const PARALLEL_ROWS: usize = 1 << 16;

/// One weak hypothesis `h: x -> {-1, +1}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Hypothesis {
    /// `+1` when literal `literal` is true (or false, when `negated`), else `-1`.
    Literal {
        /// Index into the model's literal list.
        literal: u32,
        /// Predict `+1` when the literal is false.
        negated: bool,
    },
    /// The constant `+1` (`positive`) or `-1`.
    Constant {
        /// Which constant.
        positive: bool,
    },
    /// A decision tree whose splits test literals.
    Tree {
        /// The nodes; the root is node 0 and every child index is larger than
        /// its parent's (so the tree is acyclic by construction).
        nodes: Vec<TreeNode>,
    },
}

/// One node of a [`Hypothesis::Tree`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TreeNode {
    /// Test a literal and go on to one of two children.
    Split {
        /// The literal tested.
        literal: u32,
        /// Child for rows where the literal is false.
        if_false: u32,
        /// Child for rows where the literal is true.
        if_true: u32,
    },
    /// Predict `+1` (`positive`) or `-1`.
    Leaf {
        /// The leaf's label.
        positive: bool,
    },
}

impl Hypothesis {
    /// The candidate with index `index` in the order the 1-Rule learner
    /// enumerates them: `x_0..x_{d-1}`, then `not x_0..not x_{d-1}`, then the
    /// constants `+1`, `-1` (so `2d + 2` candidates).
    pub(crate) fn from_candidate_index(index: usize, d: usize) -> Hypothesis {
        match index {
            i if i < d => Hypothesis::Literal {
                literal: i as u32,
                negated: false,
            },
            i if i < 2 * d => Hypothesis::Literal {
                literal: (i - d) as u32,
                negated: true,
            },
            i if i == 2 * d => Hypothesis::Constant { positive: true },
            _ => Hypothesis::Constant { positive: false },
        }
    }

    /// `h(x)` for a row given by a predicate "is literal l true?".
    pub fn evaluate(&self, is_true: impl Fn(u32) -> bool) -> bool {
        match self {
            Hypothesis::Literal { literal, negated } => is_true(*literal) != *negated,
            Hypothesis::Constant { positive } => *positive,
            Hypothesis::Tree { nodes } => {
                let mut node = 0usize;
                loop {
                    match nodes[node] {
                        TreeNode::Leaf { positive } => return positive,
                        TreeNode::Split {
                            literal,
                            if_false,
                            if_true,
                        } => {
                            node = if is_true(literal) { if_true } else { if_false } as usize;
                        }
                    }
                }
            }
        }
    }

    /// The literals this hypothesis reads.
    pub fn literals(&self) -> Vec<u32> {
        match self {
            Hypothesis::Literal { literal, .. } => vec![*literal],
            Hypothesis::Constant { .. } => Vec::new(),
            Hypothesis::Tree { nodes } => nodes
                .iter()
                .filter_map(|n| match n {
                    TreeNode::Split { literal, .. } => Some(*literal),
                    TreeNode::Leaf { .. } => None,
                })
                .collect(),
        }
    }

    /// Check the structure against `d` literals: indices in range, children
    /// after their parents, every node reachable shape-wise. Returns a message.
    pub(crate) fn check(&self, d: usize) -> Result<(), String> {
        match self {
            Hypothesis::Literal { literal, .. } if *literal as usize >= d => Err(format!(
                "hypothesis refers to literal {literal}, but the schema has {d}"
            )),
            Hypothesis::Tree { nodes } => {
                if nodes.is_empty() {
                    return Err("a tree has no nodes".into());
                }
                // Exactly one parent for every node but the root: with children after
                // parents this makes it a tree, so walking it (inspection prints every
                // path) is linear, not exponential as on a shared-node DAG.
                let mut has_parent = vec![false; nodes.len()];
                for (i, node) in nodes.iter().enumerate() {
                    if let TreeNode::Split {
                        literal,
                        if_false,
                        if_true,
                    } = node
                    {
                        if *literal as usize >= d {
                            return Err(format!(
                                "tree splits on literal {literal}, but the schema has {d}"
                            ));
                        }
                        for child in [*if_false, *if_true] {
                            if child as usize <= i || child as usize >= nodes.len() {
                                return Err(format!("tree node {i} has an invalid child {child}"));
                            }
                            if std::mem::replace(&mut has_parent[child as usize], true) {
                                return Err(format!("tree node {child} has two parents"));
                            }
                        }
                    }
                }
                if let Some(orphan) = has_parent.iter().skip(1).position(|p| !p) {
                    return Err(format!("tree node {} is unreachable", orphan + 1));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Add `step * y_i h(x_i)` to each entry of `margins` (the LazyBB margin
    /// update, SPEC §4.1, with `step = 1`; LazyBB keeps `2 s + label` per row
    /// and uses `step = 2`).
    pub(crate) fn add_margins(
        &self,
        features: &BitMatrix,
        labels: &[i8],
        margins: &mut [i32],
        step: i32,
    ) {
        match self {
            Hypothesis::Constant { positive } => {
                let h = if *positive { step } else { -step };
                let update = |(margins, labels): (&mut [i32], &[i8])| {
                    for (m, &y) in margins.iter_mut().zip(labels) {
                        *m += h * i32::from(y);
                    }
                };
                if margins.len() <= PARALLEL_ROWS {
                    update((margins, labels));
                } else {
                    margins
                        .par_chunks_mut(PARALLEL_ROWS)
                        .zip(labels.par_chunks(PARALLEL_ROWS))
                        .for_each(update);
                }
            }
            Hypothesis::Literal { .. } | Hypothesis::Tree { .. } => {
                // h(x) as a bitset over the rows: a literal's column (or its
                // complement), a tree's `true_rows` (constant work, every node).
                let tree_rows;
                let (column, flip) = match self {
                    Hypothesis::Literal { literal, negated } => (
                        features.column(*literal as usize),
                        if *negated { u64::MAX } else { 0 },
                    ),
                    _ => {
                        tree_rows = self.true_rows(features);
                        (tree_rows.as_slice(), 0)
                    }
                };
                // Integer updates, one per row: the same result in any
                // order, so chunks of rows run in parallel.
                let update = |((margins, labels), column): ((&mut [i32], &[i8]), &[u64])| {
                    for ((chunk_m, chunk_y), &word) in
                        margins.chunks_mut(64).zip(labels.chunks(64)).zip(column)
                    {
                        let bits = word ^ flip;
                        for (b, (m, &y)) in chunk_m.iter_mut().zip(chunk_y).enumerate() {
                            // h = +1 when the bit is set, -1 otherwise; branch-free.
                            let h = 2 * ((bits >> b) & 1) as i32 - 1;
                            *m += step * h * i32::from(y);
                        }
                    }
                };
                if margins.len() <= PARALLEL_ROWS {
                    // One chunk (n alone decides): no hand-off to the pool.
                    update(((margins, labels), column));
                } else {
                    margins
                        .par_chunks_mut(PARALLEL_ROWS)
                        .zip(labels.par_chunks(PARALLEL_ROWS))
                        .zip(column.par_chunks(PARALLEL_ROWS / 64))
                        .for_each(update);
                }
            }
        }
    }

    /// The rows where `h(x) = +1`, as a bitset of `features.words_per_column()`
    /// words (bits past the last row are unspecified), with the same work for
    /// every row: a tree's nodes are visited in order (children come after
    /// their parents, `check`), each node's set of reaching rows is split
    /// word-wise by its literal's column into its children's sets, and the
    /// positive leaves' sets are OR-ed. No branch depends on a row and no
    /// walk stops early, so a prediction pass over private rows (training's
    /// margin updates, a DP evaluation) takes a time fixed by n and the
    /// tree's shape (issue 26; docs/privacy.md, "Timing"). Walking each row
    /// down its own path, as `evaluate` does, takes a row-dependent number of
    /// steps.
    pub fn true_rows(&self, features: &BitMatrix) -> Vec<u64> {
        let words = features.words_per_column();
        match self {
            Hypothesis::Literal { literal, negated } => {
                let flip = if *negated { u64::MAX } else { 0 };
                features
                    .column(*literal as usize)
                    .iter()
                    .map(|w| w ^ flip)
                    .collect()
            }
            Hypothesis::Constant { positive } => vec![if *positive { u64::MAX } else { 0 }; words],
            Hypothesis::Tree { nodes } => {
                let mut reach: Vec<Vec<u64>> = vec![Vec::new(); nodes.len()];
                reach[0] = vec![u64::MAX; words];
                let mut out = vec![0u64; words];
                for (i, node) in nodes.iter().enumerate() {
                    let here = std::mem::take(&mut reach[i]);
                    match *node {
                        TreeNode::Split {
                            literal,
                            if_false,
                            if_true,
                        } => {
                            let column = features.column(literal as usize);
                            reach[if_true as usize] =
                                here.iter().zip(column).map(|(r, c)| r & c).collect();
                            reach[if_false as usize] =
                                here.iter().zip(column).map(|(r, c)| r & !c).collect();
                        }
                        TreeNode::Leaf { positive } => {
                            let keep = if positive { u64::MAX } else { 0 };
                            for (o, r) in out.iter_mut().zip(&here) {
                                *o |= r & keep;
                            }
                        }
                    }
                }
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::BitMatrixBuilder;
    use rand::{RngExt, SeedableRng, rngs::StdRng};

    /// A random tree over `d` literals with `splits` internal nodes, nodes
    /// numbered so that children come after their parents.
    fn random_tree(rng: &mut StdRng, d: u32, splits: usize) -> Hypothesis {
        let mut nodes = vec![TreeNode::Leaf {
            positive: rng.random(),
        }];
        for _ in 0..splits {
            let leaves: Vec<usize> = (0..nodes.len())
                .filter(|&i| matches!(nodes[i], TreeNode::Leaf { .. }))
                .collect();
            let at = leaves[rng.random_range(0..leaves.len())];
            let next = nodes.len() as u32;
            nodes[at] = TreeNode::Split {
                literal: rng.random_range(0..d),
                if_false: next,
                if_true: next + 1,
            };
            nodes.push(TreeNode::Leaf {
                positive: rng.random(),
            });
            nodes.push(TreeNode::Leaf {
                positive: rng.random(),
            });
        }
        let tree = Hypothesis::Tree { nodes };
        tree.check(d as usize).unwrap();
        tree
    }

    /// The constant-work bitset agrees with walking each row down its path,
    /// for trees of 0 to 6 splits, literals and constants, on row counts
    /// that do and do not fill the last word.
    #[test]
    fn true_rows_agrees_with_each_rows_path() {
        let mut rng = StdRng::seed_from_u64(7);
        let d = 9u32;
        for n in [1usize, 63, 64, 65, 300] {
            let mut builder = BitMatrixBuilder::new(d as usize);
            for _ in 0..n {
                let active: Vec<u32> = (0..d).filter(|_| rng.random_bool(0.4)).collect();
                builder.push_row(&active);
            }
            let features = builder.finish();
            let mut hypotheses = vec![
                Hypothesis::Constant { positive: true },
                Hypothesis::Constant { positive: false },
                Hypothesis::Literal {
                    literal: 3,
                    negated: false,
                },
                Hypothesis::Literal {
                    literal: 3,
                    negated: true,
                },
            ];
            for splits in 0..=6 {
                for _ in 0..5 {
                    hypotheses.push(random_tree(&mut rng, d, splits));
                }
            }
            for h in &hypotheses {
                let bits = h.true_rows(&features);
                assert_eq!(bits.len(), features.words_per_column());
                for i in 0..n {
                    let walked = h.evaluate(|l| features.get(i, l as usize));
                    assert_eq!((bits[i / 64] >> (i % 64)) & 1 == 1, walked, "{h:?} row {i}");
                }
                // The margin update reads the same bitset.
                let labels: Vec<i8> = (0..n).map(|i| if i % 3 == 0 { -1 } else { 1 }).collect();
                let mut margins = vec![0i32; n];
                h.add_margins(&features, &labels, &mut margins, 2);
                for i in 0..n {
                    let hx = if h.evaluate(|l| features.get(i, l as usize)) {
                        1
                    } else {
                        -1
                    };
                    assert_eq!(margins[i], 2 * hx * i32::from(labels[i]));
                }
            }
        }
    }
}
