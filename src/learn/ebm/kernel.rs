//! The inner pass of DP-EBM training: one visit of every row per boosting
//! iteration, which applies the previous iteration's update to the scores,
//! computes each row's residual on the fixed-point grid and sums the grid
//! integers per leaf. It is the whole cost of training (epochs x features
//! passes over n rows), so it is written for the compiler to vectorise:
//! `f32` lanes, no `exp` in the loop (a classifier's rows carry `e^-F`,
//! which an update multiplies by one factor per leaf), and leaves found by
//! comparing a row's bin with the iteration's sorted cut points instead of
//! a table lookup.
//! The body has no data-dependent branch (compares become masks), so the
//! time of a pass depends only on n, as issue 6's timing rule asks.
//!
//! The privacy argument (`EbmParams::plan`) needs only that every row adds
//! one integer in `[-scale, scale]` to exactly one leaf; the integer clamp
//! below makes that hold for the values as computed, whatever the floats
//! (even a NaN score) did.

/// Most cut points an iteration has (`MAX_LEAVES - 1`).
pub const MAX_CUTS: usize = super::params::MAX_LEAVES as usize - 1;

/// A row's (merged) bin as the pass reads it: `i32`, so that comparing it
/// with a cut point is one AVX2 instruction (narrower codes cost a widening
/// and an unsigned-compare workaround per comparison, about a third of the
/// pass's instructions).
pub type Bin = i32;

/// A cut point that no bin reaches.
pub const NO_CUT: Bin = Bin::MAX;

/// One iteration's leaves: sorted cut points padded with `NO_CUT`; a row in
/// bin `b` is in leaf `#{j : b >= cuts[j]}`, so leaf `l` holds the bins from
/// `cuts[l - 1]` up to `cuts[l] - 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cuts(pub [Bin; MAX_CUTS]);

impl Cuts {
    /// From the cut points in any order (at most `MAX_CUTS`, each below
    /// `NO_CUT`).
    pub fn new(points: &[Bin]) -> Cuts {
        assert!(points.len() <= MAX_CUTS && points.iter().all(|&c| (0..NO_CUT).contains(&c)));
        let mut cuts = [NO_CUT; MAX_CUTS];
        cuts[..points.len()].copy_from_slice(points);
        cuts.sort_unstable();
        Cuts(cuts)
    }

    /// Number of real cut points.
    pub fn len(&self) -> usize {
        self.0.iter().take_while(|&&c| c != NO_CUT).count()
    }

    /// The leaf of bin `b`.
    pub fn leaf(&self, b: Bin) -> usize {
        self.0.iter().filter(|&&c| b >= c).count()
    }
}

/// The previous iteration's update, to apply to the scores in this pass: a
/// row in leaf `l` of `cuts` (by its bin in `codes`) gains `values[l]`.
#[derive(Clone, Copy)]
pub struct Update<'a> {
    pub codes: &'a [Bin],
    pub cuts: Cuts,
    pub values: [f32; MAX_CUTS + 1],
}

/// Passes over at least twice this many rows are split in two.
const SPLIT_ROWS: usize = 8192;

/// How a residual is computed from a row's score `s` and target `y`.
#[derive(Debug, Clone, Copy)]
pub enum Residual {
    /// `y - sigmoid(s)` with `y` in {0, 1}: in (-1, 1).
    Logistic,
    /// `(y - s) * inverse`, clamped to [-1, 1].
    Scaled { inverse: f32 },
}

/// The range of a classifier's cached `e^-F`: scores beyond +-60 are
/// certain at `f32` precision (`sigmoid(60) = 1 - 9e-27`), and keeping the
/// cache off 0 and infinity lets it come back when later updates pull the
/// score in.
const STATE_MIN: f32 = 8.75e-27;
const STATE_MAX: f32 = 1.14e26;

