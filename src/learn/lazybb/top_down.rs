//! The DP TopDown weak learner: a decision tree over the literals grown by
//! Gini improvement (LazyBB §4.2, Alg 2; SPEC §4.3).
//!
//! For a tree `T` under the round's distribution `p`, each leaf `l` has the
//! class masses `a = p(leaf, y = +1)` and `b = p(leaf, y = -1)`, and
//! `w G(q) = 4 a b / (a + b)` (Gini `G(q) = 4 q (1 - q)`, `q = a / (a + b)`,
//! `w = a + b`; 0 for an empty leaf). Splitting leaf `l` by literal `j`
//! improves `Gsum` by `im(l, j) = wG(l) - wG(l & x_j = 0) - wG(l & x_j = 1)`.
//! The learner makes `t` splits, each chosen by report-noisy-max with Laplace
//! noise of scale `1 / eta` on `im(l, j)` over all (current leaf, literal)
//! pairs (the same guarantee as the exponential mechanism
//! `P(l, j) ∝ exp(eta im(l, j))` of LazyBB §4.2, with a running time that
//! does not depend on the scores); only the two new leaves' improvements are
//! computed after a split (the others are cached). Then it labels every leaf
//! by report-noisy-max over its two class masses with Laplace noise.
//!
//! # Privacy (the proven bound, not the paper's)
//!
//! Neighbours substitute one row `i*`; `p` and `p'` are kappa-smooth
//! (`p(i) <= zeta = 1/(kappa n)`) and within total variation `zeta`.
//!
//! - *Split selection.* `wG(a, b) = 4ab/(a+b)` has partial derivatives
//!   `4 b^2/(a+b)^2` and `4 a^2/(a+b)^2`, both in `[0, 4]`, so `im` is
//!   4-Lipschitz in the L1 norm of the four cell masses
//!   `(a_0, b_0, a_1, b_1)` of the two children (each partial derivative of
//!   `im` is a difference of two numbers in `[0, 4]`). Those masses change by
//!   at most `2 d_TV(p, p') <= 2 zeta` in L1 through the rows other than `i*`
//!   (they sit in the same cells under both datasets) plus at most
//!   `p(i*) + p'(i*) <= 2 zeta` through `i*` (it may leave one cell and enter
//!   another). So `|im_D - im_D'| <= 4 * 4 zeta = 16 zeta`, and one selection
//!   (report-noisy-max with scale `1 / eta`, `privacy::laplace`'s two-sided proof) is
//!   `2 eta 16 zeta = 32 eta zeta`-DP. The paper's Lemma 9.2 claims
//!   `4 zeta`; its proof drops the factor 4 of `G` and assumes the leaf's
//!   label fraction moves by at most zeta, which fails for light leaves
//!   (PAPERS.md §1.5). `t` splits compose to `32 t eta zeta`.
//! - *Leaf labels.* Given the released tree shape, the vector of all leaves'
//!   class masses has L1 sensitivity at most `2 zeta` (rows other than `i*`,
//!   by total variation) `+ 2 zeta` (row `i*`) `= 4 zeta`. Adding independent
//!   `Lap(s)` noise to every entry is `4 zeta / s`-DP (Laplace mechanism), and
//!   the labels are the per-leaf argmax of the noisy masses (post-processing).
//!   With `s = 1 / (8 t eta)` the leaves cost `32 t eta zeta`, the same as
//!   the splits.
//! - *Tree.* `64 t eta zeta` per call; over `tau` rounds with basic
//!   composition `eta = epsilon kappa n / (64 tau t)`
//!   ([`super::params::ValidLazyBbParams::calibrate`]).
//!
//! As implemented, the selections and the leaf noise are exact discrete
//! Laplace noise on a `2^-30` grid and the improvements and masses carry
//! float error; the
//! calibration charges both (`privacy::calibration::top_down_eta`,
//! `top_down_float_margin`; `docs/privacy.md`, "DP TopDown, exactly"), and
//! the leaf argument there reads the per-leaf report-noisy-max calls as one
//! discrete Laplace mechanism on the whole mass vector.
//!
//! The tree's shape (`t` splits, `t + 1` leaves) is fixed by `t`, never by the
//! data: no early stopping, and splits with no improvement stay candidates.
//!
//! # Constant work
//!
//! Scoring a new leaf takes two streaming passes of the column codes
//! ([`ColumnCodes::literal_sums`], as DP-1R's one pass a round): the
//! literals' sums of the leaf's positive-class masses, then of its
//! negative-class masses. A pass sees every row: a row outside the leaf
//! adds a weight of 0, chosen by its weight class, not by a branch. Each
//! tree scores the root and then two leaves per split, so a tree costs
//! `2 + 4 t` passes, and each pass's work depends on `n` and the public
//! schema only. Moving rows into the children of a split and updating the
//! margins ([`TopDown::add_margins`]) take one branch-free step per row. The
//! work per tree depends on `n`, `d` and `t` only (`docs/privacy.md`,
//! "Timing").

