//! Exact samplers on integers and rationals, from the CSPRNG's bytes.
//!
//! Nothing here uses floating-point arithmetic: every probability is a
//! rational number and every comparison is an integer comparison, so the
//! output distributions are *exactly* the ones stated (given uniform random
//! bits), and the privacy proofs of the mechanisms built on them
//! ([`super::laplace`]) hold for the code as written,
//! not only for an idealised real-valued sampler (Mironov 2012 shows how the
//! textbook floating-point Laplace sampler leaks).
//!
//! The algorithms are those of Canonne, Kamath and Steinke, "The Discrete
//! Gaussian for Differential Privacy", NeurIPS 2020 (CKS20), §5:
//!
//! - [`bernoulli_ratio`]: `Bernoulli(num / den)` by comparing a uniform
//!   integer below `den` with `num`;
//! - [`bernoulli_exp`]: `Bernoulli(exp(-gamma))` for rational `gamma >= 0`
//!   (CKS20 Algorithm 1);
//! - [`discrete_laplace`]: `P(x) ∝ exp(-|x| / scale)` on the integers for a
//!   rational `scale` (CKS20 Algorithm 2);
//! - [`discrete_gaussian`]: `P(x) ∝ exp(-x^2 / (2 sigma^2))` on the integers
//!   for a rational `sigma^2` (CKS20 Algorithm 3).
//!
//! # Overflow
//!
//! All arithmetic is on `u128`/`i128` with checked operations; an input that
//! would overflow returns [`PrivacyError::InvalidParameter`] instead of
//! wrapping. The documented safe ranges: [`bernoulli_exp`] needs
//! `den * k` to fit in `u128`, where `k` is a loop counter that exceeds 30
//! with probability below `1/30!` (so `den <= 2^120` is always fine);
//! [`discrete_laplace`] needs `num`, `den < 2^64`; [`discrete_gaussian`] needs
//! `sigma2_num`, `sigma2_den < 2^30` (its rejection step squares a product of
//! three such numbers).
//!
//! # Randomness
//!
//! The only source of randomness is `NoiseRng::next_u64` (ChaCha20 keyed
//! by the operating system). Uniform integers below `d` use rejection
//! sampling on 128-bit words, which is exactly uniform (unlike reducing a
//! random word modulo `d`, or rand's `random_range`, which is biased unless
//! its `unbiased` feature is on; STACK.md §4), and Lemire's multiply-and-reject
//! on 64-bit words when `d <= 2^64`, which is exactly uniform too.
//!
//! # Timing
//!
//! The samplers run in randomised time whose distribution depends only on
//! their (public) parameters, never on the data, except through the
//! arguments a mechanism passes (see the mechanisms' `# Timing` notes).

use super::{NoiseRng, PrivacyError};

fn overflow(what: &str) -> PrivacyError {
    PrivacyError::InvalidParameter(format!(
        "exact sampler: {what} overflows 128-bit arithmetic"
    ))
}

/// A uniform integer in `0..bound` (`bound >= 1`), exactly uniform.
///
/// # Proof
///
/// A bound of at most `2^64` takes `uniform_below_u64` (one 64-bit word
/// per attempt). Otherwise let `r = 2^128 mod bound`. A 128-bit word `x` is
/// uniform on `0..2^128`; conditioned on `x < 2^128 - r` (a multiple of
/// `bound`), it is uniform on a range that `x mod bound` covers each residue
/// of exactly `(2^128 - r) / bound` times, so the result is uniform. Each
/// attempt is accepted with probability `> 1/2`.
pub fn uniform_below(rng: &mut NoiseRng, bound: u128) -> Result<u128, PrivacyError> {
    if bound == 0 {
        return Err(PrivacyError::InvalidParameter(
            "uniform_below needs a bound >= 1".into(),
        ));
    }
    if bound <= 1 << 64 {
        return Ok(uniform_below_u64(rng, bound));
    }
    if bound.is_power_of_two() {
        return Ok(random_u128(rng) & (bound - 1));
    }
    // r = 2^128 mod bound, computed without 2^128: (u128::MAX mod bound + 1) mod bound.
    let r = (u128::MAX % bound + 1) % bound;
    loop {
        let x = random_u128(rng);
        // Accept x <= u128::MAX - r, i.e. x < 2^128 - r.
        if x <= u128::MAX - r {
            return Ok(x % bound);
        }
    }
}