impl Residual {
    /// What the kernel keeps per row for a row whose score is `score`:
    /// `e^-score` for a classifier (so a pass needs a multiply and a
    /// division, not an `exp`: the update `F += u` is `e^-F *= e^-u`), the
    /// score itself for a regressor. The cache is rounded once per pass;
    /// after `k` passes its relative error is at most `k * 2^-24` (about
    /// `3e-4` for 300 epochs x 14 features, typically `sqrt(k) * 2^-24`),
    /// which moves a probability by less than a quarter of that: far below
    /// the grid of the noisy sums, and an accuracy matter only (the privacy
    /// argument holds for any cached value, see `leaf_sums`).
    pub fn state_of(self, score: f64) -> f32 {
        match self {
            Residual::Logistic => ((-score).exp() as f32).clamp(STATE_MIN, STATE_MAX),
            Residual::Scaled { .. } => score as f32,
        }
    }

    /// The per-leaf multipliers (classifier) or addends (regressor) that
    /// apply the score changes `values`.
    fn steps(self, values: &[f32; MAX_CUTS + 1]) -> [f32; MAX_CUTS + 1] {
        match self {
            Residual::Logistic => values.map(|u| (-f64::from(u)).exp() as f32),
            Residual::Scaled { .. } => *values,
        }
    }
}

/// Apply `update` to the rows' cached scores `state` (`Residual::state_of`),
/// then return the per-leaf sums (leaf `l` at index `l`, `MAX_CUTS + 1`
/// entries) of the rows' residuals on the grid `1 / scale`, each rounded and
/// clamped to an integer in `[-scale, scale]`, with leaves from `codes` and
/// `cuts`.
pub fn leaf_sums(
    state: &mut [f32],
    y: &[f32],
    residual: Residual,
    scale: u32,
    codes: &[Bin],
    cuts: Cuts,
    update: &Update,
) -> [i64; MAX_CUTS + 1] {
    let n = state.len();
    assert!(y.len() == n && codes.len() == n && update.codes.len() == n);
    assert!((1..=1 << 20).contains(&scale), "grid scale {scale}");
    // Halves of a large pass run on rayon's pool: the split depends on n
    // only, and integer sums do not depend on the order of addition.
    if n >= 2 * SPLIT_ROWS {
        let mid = n / 2;
        let (state_a, state_b) = state.split_at_mut(mid);
        let (y_a, y_b) = y.split_at(mid);
        let (codes_a, codes_b) = codes.split_at(mid);
        let (prev_a, prev_b) = update.codes.split_at(mid);
        let (update_a, update_b) = (
            Update {
                codes: prev_a,
                ..*update
            },
            Update {
                codes: prev_b,
                ..*update
            },
        );
        let (a, b) = rayon::join(
            || leaf_sums(state_a, y_a, residual, scale, codes_a, cuts, &update_a),
            || leaf_sums(state_b, y_b, residual, scale, codes_b, cuts, &update_b),
        );
        return std::array::from_fn(|l| a[l] + b[l]);
    }
    let narrow = cuts.len() <= 2 && update.cuts.len() <= 2;
    let logistic = matches!(residual, Residual::Logistic);
    let args = Args {
        state,
        y,
        residual,
        scale,
        codes,
        cuts,
        update,
    };
    match (narrow, logistic) {
        (true, true) => dispatch::<2, true>(args),
        (true, false) => dispatch::<2, false>(args),
        (false, true) => dispatch::<MAX_CUTS, true>(args),
        (false, false) => dispatch::<MAX_CUTS, false>(args),
    }
}

struct Args<'a, 'u> {
    state: &'a mut [f32],
    y: &'a [f32],
    residual: Residual,
    scale: u32,
    codes: &'a [Bin],
    cuts: Cuts,
    update: &'a Update<'u>,
}