use super::hypothesis::{Hypothesis, TreeNode};
use std::ops::Range;

use super::column_codes::{ClassWeights, ColumnCodes};
use super::groups::GroupError;
use crate::data::BitMatrix;
use crate::privacy::{NoiseRng, PrivacyError, laplace};

/// How the learner chooses splits and labels.
pub(crate) enum TreeSelection<'a> {
    /// Laplace report-noisy-max for splits (scale `1 / eta` on `im`) and
    /// for leaf labels (scale `leaf_scale` on the class masses).
    Private {
        /// The splits' noise rate.
        eta: f64,
        /// Laplace scale of the leaf masses.
        leaf_scale: f64,
        /// The noise source.
        rng: &'a mut NoiseRng,
    },
    /// The best split and the majority label: the non-private tree.
    Best,
}

/// Column codes and buffers for growing trees on one dataset.
pub(crate) struct TopDown {
    codes: ColumnCodes,
    internal_nodes: usize,
    /// The tree node (a leaf) each row is in.
    leaf_of: Vec<u32>,
    /// Cached improvements of every (leaf, literal) candidate, by node.
    improvements: Vec<Vec<f64>>,
    scores: Vec<f64>,
    /// One pass's weight class of each row: its class, shifted past the
    /// classes if the row is in the leaf being scored.
    pass_class: Vec<i32>,
    /// One pass's weight of each such class: 0 outside the leaf.
    pass_weights: Vec<f64>,
    /// The literals' sums of the leaf's masses: positive class, negative.
    ones: [Vec<f64>; 2],
}

/// Class masses of some rows: `a = p(rows, y = +1)`, `b = p(rows, y = -1)`,
/// from the signed weights `s = -y p`.
#[derive(Clone, Copy, Default)]
struct Masses {
    a: f64,
    b: f64,
}

impl Masses {
    /// Add a row of signed weight `s` (to `a` if `s < 0`, else to `b`; both
    /// additions happen, one of them of 0).
    fn add(&mut self, s: f64) {
        self.a += (-s).max(0.0);
        self.b += s.max(0.0);
    }
    /// `w G(q) = 4ab / (a + b)`, 0 for an empty set.
    fn weighted_gini(self) -> f64 {
        let (a, b) = (self.a, self.b);
        if a + b > 0.0 {
            4.0 * a * b / (a + b)
        } else {
            0.0
        }
    }
}

/// Slot of rows in no leaf being scored.
const OTHER: usize = 2;

impl TopDown {
    /// Buffers for trees with `internal_nodes` splits on `features`, with
    /// its one-hot literal `groups` ([`ColumnCodes::new`]).
    pub(crate) fn new(
        features: &BitMatrix,
        groups: &[Range<usize>],
        internal_nodes: u32,
    ) -> Result<TopDown, GroupError> {
        let n = features.n_rows();
        Ok(TopDown {
            codes: ColumnCodes::new(features, groups)?,
            internal_nodes: internal_nodes as usize,
            leaf_of: vec![0; n],
            improvements: Vec::new(),
            scores: Vec::new(),
            pass_class: vec![0; n],
            pass_weights: Vec::new(),
            ones: [Vec::new(), Vec::new()],
        })
    }

