//! One DPBoost tree (\[DPB\] Alg. 1) on public split candidates.
//!
//! Split candidates come from the schema alone (PAPERS.md §4 item 18: the
//! reference code takes LightGBM's histogram bins from the data, a leak):
//! for each feature of the schema (`ebm::bins::layout`), every prefix of a
//! numeric column's ordered intervals ("x in the first k intervals") and
//! every unordered literal (a category, `is other`, `is missing`, a boolean or
//! a threshold literal). A candidate is stored as the set of literals that
//! send a row left.
//!
//! The tree is grown level-wise to its full depth (no data-dependent stop,
//! PAPERS.md §4 item 22): every node, empty or not, selects a split by
//! report-noisy-max over the gains (the exponential mechanism's Laplace
//! counterpart, same guarantee), and every leaf gets Laplace noise.
//!
//! Values as computed: gradients are integers on the 2^-20 grid, so node sums
//! are exact; a gain is two squares, two divisions and a sum of exact values
//! (relative error below 2^-50 on a value at most n); a leaf value is one
//! division (relative error 2^-52 on a value at most 1), then clipped and
//! rounded to the 2^-20 grid where the discrete Laplace noise is added
//! exactly. `params` charges for all of it.

use serde::{Deserialize, Serialize};

use super::params::{DpBoostPlan, GRAD_BITS, L2, LEAF_BITS, LeafRelease, clip_bound};
use crate::data::{BitMatrix, Encoder};
use crate::learn::LearnError;
use crate::learn::ebm::bins::{self, FeatureLayout};
use crate::privacy::laplace::report_noisy_max;
use crate::privacy::{NoiseRng, exact};

/// One public split candidate of one feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Index into the feature layouts.
    pub feature: usize,
    /// Base-bin codes that go left.
    pub left_codes: Vec<u16>,
    /// The literals that send a row left.
    pub literals: Vec<u32>,
}

/// The public candidates of a schema (no row read).
pub fn candidates(encoder: &Encoder) -> (Vec<FeatureLayout>, Vec<Candidate>) {
    let layouts = bins::layout(encoder);
    let mut out = Vec::new();
    for (f, layout) in layouts.iter().enumerate() {
        let literal_of = |j: usize| layout.base[j];
        // Prefixes of the ordered intervals: "code <= k".
        for k in 0..layout.ordered.saturating_sub(1) {
            out.push(Candidate {
                feature: f,
                left_codes: (0..=k as u16).collect(),
                literals: (0..=k).filter_map(literal_of).collect(),
            });
        }
        for j in layout.ordered..layout.base.len() {
            if let Some(l) = literal_of(j) {
                out.push(Candidate {
                    feature: f,
                    left_codes: vec![j as u16],
                    literals: vec![l],
                });
            }
        }
    }
    (layouts, out)
}

/// A split as stored in a model: the literals that send a row left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Split {
    /// Left iff the row has any of these literals.
    pub literals: Vec<u32>,
}

/// A full binary tree: internal nodes in heap order (children of i are
/// 2i + 1 and 2i + 2), then the leaves left to right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tree {
    /// 2^depth - 1 splits.
    pub splits: Vec<Split>,
    /// 2^depth leaf values, shrinkage applied (added to the score).
    pub leaves: Vec<f64>,
}

/// Rows per block of [`Tree::leaves_of_rows`] (a multiple of 64): bounds
/// the per-split bitsets held at once, a function of nothing private.
const LEAF_BLOCK_WORDS: usize = 1024;

impl Tree {
    /// Every row's leaf index, with work that does not depend on the rows
    /// (issue 26, items 5 and 6): per block of rows, each split's "goes left"
    /// bitset is the word-wise OR of all its literals' columns (every
    /// literal of every split is read for every row, whichever path the
    /// row takes; splits differ in their literal counts, so reading only
    /// the path's splits made the work depend on the path), then each row
    /// takes `depth` steps down the complete tree, one bit lookup and no
    /// branch on the bit each.
    pub fn leaves_of_rows(&self, features: &BitMatrix) -> Vec<usize> {
        let n = features.n_rows();
        let mut out = Vec::with_capacity(n);
        let words = features.words_per_column();
        let mut left = vec![vec![0u64; LEAF_BLOCK_WORDS]; self.splits.len()];
        for start in (0..words).step_by(LEAF_BLOCK_WORDS) {
            let end = (start + LEAF_BLOCK_WORDS).min(words);
            for (bits, split) in left.iter_mut().zip(&self.splits) {
                bits.fill(0);
                for &l in &split.literals {
                    let column = &features.column(l as usize)[start..end];
                    for (b, c) in bits.iter_mut().zip(column) {
                        *b |= c;
                    }
                }
            }
            let rows = (start * 64)..(end * 64).min(n);
            for r in rows {
                let (w, b) = (r / 64 - start, r % 64);
                let mut i = 0;
                while i < self.splits.len() {
                    let goes_left = ((left[i][w] >> b) & 1) as usize;
                    // Left child 2i + 1 when the bit is set, right 2i + 2.
                    i = 2 * i + 2 - goes_left;
                }
                out.push(i - self.splits.len());
            }
        }
        out
    }

