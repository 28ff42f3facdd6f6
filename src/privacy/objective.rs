//! The hidden vector `b` of objective perturbation (Chaudhuri, Monteleoni and
//! Sarwate 2011, JMLR, Algorithm 2): a random vector of density proportional
//! to `exp(-beta ||b||_2)` on `R^d`, added to an objective as `b . w / n`.
//!
//! `b` is never released: the optimiser's minimiser depends on it, and the
//! coefficients dp-linear releases are that minimiser rounded to a grid with
//! exact discrete Laplace noise added (`learn::linear::objective`). It is the
//! one draw in privboost made with floating-point arithmetic: the proof of
//! objective perturbation is a change of variables over the reals, which a
//! lattice does not admit. docs/privacy.md, "dp-linear by objective
//! perturbation", states what this leaves unproven.
//!
//! The density factors into a direction uniform on the sphere and a norm of
//! density proportional to `r^(d-1) exp(-beta r)`, the Gamma distribution of
//! shape `d` and scale `1 / beta`: for integer `d` a sum of `d` exponentials
//! `-ln(u) / beta`. The direction is a vector of standard normals (Box and
//! Muller 1958) divided by its norm.

use super::NoiseRng;

/// The smallest uniform the sampler draws, `2^-53`: `-ln(u)` is at most
/// `53 ln 2`, so the norm of `b` has a public bound ([`norm_bound`]).
const UNIFORM_STEP: f64 = 1.0 / (1u64 << 53) as f64;

/// A uniform in `[2^-53, 1]`, multiples of `2^-53` (never 0, so its log is
/// finite).
fn uniform(rng: &mut NoiseRng) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * UNIFORM_STEP
}

/// The largest norm [`gamma_norm_vector`] can return for `d` and `beta`:
/// `d * 53 ln 2 / beta` (each of the `d` exponentials is at most `53 ln 2 /
/// beta`). Public: the release's clamping bounds use it.
pub fn norm_bound(d: usize, beta: f64) -> f64 {
    d as f64 * 53.0 * std::f64::consts::LN_2 / beta
}

/// A vector of `d` coordinates with density proportional to
/// `exp(-beta ||b||)` (module docs), `beta > 0`, `d >= 1`.
pub fn gamma_norm_vector(rng: &mut NoiseRng, d: usize, beta: f64) -> Vec<f64> {
    #[cfg(test)]
    super::mechanisms::record(super::mechanisms::OBJECTIVE_PERTURBATION);
    let norm: f64 = (0..d).map(|_| -uniform(rng).ln()).sum::<f64>() / beta;
    loop {
        let mut v: Vec<f64> = (0..d)
            .map(|_| {
                let (u1, u2) = (uniform(rng), uniform(rng));
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            })
            .collect();
        let length = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        // All-zero (every u1 = 1) has probability about 2^-53d: draw again.
        // The loop's length depends on the noise only, never on the data.
        if length > 0.0 {
            v.iter_mut().for_each(|x| *x *= norm / length);
            return v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The norm is Gamma(d, 1 / beta): mean d / beta, variance d / beta^2.
    /// A scale off by a factor 2 (e.g. beta = epsilon instead of
    /// epsilon / 2) moves the mean by 50 standard errors.
    #[test]
    fn the_norm_is_gamma_distributed_with_the_planned_scale() {
        let mut rng = NoiseRng::seeded(7);
        let (d, beta, draws) = (5usize, 0.25, 20_000usize);
        let norms: Vec<f64> = (0..draws)
            .map(|_| {
                let b = gamma_norm_vector(&mut rng, d, beta);
                assert_eq!(b.len(), d);
                b.iter().map(|x| x * x).sum::<f64>().sqrt()
            })
            .collect();
        let mean = norms.iter().sum::<f64>() / draws as f64;
        let var = norms.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (draws - 1) as f64;
        // d / beta = 20, d / beta^2 = 80; the mean's standard error is
        // sqrt(80 / 20000) = 0.063: 5 standard errors.
        assert!((mean - 20.0).abs() < 0.32, "mean {mean}");
        assert!((var - 80.0).abs() < 8.0, "variance {var}");
        assert!(norms.iter().all(|&r| r <= norm_bound(d, beta)));
    }

    /// The direction is uniform: each coordinate of b / ||b|| has mean 0 and
    /// mean square 1 / d, and the coordinates are uncorrelated.
    #[test]
    fn the_direction_is_isotropic() {
        let mut rng = NoiseRng::seeded(8);
        let (d, draws) = (4usize, 20_000usize);
        let mut mean = [0.0f64; 4];
        let mut square = [0.0f64; 4];
        let mut cross = 0.0f64;
        for _ in 0..draws {
            let b = gamma_norm_vector(&mut rng, d, 1.0);
            let r = b.iter().map(|x| x * x).sum::<f64>().sqrt();
            for j in 0..d {
                mean[j] += b[j] / r;
                square[j] += (b[j] / r).powi(2);
            }
            cross += b[0] * b[1] / (r * r);
        }
        for j in 0..d {
            // sd of one coordinate 1/2; of the mean 0.0035.
            assert!((mean[j] / draws as f64).abs() < 0.02, "{mean:?}");
            assert!((square[j] / draws as f64 - 0.25).abs() < 0.01, "{square:?}");
        }
        assert!((cross / draws as f64).abs() < 0.01, "{cross}");
    }

    #[test]
    fn the_norm_bound_is_53_ln2_per_coordinate() {
        assert!((norm_bound(2, 0.5) - 4.0 * 53.0 * std::f64::consts::LN_2).abs() < 1e-9);
    }
}
