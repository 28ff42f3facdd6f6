//! The inner pass of multiclass DP-EBM training: one visit of every row per
//! boosting iteration, which applies the previous iteration's update to the
//! row's k scores, computes its softmax residuals `e_y - p` on the
//! fixed-point grid and adds them to its leaf's k class sums.
//!
//! Every row does the same work (k exponentials by the branch-free
//! `fast_exp`, `MAX_CUTS` comparisons per leaf lookup, k additions), and the
//! split into chunks depends on n only, so the time of a pass depends only
//! on n and k (issue 6's timing rule). The privacy argument
//! (`params::leaf_l1_sensitivity`) needs only that every row adds to exactly
//! one leaf an integer vector `q` with `||q||_1 <= 2S` and `||q||_2^2 <=
//! 2 S^2`; [`class_terms`] makes that hold for the values as computed,
//! whatever the floats did (even a NaN score).

use rayon::prelude::*;

use super::kernel::{Bin, Cuts, MAX_CUTS};
use super::model::fast_exp;

/// Leaves an iteration may have: the sums are laid out `[leaf][class]`
/// with this many leaves.
pub const LEAVES: usize = MAX_CUTS + 1;

/// Rows per chunk of a pass (chunks run on rayon's pool; integer sums do not
/// depend on the order of addition).
const CHUNK_ROWS: usize = 4096;

/// The previous iteration's update, to apply to the scores in this pass: a
/// row in leaf `l` of `cuts` (by its bin in `codes`) gains `values[l k + c]`
/// on class `c`'s score.
#[derive(Clone, Copy)]
pub struct ClassUpdate<'a> {
    pub codes: &'a [Bin],
    pub cuts: Cuts,
    pub values: &'a [f64],
}

/// One row's softmax residual `e_y - p` on the grid `1 / scale`, in class
/// order: each class `c != y` gets `q_c = -round(S p_c)`, the running total
/// of `|q_c|` capped at `S` (a NaN or negative probability counts 0), and
/// class `y` gets `q_y = -sum_{c != y} q_c` (the residual `1 - p_y` is
/// `sum_{c != y} p_c`). So `sum_{c != y} |q_c| = q_y <= S`, hence `||q||_1
/// <= 2S` and `||q||_2^2 <= q_y^2 + (sum_{c != y} |q_c|)^2 <= 2 S^2` for any
/// k and any floats: the per-row bounds of the sensitivity argument
/// (`params::leaf_l1_sensitivity`, `params::leaf_l2_sensitivity_squared`).
/// `y` must be below `out.len()`.
pub fn class_terms(p: &[f64], y: usize, scale: u32, out: &mut [i64]) {
    let s = i64::from(scale);
    let grid = f64::from(scale);
    let mut used = 0i64;
    for (c, (&pc, q)) in p.iter().zip(out.iter_mut()).enumerate() {
        // `as` saturates and maps NaN to 0; clamped to [0, S - used].
        let take = ((pc * grid).round() as i64).clamp(0, s - used);
        let take = if c == y { 0 } else { take };
        used += take;
        *q = -take;
    }
    out[y] = used;
}

/// The softmax of `scores` into `p` (the largest score subtracted first;
/// `fast_exp` clamps its argument to [-40, 40], so a score 40 below the
/// largest counts as `e^-40`).
#[inline]
fn softmax_into(scores: &[f64], p: &mut [f64]) {
    let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut total = 0.0;
    for (e, &s) in p.iter_mut().zip(scores) {
        *e = fast_exp(s - top);
        total += *e;
    }
    p.iter_mut().for_each(|e| *e /= total);
}

/// Apply `update` to the rows' k scores (`scores[i k + c]`), then return the
/// per-leaf, per-class sums (`[leaf][class]`, [`LEAVES`] x k entries) of
/// the rows' grid residuals ([`class_terms`]), with leaves from `codes` and
/// `cuts`. `y[i]` is row `i`'s class (an index below k; a larger one is
/// read as k - 1, which upload never stores).
pub fn class_leaf_sums(
    scores: &mut [f64],
    y: &[u16],
    k: usize,
    scale: u32,
    codes: &[Bin],
    cuts: Cuts,
    update: &ClassUpdate,
) -> Vec<i64> {
    let n = y.len();
    assert!(k >= 2 && scores.len() == n * k);
    assert!(codes.len() == n && update.codes.len() == n && update.values.len() == LEAVES * k);
    assert!((1..=1 << 20).contains(&scale), "grid scale {scale}");
    scores
        .par_chunks_mut(CHUNK_ROWS * k)
        .zip(y.par_chunks(CHUNK_ROWS))
        .zip(codes.par_chunks(CHUNK_ROWS))
        .zip(update.codes.par_chunks(CHUNK_ROWS))
        .map(|(((s, y), c), prev)| pass(s, y, k, scale, c, cuts, prev, update))
        .reduce(
            || vec![0i64; LEAVES * k],
            |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| *a += b);
                a
            },
        )
}

/// [`class_leaf_sums`] over one chunk of rows.
#[allow(clippy::too_many_arguments)]
fn pass(
    scores: &mut [f64],
    y: &[u16],
    k: usize,
    scale: u32,
    codes: &[Bin],
    cuts: Cuts,
    previous: &[Bin],
    update: &ClassUpdate,
) -> Vec<i64> {
    let mut sums = vec![0i64; LEAVES * k];
    let mut p = vec![0.0f64; k];
    let mut q = vec![0i64; k];
    for (((row, &yi), &code), &prev) in scores.chunks_exact_mut(k).zip(y).zip(codes).zip(previous) {
        let from = update.cuts.leaf(prev) * k;
        for (s, u) in row.iter_mut().zip(&update.values[from..from + k]) {
            *s += u;
        }
        softmax_into(row, &mut p);
        class_terms(&p, usize::from(yi).min(k - 1), scale, &mut q);
        let to = cuts.leaf(code) * k;
        for (sum, &t) in sums[to..to + k].iter_mut().zip(&q) {
            *sum += t;
        }
    }
    sums
}