    /// Grow one tree under the signed weights `w_i = -y_i p(i)`, given by
    /// weight class as for DP-1R.
    pub(crate) fn fit(
        &mut self,
        features: &BitMatrix,
        weights: ClassWeights<'_>,
        mut selection: TreeSelection<'_>,
    ) -> Result<Hypothesis, PrivacyError> {
        let d = self.codes.len();
        let n = features.n_rows();
        debug_assert_eq!(weights.class.len(), n);
        // A pass's classes are the weight classes, twice (public sizes).
        assert!(
            2 * weights.of_class.len() <= i32::MAX as usize,
            "too many weight classes"
        );
        self.leaf_of.iter_mut().for_each(|l| *l = 0);
        let mut nodes = vec![TreeNode::Leaf { positive: true }];
        let mut leaves: Vec<u32> = vec![0];
        self.improvements.clear();
        self.improvements.push(vec![0.0; d]);
        self.score_leaves(&[0], 1, weights);

        for _ in 0..self.internal_nodes {
            // Candidates (leaf, literal) in the order of `leaves`, then literal.
            self.scores.clear();
            let chosen = match &mut selection {
                TreeSelection::Private { eta, rng, .. } => {
                    for &leaf in &leaves {
                        self.scores
                            .extend_from_slice(&self.improvements[leaf as usize]);
                    }
                    laplace::report_noisy_max(rng, &self.scores, 1.0 / *eta)?
                }
                TreeSelection::Best => {
                    let mut best = (0, f64::NEG_INFINITY);
                    for (k, &leaf) in leaves.iter().enumerate() {
                        for (j, &im) in self.improvements[leaf as usize].iter().enumerate() {
                            if im > best.1 {
                                best = (k * d + j, im);
                            }
                        }
                    }
                    best.0
                }
            };
            let (leaf, literal) = (leaves[chosen / d], (chosen % d) as u32);
            let (if_false, if_true) = (nodes.len() as u32, nodes.len() as u32 + 1);
            nodes[leaf as usize] = TreeNode::Split {
                literal,
                if_false,
                if_true,
            };
            nodes.push(TreeNode::Leaf { positive: true });
            nodes.push(TreeNode::Leaf { positive: true });
            let column = features.column(literal as usize);
            // Rows of the split leaf move to if_false + bit (if_true is
            // if_false + 1); the same arithmetic for every row.
            for (i, l) in self.leaf_of.iter_mut().enumerate() {
                let bit = ((column[i / 64] >> (i % 64)) & 1) as u32;
                let moves = u32::from(*l == leaf);
                *l = moves * (if_false + bit) + (1 - moves) * *l;
            }
            leaves.retain(|&l| l != leaf);
            leaves.extend([if_false, if_true]);
            self.improvements.resize(nodes.len(), Vec::new());
            self.improvements[leaf as usize].clear();
            self.score_leaves(&[if_false, if_true], nodes.len(), weights);
        }

        // Leaf labels: class masses per leaf, then RNM (or the majority).
        let mut mass = vec![Masses::default(); nodes.len()];
        for (&l, &c) in self.leaf_of.iter().zip(weights.class) {
            mass[l as usize].add(weights.of_class[c as usize]);
        }
        for &leaf in &leaves {
            let Masses { a, b } = mass[leaf as usize];
            let positive = match &mut selection {
                TreeSelection::Private {
                    leaf_scale, rng, ..
                } => laplace::report_noisy_max(rng, &[a, b], *leaf_scale)? == 0,
                TreeSelection::Best => a >= b,
            };
            nodes[leaf as usize] = TreeNode::Leaf { positive };
        }
        Ok(Hypothesis::Tree { nodes })
    }

    /// `s(i) += step y_i h(x_i)` for the tree just grown by [`TopDown::fit`]
    /// (which must be `tree`): each row's prediction is its leaf's label,
    /// looked up from the leaf each row ended in, so every row costs the same
    /// (walking the tree would take as many steps as the row's depth).
    pub(crate) fn add_margins(
        &self,
        tree: &Hypothesis,
        labels: &[i8],
        margins: &mut [i32],
        step: i32,
    ) {
        let Hypothesis::Tree { nodes } = tree else {
            unreachable!("TopDown grows trees")
        };
        let prediction: Vec<i32> = nodes
            .iter()
            .map(|node| match node {
                TreeNode::Leaf { positive: true } => 1,
                TreeNode::Leaf { positive: false } => -1,
                TreeNode::Split { .. } => 0, // no row ends at a split
            })
            .collect();
        for ((m, &y), &leaf) in margins.iter_mut().zip(labels).zip(&self.leaf_of) {
            *m += step * prediction[leaf as usize] * i32::from(y);
        }
    }