/// Run the body compiled for AVX2 where the CPU has it (8 lanes), else the
/// portable build of the same body (SSE2 on x86-64): the same IEEE
/// operations in the same order, so both give identical sums.
fn dispatch<const C: usize, const LOGISTIC: bool>(args: Args) -> [i64; MAX_CUTS + 1] {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: calling a `#[target_feature]` function requires the CPU to
        // have those features, which was checked on the line above.
        return unsafe { body_avx2::<C, LOGISTIC>(args) };
    }
    body::<C, LOGISTIC>(args)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn body_avx2<const C: usize, const LOGISTIC: bool>(args: Args) -> [i64; MAX_CUTS + 1] {
    body::<C, LOGISTIC>(args)
}

/// Rows per block: each lane's `i32` partial sum stays below `2^31` when a
/// block of rows adds at most `scale` each.
fn block_rows(scale: u32) -> usize {
    (i32::MAX as u32 / scale) as usize
}

#[inline(always)]
fn body<const C: usize, const LOGISTIC: bool>(args: Args) -> [i64; MAX_CUTS + 1] {
    let Args {
        state,
        y,
        residual,
        scale,
        codes,
        cuts,
        update,
    } = args;
    let cuts: [Bin; C] = std::array::from_fn(|j| cuts.0[j]);
    let previous: [Bin; C] = std::array::from_fn(|j| update.cuts.0[j]);
    // The update's step for leaf 0, and for the leaf that starts at each cut.
    let steps = residual.steps(&update.values);
    let base = steps[0];
    let next: [f32; C] = std::array::from_fn(|j| steps[j + 1]);
    let inverse = match residual {
        Residual::Logistic => 1.0,
        Residual::Scaled { inverse } => inverse,
    };
    let grid = scale as f32;
    let limit = scale as i32;

    // `at_least[j]` sums the rows whose bin is at or above `cuts[j]`; leaf
    // sums are differences of these (cuts are sorted).
    let mut total = 0i64;
    let mut at_least = [0i64; C];
    let block = block_rows(scale);
    let mut start = 0;
    while start < state.len() {
        let end = (start + block).min(state.len());
        let (s_block, y_block) = (&mut state[start..end], &y[start..end]);
        let (c_block, p_block) = (&codes[start..end], &update.codes[start..end]);
        let mut block_total = 0i32;
        let mut block_at_least = [0i32; C];
        for (((s, &t), &c), &p) in s_block.iter_mut().zip(y_block).zip(c_block).zip(p_block) {
            // Cuts are sorted, so the last one passed names the leaf.
            let mut u = base;
            for j in 0..C {
                u = if p >= previous[j] { next[j] } else { u };
            }
            let r = if LOGISTIC {
                // `s` is `e^-F`: `sigmoid(F) = 1 / (1 + e^-F)`.
                let e = (*s * u).clamp(STATE_MIN, STATE_MAX);
                *s = e;
                t - 1.0 / (1.0 + e)
            } else {
                let f = *s + u;
                *s = f;
                ((t - f) * inverse).clamp(-1.0, 1.0)
            };
            let g = round_to_int(r * grid).clamp(-limit, limit);
            block_total += g;
            for j in 0..C {
                block_at_least[j] += if c >= cuts[j] { g } else { 0 };
            }
        }
        total += i64::from(block_total);
        for j in 0..C {
            at_least[j] += i64::from(block_at_least[j]);
        }
        start = end;
    }
    let mut sums = [0i64; MAX_CUTS + 1];
    sums[0] = total - at_least.first().copied().unwrap_or(0);
    for j in 0..C {
        let next = at_least.get(j + 1).copied().unwrap_or(0);
        sums[j + 1] = at_least[j] - next;
    }
    sums
}