    /// The leaf index of a row given a test "has any of these literals".
    pub fn leaf_of(&self, goes_left: impl Fn(&Split) -> bool) -> usize {
        let mut i = 0;
        while i < self.splits.len() {
            i = if goes_left(&self.splits[i]) {
                2 * i + 1
            } else {
                2 * i + 2
            };
        }
        i - self.splits.len()
    }
}

/// Gradient rounded to the 2^-20 grid, clipped to [-1, 1] (exact integer).
pub fn grid_gradient(g: f64) -> i64 {
    (g.clamp(-1.0, 1.0) * f64::from(1u32 << GRAD_BITS)).round() as i64
}

/// The split gain \[DPB\] Eq. 3 from exact integer sums.
pub fn gain(sum_left: i64, n_left: usize, sum_right: i64, n_right: usize) -> f64 {
    let unit = 1.0 / f64::from(1u32 << GRAD_BITS);
    let l = sum_left as f64 * unit;
    let r = sum_right as f64 * unit;
    l * l / (n_left as f64 + L2) + r * r / (n_right as f64 + L2)
}

/// Exact discrete Laplace noise of scale at least `scale` grid units (the
/// scale is rounded up to a multiple of 2^-20, so the guarantee holds).
pub fn laplace_units(rng: &mut NoiseRng, scale: f64) -> Result<i128, LearnError> {
    let num = (scale * f64::from(1u32 << 20)).ceil();
    if !laplace_scale_usable(scale) {
        return Err(LearnError::InvalidParameter(format!(
            "DPBoost (epsilon): Laplace scale {scale:e} is out of range"
        )));
    }
    Ok(exact::discrete_laplace(rng, num as u128, 1 << 20)?)
}

/// Whether [`laplace_units`] can draw with `scale` (its numerator on the
/// 2^-20 grid at least 1 and below 2^63): the plan checks every scale of
/// the run with it before any charge (`DpBoostPlan::check_scales`).
pub fn laplace_scale_usable(scale: f64) -> bool {
    let num = (scale * f64::from(1u32 << 20)).ceil();
    num.is_finite() && num >= 1.0 && num < 2f64.powi(63)
}

/// The public candidates with every row's base code per feature.
pub struct Features {
    /// The schema's features.
    pub layouts: Vec<FeatureLayout>,
    /// The public split candidates.
    pub candidates: Vec<Candidate>,
    /// Base code of every row, per feature.
    pub codes: Vec<Vec<u16>>,
}