    /// Compute and cache `im(leaf, j)` for every literal j, for the (one or
    /// two) leaves in `new_leaves`: per leaf, the masses of its rows with
    /// `x_j = 1` by two passes of the column codes (positive class, then
    /// negative), and those with `x_j = 0` as the leaf's total minus them.
    fn score_leaves(&mut self, new_leaves: &[u32], n_nodes: usize, weights: ClassWeights<'_>) {
        let mut slot_of_node = vec![OTHER; n_nodes];
        for (slot, &leaf) in new_leaves.iter().enumerate() {
            slot_of_node[leaf as usize] = slot;
        }
        let mut total = [Masses::default(); 3];
        for (&l, &c) in self.leaf_of.iter().zip(weights.class) {
            total[slot_of_node[l as usize]].add(weights.of_class[c as usize]);
        }
        let classes = weights.of_class.len();
        for (slot, &leaf) in new_leaves.iter().enumerate() {
            // Rows in the leaf take their class plus `classes`; the others
            // keep theirs, whose pass weight is 0 (the same steps per row).
            for ((p, &c), &l) in self
                .pass_class
                .iter_mut()
                .zip(weights.class)
                .zip(&self.leaf_of)
            {
                *p = c + classes as i32 * i32::from(l == leaf);
            }
            // The positive class's masses are `-w` where `w < 0`, the
            // negative class's `w` where `w > 0`.
            for (k, sign) in [(0, -1.0f64), (1, 1.0)] {
                self.pass_weights.clear();
                self.pass_weights.resize(classes, 0.0);
                self.pass_weights
                    .extend(weights.of_class.iter().map(|&w| (sign * w).max(0.0)));
                let pass = ClassWeights {
                    class: &self.pass_class,
                    of_class: &self.pass_weights,
                };
                self.codes.literal_sums(pass, &mut self.ones[k]);
            }
            let whole = total[slot];
            let improvements = &mut self.improvements[leaf as usize];
            improvements.clear();
            improvements.extend(self.ones[0].iter().zip(&self.ones[1]).map(|(&a, &b)| {
                let ones = Masses { a, b };
                // Clamped at 0 against rounding.
                let zeros = Masses {
                    a: (whole.a - a).max(0.0),
                    b: (whole.b - b).max(0.0),
                };
                whole.weighted_gini() - ones.weighted_gini() - zeros.weighted_gini()
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::BitMatrixBuilder;

    /// Per-row weights as weight classes: row i is class i.
    fn per_row(signed: &[f64]) -> (Vec<i32>, &[f64]) {
        ((0..signed.len() as i32).collect(), signed)
    }

    fn weights<'a>(rows: &'a (Vec<i32>, &'a [f64])) -> ClassWeights<'a> {
        ClassWeights {
            class: &rows.0,
            of_class: rows.1,
        }
    }

    /// Brute-force Gini improvement of splitting `rows` by literal j.
    fn brute_im(features: &BitMatrix, signed: &[f64], rows: &[usize], j: usize) -> f64 {
        let wg = |set: &mut dyn Iterator<Item = usize>| {
            let (mut a, mut b) = (0.0, 0.0);
            for i in set {
                if signed[i] < 0.0 {
                    a -= signed[i]
                } else {
                    b += signed[i]
                }
            }
            if a + b > 0.0 {
                4.0 * a * b / (a + b)
            } else {
                0.0
            }
        };
        wg(&mut rows.iter().copied())
            - wg(&mut rows.iter().copied().filter(|&i| features.get(i, j)))
            - wg(&mut rows.iter().copied().filter(|&i| !features.get(i, j)))
    }

    fn data() -> (BitMatrix, Vec<f64>) {
        let mut builder = BitMatrixBuilder::new(4);
        let mut signed = Vec::new();
        let mut state = 12345u64;
        for i in 0..300 {
            let mut active = Vec::new();
            for j in 0..4u32 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                // Literal 3 is dense (most rows), to exercise the complement lists.
                if (state >> 33) % 10 < if j == 3 { 8 } else { 4 } {
                    active.push(j);
                }
            }
            let label = active.contains(&0) ^ (i % 5 == 0);
            builder.push_row(&active);
            let w = 1.0 + (i % 3) as f64;
            signed.push(if label { -w } else { w });
        }
        let total: f64 = signed.iter().map(|s| s.abs()).sum();
        let signed = signed.iter().map(|s| s / total).collect();
        (builder.finish(), signed)
    }

    #[test]
    fn improvements_match_brute_force() {
        let (features, signed) = data();
        let mut learner = TopDown::new(&features, &[], 1).unwrap();
        learner.improvements = vec![vec![0.0; 4]];
        let rows = per_row(&signed);
        learner.score_leaves(&[0], 1, weights(&rows));
        let all: Vec<usize> = (0..300).collect();
        for j in 0..4 {
            let want = brute_im(&features, &signed, &all, j);
            assert!((learner.improvements[0][j] - want).abs() < 1e-12, "{j}");
        }
        // The signal literal 0 is the best split.
        let best = (0..4)
            .max_by(|&a, &b| learner.improvements[0][a].total_cmp(&learner.improvements[0][b]));
        assert_eq!(best, Some(0));
    }

    #[test]
    fn best_tree_has_t_splits_and_consistent_children() {
        let (features, signed) = data();
        let rows = per_row(&signed);
        for t in 1..=4 {
            let mut learner = TopDown::new(&features, &[], t).unwrap();
            let tree = learner
                .fit(&features, weights(&rows), TreeSelection::Best)
                .unwrap();
            let Hypothesis::Tree { nodes } = &tree else {
                panic!()
            };
            assert_eq!(nodes.len(), 2 * t as usize + 1);
            let splits = nodes
                .iter()
                .filter(|n| matches!(n, TreeNode::Split { .. }))
                .count();
            assert_eq!(splits, t as usize);
            assert!(tree.check(4).is_ok());
            // The first split is on the signal literal.
            assert!(matches!(nodes[0], TreeNode::Split { literal: 0, .. }));
            // Second-level improvements were computed on the right rows.
            if t >= 2 {
                let TreeNode::Split { if_true, .. } = nodes[0] else {
                    panic!()
                };
                let in_leaf: Vec<usize> = (0..300).filter(|&i| features.get(i, 0)).collect();
                let mut fresh = TopDown::new(&features, &[], 1).unwrap();
                fresh.improvements = vec![vec![0.0; 4]];
                fresh.leaf_of = (0..300)
                    .map(|i| if features.get(i, 0) { if_true } else { 99 })
                    .collect();
                fresh.improvements.resize(100, Vec::new());
                fresh.score_leaves(&[if_true], 100, weights(&rows));
                for j in 0..4 {
                    let want = brute_im(&features, &signed, &in_leaf, j);
                    assert!((fresh.improvements[if_true as usize][j] - want).abs() < 1e-12);
                }
            }
        }
    }

    /// The leaf lookup gives the same margins as walking the tree, and the
    /// Private selection grows a valid tree with t splits.
    #[test]
    fn leaf_lookup_margins_match_tree_evaluation() {
        let (features, signed) = data();
        let rows = per_row(&signed);
        let labels: Vec<i8> = signed
            .iter()
            .map(|&s| if s < 0.0 { 1 } else { -1 })
            .collect();
        let mut rng = NoiseRng::seeded(5);
        for t in 1..=4 {
            let mut learner = TopDown::new(&features, &[], t).unwrap();
            for selection in [
                TreeSelection::Best,
                TreeSelection::Private {
                    eta: 50.0,
                    leaf_scale: 0.01,
                    rng: &mut rng,
                },
            ] {
                let tree = learner.fit(&features, weights(&rows), selection).unwrap();
                assert!(tree.check(4).is_ok());
                let mut by_lookup = vec![0i32; 300];
                learner.add_margins(&tree, &labels, &mut by_lookup, 2);
                let mut by_walk = vec![0i32; 300];
                tree.add_margins(&features, &labels, &mut by_walk, 2);
                assert_eq!(by_lookup, by_walk, "t = {t}");
            }
        }
    }

    /// The float margin of TopDown (`privacy::calibration::top_down_float_margin`)
    /// against an exact reference: the root's Gini improvements computed from
    /// LazyBB's float weights (`lazybb::class_weights`) are compared with
    /// improvements of the exact cell masses under the exactly normalised
    /// weights (masses from `privacy::float_reference`, then `wG` in f64,
    /// whose own error is below `20 u`). Random and equal-weight inputs;
    /// prints the worst ratio to the margin.
    #[test]
    fn float_error_of_the_improvements_is_within_the_margin() {
        use crate::privacy::calibration::top_down_float_margin;
        use crate::privacy::float_reference::{Expansion, quotient};
        let u = f64::EPSILON / 2.0;
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for (name, n, random) in [
            ("random", 200_003usize, true),
            ("equal weights", 3_000_001, false),
        ] {
            let classes = if random { 79 } else { 1 };
            let mu: Vec<f64> = (0..classes).map(|_| next().max(1e-3)).collect();
            let class: Vec<usize> = (0..n)
                .map(|_| if random { (next() * 79.0) as usize } else { 0 })
                .collect();
            let positive: Vec<bool> = (0..n)
                .map(|i| if random { next() < 0.3 } else { i % 3 == 0 })
                .collect();
            let d = 4;
            let mut builder = BitMatrixBuilder::new(d);
            for i in 0..n {
                let active: Vec<u32> = (0..d as u32)
                    .filter(|&j| {
                        if random {
                            next() < 0.2 * f64::from(j + 1)
                        } else {
                            (i / (j as usize + 1)).is_multiple_of(2)
                        }
                    })
                    .collect();
                builder.push_row(&active);
            }
            let features = builder.finish();
            let mut count = vec![0u64; 2 * classes];
            for (&k, &y) in class.iter().zip(&positive) {
                count[2 * k + usize::from(y)] += 1;
            }
            let mut signed_of_class = vec![0.0; 2 * classes];
            crate::learn::lazybb::boost::class_weights(&count, &mu, &mut signed_of_class);
            let class_of_row: Vec<i32> = class
                .iter()
                .zip(&positive)
                .map(|(&k, &y)| (2 * k + usize::from(y)) as i32)
                .collect();
            let mut learner = TopDown::new(&features, &[], 1).unwrap();
            learner.improvements = vec![vec![0.0; d]];
            let lazybb_weights = ClassWeights {
                class: &class_of_row,
                of_class: &signed_of_class,
            };
            learner.score_leaves(&[0], 1, lazybb_weights);

            let mut total = Expansion::default();
            for &k in &class {
                total.add(mu[k]);
            }
            let mass = |filter: &dyn Fn(usize) -> bool| {
                let mut e = Expansion::default();
                for i in (0..n).filter(|&i| filter(i)) {
                    e.add(mu[class[i]]);
                }
                let (hi, lo) = quotient(&e, &total);
                hi + lo
            };
            let wg = |a: f64, b: f64| {
                if a + b > 0.0 {
                    4.0 * a * b / (a + b)
                } else {
                    0.0
                }
            };
            let parent = wg(mass(&|i| positive[i]), mass(&|i| !positive[i]));
            let mut worst = 0.0f64;
            for j in 0..d {
                let cell =
                    |x: bool, y: bool| mass(&|i| features.get(i, j) == x && positive[i] == y);
                let im = parent
                    - wg(cell(true, true), cell(true, false))
                    - wg(cell(false, true), cell(false, false));
                worst = worst.max((learner.improvements[0][j] - im).abs());
            }
            let margin = top_down_float_margin(n, 0.5, 39, 3);
            println!(
                "{name} (n = {n}): worst |im computed - reference| = {worst:.3e} = {:.1} u, \
                 {:.2e} of E_td",
                worst / u,
                worst / margin
            );
            assert!(worst <= margin, "{name}: {worst:e} > {margin:e}");
        }
    }

    /// With one-hot groups as columns the improvements equal those with
    /// every literal a column of its own, up to float reassociation, at the
    /// root and below a split.
    #[test]
    fn group_columns_give_the_improvements_of_single_literals() {
        use crate::learn::lazybb::groups::tests::one_hot_matrix;
        let groups = [0..4, 5..12, 12..15];
        let (n, d) = (2003, 16);
        let features = one_hot_matrix(n, d, &groups, 9);
        let mut state = 3u64;
        let signed: Vec<f64> = (0..n)
            .map(|i| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let w = 0.5 + (state >> 40) as f64 / (1u64 << 24) as f64;
                if features.get(i, 1) ^ (i % 7 == 0) {
                    -w
                } else {
                    w
                }
            })
            .collect();
        let total: f64 = signed.iter().map(|s| s.abs()).sum();
        let signed: Vec<f64> = signed.iter().map(|s| s / total).collect();
        let rows = per_row(&signed);
        for t in 1..=3 {
            let mut padded = TopDown::new(&features, &[], t).unwrap();
            let mut grouped = TopDown::new(&features, &groups, t).unwrap();
            let a = padded
                .fit(&features, weights(&rows), TreeSelection::Best)
                .unwrap();
            let b = grouped
                .fit(&features, weights(&rows), TreeSelection::Best)
                .unwrap();
            assert_eq!(a, b, "t = {t}");
            for (x, y) in padded.improvements.iter().zip(&grouped.improvements) {
                for (x, y) in x.iter().zip(y) {
                    assert!((x - y).abs() <= 1e-14, "{x} vs {y}");
                }
            }
        }
    }
}