/// `x` rounded to the nearest integer (ties to even) for `|x| < 2^22`, as
/// bit operations: adding `1.5 * 2^23` puts the integer in the low mantissa
/// bits. Outside that range (or NaN) the result is some integer, which the
/// caller's clamp bounds.
#[inline(always)]
fn round_to_int(x: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0;
    ((x + MAGIC).to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_by_bits() {
        for x in [
            0.0f32,
            0.4,
            0.5,
            0.6,
            1.5,
            2.5,
            -0.5,
            -1.5,
            -3.7,
            1_048_576.0,
        ] {
            assert_eq!(round_to_int(x), x.round_ties_even() as i32, "{x}");
        }
    }

    /// The straightforward version: a table from bin to leaf, one row at
    /// a time.
    fn reference(
        state: &mut [f32],
        y: &[f32],
        residual: Residual,
        scale: u32,
        codes: &[Bin],
        cuts: Cuts,
        update: &Update,
    ) -> [i64; MAX_CUTS + 1] {
        let steps = residual.steps(&update.values);
        let mut sums = [0i64; MAX_CUTS + 1];
        for i in 0..state.len() {
            let step = steps[update.cuts.leaf(update.codes[i])];
            let r = match residual {
                Residual::Logistic => {
                    state[i] = (state[i] * step).clamp(STATE_MIN, STATE_MAX);
                    y[i] - 1.0 / (1.0 + state[i])
                }
                Residual::Scaled { inverse } => {
                    state[i] += step;
                    ((y[i] - state[i]) * inverse).clamp(-1.0, 1.0)
                }
            };
            let g = (r * scale as f32).round_ties_even() as i64;
            sums[cuts.leaf(codes[i])] += g.clamp(-i64::from(scale), i64::from(scale));
        }
        sums
    }

    /// SplitMix64: test inputs only.
    struct Inputs(u64);

    impl Inputs {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, k: u64) -> u64 {
            self.next() % k
        }
        fn unit(&mut self) -> f32 {
            (self.next() >> 40) as f32 / (1u64 << 24) as f32
        }
    }

    #[test]
    fn leaf_sums_match_the_row_by_row_reference() {
        let mut rng = Inputs(7);
        for case in 0..40 {
            let n = 1 + rng.below(3000) as usize;
            let bins = 1 + rng.below(40) as Bin;
            let n_cuts = rng.below((bins as u64).min(MAX_CUTS as u64 + 1)) as usize;
            let points: Vec<Bin> = (0..n_cuts).map(|_| 1 + rng.below(40) as Bin).collect();
            let cuts = Cuts::new(&points);
            let prev_points: Vec<Bin> = (0..rng.below(3))
                .map(|_| 1 + rng.below(40) as Bin)
                .collect();
            let mut values = [0f32; MAX_CUTS + 1];
            values.iter_mut().for_each(|v| *v = 0.2 * rng.unit() - 0.1);
            let codes: Vec<Bin> = (0..n).map(|_| rng.below(bins as u64) as Bin).collect();
            let prev_codes: Vec<Bin> = (0..n).map(|_| rng.below(40) as Bin).collect();
            let update = Update {
                codes: &prev_codes,
                cuts: Cuts::new(&prev_points),
                values,
            };
            let logistic = case % 2 == 0;
            let y: Vec<f32> = (0..n)
                .map(|_| {
                    if logistic {
                        f32::from(u8::from(rng.unit() < 0.3))
                    } else {
                        30.0 * rng.unit()
                    }
                })
                .collect();
            let residual = if logistic {
                Residual::Logistic
            } else {
                Residual::Scaled {
                    inverse: 1.0 / 15.0,
                }
            };
            let start: Vec<f32> = (0..n)
                .map(|_| residual.state_of(f64::from(16.0 * rng.unit() - 8.0)))
                .collect();
            let scale = 1 << rng.below(21);
            let (mut a, mut b) = (start.clone(), start);
            let fast = leaf_sums(&mut a, &y, residual, scale, &codes, cuts, &update);
            let slow = reference(&mut b, &y, residual, scale, &codes, cuts, &update);
            assert_eq!(fast, slow, "case {case}");
            assert!(a == b, "case {case}: the scores differ");
        }
    }

    /// A pass long enough to be split between threads (twice, here) gives
    /// the reference's sums and scores: integer sums do not depend on the
    /// order of addition.
    #[test]
    fn a_split_pass_matches_the_reference() {
        let mut rng = Inputs(5);
        let n = 4 * SPLIT_ROWS + 17;
        let codes: Vec<Bin> = (0..n).map(|_| rng.below(32) as Bin).collect();
        let prev_codes: Vec<Bin> = (0..n).map(|_| rng.below(32) as Bin).collect();
        let y: Vec<f32> = (0..n)
            .map(|_| f32::from(u8::from(rng.unit() < 0.3)))
            .collect();
        let start: Vec<f32> = (0..n)
            .map(|_| Residual::Logistic.state_of(f64::from(4.0 * rng.unit() - 2.0)))
            .collect();
        let mut values = [0f32; MAX_CUTS + 1];
        values.iter_mut().for_each(|v| *v = 0.2 * rng.unit() - 0.1);
        let update = Update {
            codes: &prev_codes,
            cuts: Cuts::new(&[9, 20]),
            values,
        };
        let cuts = Cuts::new(&[3, 17]);
        let (mut a, mut b) = (start.clone(), start);
        let fast = leaf_sums(
            &mut a,
            &y,
            Residual::Logistic,
            1 << 12,
            &codes,
            cuts,
            &update,
        );
        let slow = reference(
            &mut b,
            &y,
            Residual::Logistic,
            1 << 12,
            &codes,
            cuts,
            &update,
        );
        assert_eq!(fast, slow);
        assert!(a == b, "the scores differ");
    }

    /// The cached `e^-F` tracks the score through many passes: after 5,000
    /// passes of random updates, the probability it implies is within
    /// `1e-4` of the one from the `f64` sum of the updates, for every row.
    #[test]
    fn the_classifier_cache_tracks_the_score() {
        let mut rng = Inputs(11);
        let n = 256;
        let y = vec![1.0f32; n];
        let codes: Vec<Bin> = (0..n).map(|i| (i % 8) as Bin).collect();
        let mut state: Vec<f32> = vec![Residual::Logistic.state_of(0.0); n];
        let mut exact = vec![0.0f64; n];
        for _ in 0..5000 {
            let cuts = Cuts::new(&[1 + rng.below(7) as Bin, 1 + rng.below(7) as Bin]);
            let mut values = [0f32; MAX_CUTS + 1];
            values
                .iter_mut()
                .for_each(|v| *v = 0.02 * rng.unit() - 0.01);
            let update = Update {
                codes: &codes,
                cuts,
                values,
            };
            leaf_sums(
                &mut state,
                &y,
                Residual::Logistic,
                16,
                &codes,
                cuts,
                &update,
            );
            for (i, e) in exact.iter_mut().enumerate() {
                *e += f64::from(values[cuts.leaf(codes[i])]);
            }
        }
        for (s, f) in state.iter().zip(&exact) {
            let cached = 1.0 / (1.0 + f64::from(*s));
            let true_p = 1.0 / (1.0 + (-f).exp());
            assert!(
                (cached - true_p).abs() < 1e-4,
                "{cached} vs {true_p} (score {f})"
            );
        }
    }

    /// Whatever the scores, every row adds at most `scale` in magnitude: a
    /// NaN or infinite score cannot break the sensitivity bound.
    #[test]
    fn non_finite_scores_stay_within_the_clamp() {
        let n = 64;
        let mut state = vec![f32::NAN; n];
        state[1] = f32::INFINITY;
        state[2] = f32::NEG_INFINITY;
        state[3] = 0.0;
        let y = vec![1.0; n];
        let codes: Vec<Bin> = vec![0; n];
        let update = Update {
            codes: &codes,
            cuts: Cuts::new(&[]),
            values: [0.0; MAX_CUTS + 1],
        };
        for residual in [Residual::Logistic, Residual::Scaled { inverse: 0.5 }] {
            let sums = leaf_sums(
                &mut state.clone(),
                &y,
                residual,
                1 << 10,
                &codes,
                Cuts::new(&[]),
                &update,
            );
            assert!(sums[0].abs() <= (n as i64) << 10, "{sums:?}");
        }
    }
}