/// [`uniform_below`] for `1 <= bound <= 2^64`: the draws of the exact
/// samplers (report-noisy-max's `2^30`-step grid, CKS20 Algorithm 1's
/// `Bernoulli(gamma / k)`), without 128-bit words or divisions on the
/// common path.
///
/// # Proof
///
/// A power of two `2^j`: the low `j` bits of a uniform word are uniform.
/// Otherwise Lemire's multiply-and-reject ("Fast random integer generation
/// in an interval", ACM TOMACS 2019, Algorithm 5): a uniform word `x` gives
/// the 128-bit product `m = x * bound`, whose high word `m >> 64` is the
/// candidate and low word `l = m mod 2^64` decides acceptance. The `2^64`
/// words map onto `0..bound` by the high word; each value `v` is hit by
/// exactly `floor(2^64 / bound)` or that plus one words, and rejecting the
/// words whose low word is below `t = 2^64 mod bound` removes exactly one
/// word from every value hit once more (Lemire's Lemma 4.1), so each value
/// keeps `floor(2^64 / bound)` words: uniform. The test `l < bound` first
/// only skips computing `t` (every `l < t` has `l < bound`, as `t < bound`).
/// Each attempt is accepted with probability `> 1/2`.
fn uniform_below_u64(rng: &mut NoiseRng, bound: u128) -> u128 {
    debug_assert!((1..=1 << 64).contains(&bound));
    if bound.is_power_of_two() {
        let mask = (bound - 1) as u64; // bound <= 2^64: the mask fits
        return u128::from(rng.next_u64() & mask);
    }
    let b = bound as u64; // not a power of two, so below 2^64
    let mut m = u128::from(rng.next_u64()) * u128::from(b);
    if (m as u64) < b {
        let t = b.wrapping_neg() % b; // 2^64 mod b
        while (m as u64) < t {
            m = u128::from(rng.next_u64()) * u128::from(b);
        }
    }
    m >> 64
}

fn random_u128(rng: &mut NoiseRng) -> u128 {
    (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64())
}

/// `Bernoulli(num / den)`, exactly (`0 <= num <= den`, `den >= 1`).
///
/// # Proof
///
/// `U` uniform on `0..den` ([`uniform_below`]) satisfies `P(U < num) = num / den`.
pub fn bernoulli_ratio(rng: &mut NoiseRng, num: u128, den: u128) -> Result<bool, PrivacyError> {
    if den == 0 || num > den {
        return Err(PrivacyError::InvalidParameter(format!(
            "Bernoulli probability {num}/{den} is not in [0, 1]"
        )));
    }
    if num == den {
        return Ok(true);
    }
    Ok(uniform_below(rng, den)? < num)
}

/// `Bernoulli(exp(-gamma))` for `gamma = num / den >= 0`, exactly
/// (CKS20 Algorithm 1).
///
/// # Proof
///
/// For `gamma <= 1` (CKS20 Prop. 5.1 / Algorithm 1): draw
/// `A_k ~ Bernoulli(gamma / k)` for `k = 1, 2, ...` until the first `A_k = 0`
/// and let `K` be that `k`. Then `P(K > k) = gamma^k / k!`, so
/// `P(K odd) = sum_{k >= 0} (P(K > 2k) - P(K > 2k + 1))
///          = sum_k gamma^{2k}/(2k)! - gamma^{2k+1}/(2k+1)! = exp(-gamma)`.
/// For `gamma > 1`, `exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma)))`:
/// `floor(gamma)` independent `Bernoulli(exp(-1))` draws and one
/// `Bernoulli(exp(-frac(gamma)))` must all be 1, and the loop stops at the
/// first 0 (an expected `1 / (1 - e^-1) < 1.6` draws, whatever `gamma`).
pub fn bernoulli_exp(rng: &mut NoiseRng, num: u128, den: u128) -> Result<bool, PrivacyError> {
    if den == 0 {
        return Err(PrivacyError::InvalidParameter(
            "Bernoulli(exp(-gamma)) needs a positive denominator".into(),
        ));
    }
    if num <= den {
        return bernoulli_exp_at_most_one(rng, num, den);
    }
    let whole = num / den;
    let mut done: u128 = 0;
    while done < whole {
        if !bernoulli_exp_at_most_one(rng, 1, 1)? {
            return Ok(false);
        }
        done += 1;
    }
    bernoulli_exp_at_most_one(rng, num % den, den)
}