/// Train one tree on `rows` with grid gradients `grad` and hessians
/// `hess`, at 0-based ensemble position `position`. `weight[r]` is 1 for a
/// row in the tree and 0 for one the gradient filter left out (its gradient
/// and hessian are 0 too): every row of `rows` is visited either way, and
/// only the counts read the weight, so the work depends on `rows.len()`
/// (public), not on the filter.
#[allow(clippy::too_many_arguments)]
pub fn grow(
    plan: &DpBoostPlan,
    features: &Features,
    grad: &[i64],
    hess: &[i64],
    weight: &[u8],
    rows: &[usize],
    position: u32,
    rng: &mut NoiseRng,
) -> Result<Tree, LearnError> {
    let Features {
        layouts,
        candidates,
        codes,
    } = features;
    let depth = plan.params.max_depth;
    let mut nodes: Vec<Vec<usize>> = vec![rows.to_vec()];
    let mut splits = Vec::with_capacity((1usize << depth) - 1);
    let mut gains = vec![0.0; candidates.len()];
    for _level in 0..depth {
        let mut next = Vec::with_capacity(nodes.len() * 2);
        for node in &nodes {
            // Histograms of sums and counts per feature and base code: work
            // proportional to the node's rows times the features.
            let hist: Vec<Vec<(i64, usize)>> = layouts
                .iter()
                .enumerate()
                .map(|(f, layout)| {
                    let mut h = vec![(0i64, 0usize); layout.base.len()];
                    for &r in node {
                        let c = &mut h[usize::from(codes[f][r])];
                        c.0 += grad[r];
                        c.1 += usize::from(weight[r]);
                    }
                    h
                })
                .collect();
            let total: (i64, usize) = node.iter().fold((0, 0), |a, &r| {
                (a.0 + grad[r], a.1 + usize::from(weight[r]))
            });
            for (g, c) in gains.iter_mut().zip(candidates) {
                let (mut s, mut n) = (0i64, 0usize);
                for &code in &c.left_codes {
                    let h = hist[c.feature][usize::from(code)];
                    s += h.0;
                    n += h.1;
                }
                *g = gain(s, n, total.0 - s, total.1 - n);
            }
            let chosen = &candidates[report_noisy_max(rng, &gains, plan.split_scale)?];
            let f = chosen.feature;
            // A table by base code, so each row's side is one lookup (a
            // search of `left_codes` would take longer for some codes).
            let mut goes_left = vec![false; layouts[f].base.len()];
            for &code in &chosen.left_codes {
                goes_left[usize::from(code)] = true;
            }
            let (left, right): (Vec<usize>, Vec<usize>) = node
                .iter()
                .partition(|&&r| goes_left[usize::from(codes[f][r])]);
            splits.push(Split {
                literals: chosen.literals.clone(),
            });
            next.push(left);
            next.push(right);
        }
        nodes = next;
    }
    let eta = plan.params.learning_rate;
    let clip = clip_bound(eta, position);
    let mut leaves = Vec::with_capacity(nodes.len());
    match plan.params.leaves {
        // Leaves: V = -S/(n + lambda) (Eq. 4), GLC clip to [-c, c] (Thm 6),
        // onto the grid, exact discrete Laplace, clamp to [-c, c] again
        // (post-processing), shrinkage eta.
        LeafRelease::ClippedMean => {
            let (_, scale) = plan.leaf_noise(position);
            for node in &nodes {
                let s: i64 = node.iter().map(|&r| grad[r]).sum();
                let count: usize = node.iter().map(|&r| usize::from(weight[r])).sum();
                let v = -(s as f64 / f64::from(1u32 << GRAD_BITS)) / (count as f64 + L2);
                leaves.push(eta * release_leaf(rng, v, clip, scale)?);
            }
        }
        // Newton leaves (Maddock et al. 2022): noisy integer sums of the
        // gradients and hessians (`DpBoostPlan::newton_noise` has the
        // sensitivity), then the step -S~/(H~ + lambda) as post-processing.
        LeafRelease::Newton => {
            let (g_scale, h_scale) = plan.newton_noise();
            for node in &nodes {
                let s: i64 = node.iter().map(|&r| grad[r]).sum();
                let h: i64 = node.iter().map(|&r| hess[r]).sum();
                let (ns, nh) = release_sums(rng, s, h, g_scale, h_scale)?;
                leaves.push(eta * newton_value(ns, nh, h_scale, NEWTON_BOUND));
            }
        }
    }
    Ok(Tree { splits, leaves })
}

/// One leaf's released value (before shrinkage): `v` clipped to [-c, c]
/// (GLC), rounded to the 2^-20 grid, plus exact discrete Laplace noise of
/// `scale` grid units, clamped to [-c, c] again (post-processing).
pub fn release_leaf(rng: &mut NoiseRng, v: f64, clip: f64, scale: f64) -> Result<f64, LearnError> {
    let unit = f64::from(1u32 << LEAF_BITS);
    let bound = (clip * unit).floor() as i128;
    let q = (v.clamp(-clip, clip) * unit).round() as i128;
    let noisy = (q + laplace_units(rng, scale)?).clamp(-bound, bound);
    Ok(noisy as f64 / unit)
}

/// A public bound on a Newton leaf step before shrinkage: two logits (a
/// classifier), the whole scaled label range (a regressor).
pub const NEWTON_BOUND: f64 = 2.0;

/// One leaf's noisy gradient and hessian sums (2^-20 grid units): exact
/// discrete Laplace noise of `g_scale` and `h_scale` units on the exact
/// integer sums.
pub fn release_sums(
    rng: &mut NoiseRng,
    grad_sum: i64,
    hess_sum: i64,
    g_scale: f64,
    h_scale: f64,
) -> Result<(i128, i128), LearnError> {
    let g = i128::from(grad_sum) + laplace_units(rng, g_scale)?;
    let h = i128::from(hess_sum) + laplace_units(rng, h_scale)?;
    Ok((g, h))
}

/// The Newton step of a leaf from its noisy sums (post-processing only):
/// -S~/(max(H~, 2 b_H) + lambda), clamped to [-c, c] (`NEWTON_BOUND`: the
/// clamp is not part of the privacy argument, GLC's decaying bound is not
/// needed because the noise is calibrated to the sums). The floor 2 b_H (twice the hessian noise's public scale) keeps a
/// leaf whose hessian sum is lost in the noise from taking a huge step.
pub fn newton_value(noisy_grad: i128, noisy_hess: i128, h_scale: f64, clip: f64) -> f64 {
    let unit = f64::from(1u32 << GRAD_BITS);
    let h = (noisy_hess as f64).max(2.0 * h_scale) / unit;
    (-(noisy_grad as f64 / unit) / (h + L2)).clamp(-clip, clip)
}