/// CKS20 Algorithm 1 for `gamma = num / den` in `[0, 1]`.
fn bernoulli_exp_at_most_one(
    rng: &mut NoiseRng,
    num: u128,
    den: u128,
) -> Result<bool, PrivacyError> {
    debug_assert!(num <= den && den > 0);
    let mut k: u128 = 1;
    loop {
        let kden = den
            .checked_mul(k)
            .ok_or_else(|| overflow("Bernoulli(exp(-gamma)) denominator"))?;
        if !bernoulli_ratio(rng, num, kden)? {
            return Ok(k % 2 == 1);
        }
        k += 1;
    }
}

/// Discrete Laplace with scale `num / den > 0`:
/// `P(x) = (1 - e^{-1/scale}) / (1 + e^{-1/scale}) * exp(-|x| / scale)` for
/// every integer `x` (CKS20 Algorithm 2, with `t = num`, `s = den`).
///
/// # Proof
///
/// CKS20 Prop. 5.2 / Algorithm 2: with `t = num`, `s = den`,
/// `U` uniform on `0..t` accepted with probability `exp(-U/t)` and
/// `V ~ Geometric(1 - e^{-1})` (a run of `Bernoulli(exp(-1))` successes),
/// `X = U + t V` has `P(X = x) ∝ exp(-x/t)` on the naturals; `Y = floor(X/s)`
/// has `P(Y = y) ∝ exp(-y s/t)`; a fair sign, rejecting "negative zero",
/// makes `P(Y = y) ∝ exp(-|y| s / t) = exp(-|y| / scale)`.
///
/// # Privacy
///
/// For integers `a`, `b` with `|a - b| <= k`, the pmfs of `a + X` and `b + X`
/// differ pointwise by a factor at most `exp(k / scale)`: adding this noise to
/// an integer query of sensitivity `k` is `k / scale`-DP (CKS20 §2; the
/// geometric mechanism of Ghosh, Roughgarden and Sundararajan 2009).
pub fn discrete_laplace(rng: &mut NoiseRng, num: u128, den: u128) -> Result<i128, PrivacyError> {
    if num == 0 || den == 0 {
        return Err(PrivacyError::InvalidParameter(
            "discrete Laplace needs a positive scale".into(),
        ));
    }
    if num >= 1 << 64 || den >= 1 << 64 {
        return Err(overflow("discrete Laplace scale"));
    }
    let (t, s) = (num, den);
    loop {
        let u = uniform_below(rng, t)?;
        if !bernoulli_exp(rng, u, t)? {
            continue;
        }
        let mut v: u128 = 0;
        while bernoulli_exp(rng, 1, 1)? {
            v += 1;
        }
        let x = v
            .checked_mul(t)
            .and_then(|tv| tv.checked_add(u))
            .ok_or_else(|| overflow("discrete Laplace draw"))?;
        let y = x / s;
        let negative = rng.next_u64() >> 63 == 1;
        if negative && y == 0 {
            continue;
        }
        let y = i128::try_from(y).map_err(|_| overflow("discrete Laplace draw"))?;
        return Ok(if negative { -y } else { y });
    }
}

/// Discrete Laplace noise added to a released sum (the geometric mechanism):
/// [`discrete_laplace`], recorded as the additive mechanism in test builds
/// (report-noisy-max calls [`discrete_laplace`] directly and is recorded as
/// itself).
///
/// # Privacy
///
/// As [`discrete_laplace`]: adding it to an integer query of L1 sensitivity
/// `k` is `k / scale`-DP (used by dp-linear's pure-DP runs).
pub fn additive_discrete_laplace(
    rng: &mut NoiseRng,
    num: u128,
    den: u128,
) -> Result<i128, PrivacyError> {
    #[cfg(test)]
    super::mechanisms::record(super::mechanisms::DISCRETE_LAPLACE);
    discrete_laplace(rng, num, den)
}

/// Discrete Gaussian with variance parameter `sigma^2 = sigma2_num / sigma2_den > 0`:
/// `P(x) ∝ exp(-x^2 / (2 sigma^2))` for every integer `x` (CKS20 Algorithm 3).
///
/// # Proof
///
/// CKS20 Prop. 5.3 / Algorithm 3: with `t = floor(sigma) + 1`, draw `Y` from
/// the discrete Laplace with scale `t` and accept it with probability
/// `exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))`. The accepted `Y` has
/// `P(Y = y) ∝ exp(-|y|/t - (|y| - sigma^2/t)^2/(2 sigma^2)) ∝ exp(-y^2/(2 sigma^2))`
/// because the cross term `|y|/t` cancels. With `sigma^2 = a/b`,
/// the exponent is the rational `(|Y| t b - a)^2 / (2 a b t^2)`.
///
/// # Privacy
///
/// Adding it to an integer query of L2 sensitivity `k` is
/// `k^2 / (2 sigma^2)`-zCDP (CKS20 Thm 4); not used by LazyBB yet.
pub fn discrete_gaussian(
    rng: &mut NoiseRng,
    sigma2_num: u128,
    sigma2_den: u128,
) -> Result<i128, PrivacyError> {
    if sigma2_num == 0 || sigma2_den == 0 {
        return Err(PrivacyError::InvalidParameter(
            "discrete Gaussian needs a positive variance".into(),
        ));
    }
    if sigma2_num >= 1 << 30 || sigma2_den >= 1 << 30 {
        return Err(overflow("discrete Gaussian variance"));
    }
    #[cfg(test)]
    super::mechanisms::record(super::mechanisms::DISCRETE_GAUSSIAN);
    let (a, b) = (sigma2_num, sigma2_den);
    // floor(sqrt(a/b)) = floor(sqrt(floor(a/b))).
    let t = (a / b).isqrt() + 1;
    loop {
        let y = discrete_laplace(rng, t, 1)?;
        let magnitude = y.unsigned_abs();
        // gamma = (|y| t b - a)^2 / (2 a b t^2); the numerator's base is
        // below 2^30 * 2^16 * 2^30 * |y| and |y| is tiny with overwhelming
        // probability; checked arithmetic covers the rest.
        let base = magnitude
            .checked_mul(t)
            .and_then(|v| v.checked_mul(b))
            .ok_or_else(|| overflow("discrete Gaussian rejection"))?;
        let diff = base.abs_diff(a);
        let num = diff
            .checked_mul(diff)
            .ok_or_else(|| overflow("discrete Gaussian rejection"))?;
        let den = 2 * a * b * t * t;
        if bernoulli_exp(rng, num, den)? {
            return Ok(y);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::testutil::chi_square_p_value;

    /// Counts of draws binned as `..=-k, -k+1, .., k-1, k..`.
    fn binned(draws: impl Iterator<Item = i128>, k: i128) -> Vec<u64> {
        let mut counts = vec![0u64; (2 * k + 1) as usize];
        for x in draws {
            counts[(x.clamp(-k, k) + k) as usize] += 1;
        }
        counts
    }

    /// The probabilities of the same bins for the pmf `P(x) ∝ exp(-f(|x|))`,
    /// summed to `|x| <= 10_000` (the rest is far below 1e-300 for the
    /// parameters used here).
    fn expected_bins(f: impl Fn(f64) -> f64, k: i128) -> Vec<f64> {
        let weight = |x: i128| (-f(x.unsigned_abs() as f64)).exp();
        let z: f64 = (-10_000..=10_000).map(weight).sum();
        let mut bins: Vec<f64> = (-k..=k).map(|x| weight(x) / z).collect();
        let tail: f64 = (k + 1..=10_000).map(weight).sum::<f64>() / z;
        bins[0] += tail;
        bins[(2 * k) as usize] += tail;
        bins
    }

    // False-failure rate: each "matches" test fails a correct sampler with
    // probability 1e-4 at a fresh seed (testutil); the seeds are fixed.

    #[test]
    fn uniform_below_is_uniform() {
        let mut rng = NoiseRng::seeded(21);
        for bound in [1u128, 2, 3, 7, 10, 1 << 20] {
            for _ in 0..1000 {
                assert!(uniform_below(&mut rng, bound).unwrap() < bound);
            }
        }
        let bound = 7;
        let mut counts = vec![0u64; bound as usize];
        for _ in 0..70_000 {
            counts[uniform_below(&mut rng, bound).unwrap() as usize] += 1;
        }
        let p = chi_square_p_value(&counts, &[1.0 / 7.0; 7]);
        assert!(p > 1e-4, "p = {p}, {counts:?}");
        // A bound just above 2^127 rejects almost half the words: still in range.
        let big = (1u128 << 127) + 3;
        for _ in 0..100 {
            assert!(uniform_below(&mut rng, big).unwrap() < big);
        }
        assert!(uniform_below(&mut rng, 0).is_err());
        for bound in [1u128 << 64, (1 << 64) - 1, (1 << 64) + 1, 1 << 30] {
            for _ in 0..100 {
                assert!(uniform_below(&mut rng, bound).unwrap() < bound);
            }
        }
    }

    /// The 64-bit path near `2^64`, where multiply-and-shift without the
    /// rejection is far from uniform: with `bound = 3 x 2^62` every word
    /// maps to a value hit by one or two words, and the values hit twice are
    /// those `= 2 mod 3`, half the draws instead of a third. The chi-square
    /// test over `v mod 3` passes the sampler and fails a sampler without
    /// the rejection step.
    #[test]
    fn uniform_below_near_two_to_the_64_is_uniform() {
        let bound: u128 = 3 << 62;
        let residues = |draw: &mut dyn FnMut() -> u128| {
            let mut counts = [0u64; 3];
            for _ in 0..30_000 {
                counts[(draw() % 3) as usize] += 1;
            }
            counts
        };
        let mut rng = NoiseRng::seeded(29);
        let counts = residues(&mut || uniform_below(&mut rng, bound).unwrap());
        let p = chi_square_p_value(&counts, &[1.0 / 3.0; 3]);
        assert!(p > 1e-4, "p = {p}, {counts:?}");
        let mut rng = NoiseRng::seeded(30);
        let counts = residues(&mut || (u128::from(rng.next_u64()) * bound) >> 64);
        let p = chi_square_p_value(&counts, &[1.0 / 3.0; 3]);
        assert!(p < 1e-10, "without the rejection: p = {p}, {counts:?}");
    }

    #[test]
    fn bernoulli_ratio_matches_its_probability() {
        let mut rng = NoiseRng::seeded(22);
        for (num, den) in [(1u128, 3u128), (2, 7), (999, 1000)] {
            let draws = 100_000;
            let ones = (0..draws)
                .filter(|_| bernoulli_ratio(&mut rng, num, den).unwrap())
                .count() as u64;
            let p1 = num as f64 / den as f64;
            let p = chi_square_p_value(&[ones, draws - ones], &[p1, 1.0 - p1]);
            assert!(p > 1e-4, "{num}/{den}: p = {p}, ones {ones}");
        }
        assert!(bernoulli_ratio(&mut rng, 0, 5).is_ok_and(|b| !b));
        assert!(bernoulli_ratio(&mut rng, 5, 5).is_ok_and(|b| b));
        assert!(bernoulli_ratio(&mut rng, 6, 5).is_err());
        assert!(bernoulli_ratio(&mut rng, 0, 0).is_err());
    }

    #[test]
    fn bernoulli_exp_matches_exp_minus_gamma() {
        let mut rng = NoiseRng::seeded(23);
        for (num, den) in [(0u128, 1u128), (1, 3), (1, 1), (5, 2), (7, 3)] {
            let draws = 100_000u64;
            let ones = (0..draws)
                .filter(|_| bernoulli_exp(&mut rng, num, den).unwrap())
                .count() as u64;
            let p1 = (-(num as f64) / den as f64).exp();
            if num == 0 {
                assert_eq!(ones, draws);
                continue;
            }
            let p = chi_square_p_value(&[ones, draws - ones], &[p1, 1.0 - p1]);
            assert!(p > 1e-4, "{num}/{den}: p = {p}, ones {ones}");
        }
        // Huge gamma: almost surely 0, and fast (the loop stops at the first 0).
        assert!(!bernoulli_exp(&mut rng, u128::MAX / 2, 1).unwrap());
        assert!(bernoulli_exp(&mut rng, 1, 0).is_err());
    }

    /// The same test rejects gamma off by a factor 2.
    #[test]
    fn bernoulli_exp_with_a_wrong_gamma_is_detected() {
        let mut rng = NoiseRng::seeded(24);
        let draws = 100_000u64;
        let ones = (0..draws)
            .filter(|_| bernoulli_exp(&mut rng, 2, 3).unwrap())
            .count() as u64;
        let p1 = (-1.0f64 / 3.0).exp();
        assert!(chi_square_p_value(&[ones, draws - ones], &[p1, 1.0 - p1]) < 1e-10);
    }

    fn laplace_counts(seed: u64, num: u128, den: u128, k: i128) -> Vec<u64> {
        let mut rng = NoiseRng::seeded(seed);
        binned(
            (0..200_000).map(|_| discrete_laplace(&mut rng, num, den).unwrap()),
            k,
        )
    }

    #[test]
    fn discrete_laplace_matches_its_pmf() {
        // Scale 5/2 and scale 1/3 (mostly 0, a non-integer t/s ratio).
        for (seed, num, den, k) in [
            (25, 5u128, 2u128, 8i128),
            (26, 1, 3, 2),
            (27, 1 << 30, 1 << 28, 10),
        ] {
            let scale = num as f64 / den as f64;
            let counts = laplace_counts(seed, num, den, k);
            let p = chi_square_p_value(&counts, &expected_bins(|x| x / scale, k));
            assert!(p > 1e-4, "scale {scale}: p = {p}, {counts:?}");
        }
    }

    #[test]
    fn a_wrong_discrete_laplace_scale_is_detected() {
        // Draws at scale 5 tested against the pmf of scale 5/2.
        let counts = laplace_counts(28, 5, 1, 8);
        let p = chi_square_p_value(&counts, &expected_bins(|x| x / 2.5, 8));
        assert!(p < 1e-10, "p = {p}");
    }

    fn gaussian_counts(seed: u64, num: u128, den: u128, k: i128) -> Vec<u64> {
        let mut rng = NoiseRng::seeded(seed);
        binned(
            (0..200_000).map(|_| discrete_gaussian(&mut rng, num, den).unwrap()),
            k,
        )
    }

    #[test]
    fn discrete_gaussian_matches_its_pmf() {
        for (seed, num, den, k) in [(29, 9u128, 1u128, 7i128), (30, 5, 2, 5), (31, 1, 4, 2)] {
            let sigma2 = num as f64 / den as f64;
            let counts = gaussian_counts(seed, num, den, k);
            let p = chi_square_p_value(&counts, &expected_bins(|x| x * x / (2.0 * sigma2), k));
            assert!(p > 1e-4, "sigma^2 {sigma2}: p = {p}, {counts:?}");
        }
    }

    #[test]
    fn a_wrong_discrete_gaussian_scale_is_detected() {
        // sigma = 6 tested against sigma = 3 (factor 2 in the scale).
        let counts = gaussian_counts(32, 36, 1, 7);
        let p = chi_square_p_value(&counts, &expected_bins(|x| x * x / 18.0, 7));
        assert!(p < 1e-10, "p = {p}");
    }

    #[test]
    fn bad_parameters_are_errors_not_panics() {
        let mut rng = NoiseRng::seeded(33);
        assert!(discrete_laplace(&mut rng, 0, 1).is_err());
        assert!(discrete_laplace(&mut rng, 1, 0).is_err());
        assert!(discrete_laplace(&mut rng, 1 << 64, 1).is_err());
        assert!(discrete_gaussian(&mut rng, 0, 1).is_err());
        assert!(discrete_gaussian(&mut rng, 1 << 30, 1).is_err());
    }
}
