//! KL (Bregman) projection onto the kappa-dense measures (SPEC §4.1).
//!
//! `Gamma = { mu in [0,1]^n : sum(mu) >= kappa n }`. For a positive measure
//! `m`, the projection `argmin_{mu in Gamma} KL(mu || m)` has the form
//! `mu(i) = min(1, c m(i))` with the smallest `c >= 1` for which the density
//! constraint holds (Barak–Hardt–Kale 2009; PAPERS.md §1.2):
//!
//! - **Case A**: capping alone meets the density, `sum min(1, m(i)) >= kappa n`;
//!   then `c = 1`. The cap still applies: entries above 1 are cut to 1 (the
//!   authors' code skips it, which breaks the `1/(kappa n)` bound and hence the
//!   privacy promise; PAPERS.md §4 item 4).
//! - **Case B**: otherwise sort `m` descending; with the `k` largest entries
//!   capped at 1, `c_k = (kappa n - k) / sum_{j>k} m_(j)`; the answer is the
//!   first `c_k` with `c_k m_(k+1) <= 1`, and then `sum(mu) = kappa n` exactly.
//!
//! Either way every `mu(i) <= 1` and `sum(mu) >= kappa n`, so the normalised
//! distribution satisfies `p(i) <= 1 / (kappa n)`: it is kappa-smooth, which is
//! what the weak learners' sensitivity arguments rest on (`zeta = 1/(kappa n)`).
//!
//! Everything is in the log domain: LazyBB's `m(i) = kappa exp(-lambda s(i))`
//! reaches `exp(lambda tau)`, about `3e21` at `lambda = 0.5, tau = 99`, and
//! more for larger `tau`. Equal values are handled as one group with a
//! multiplicity, so LazyBB (whose margins take only `2 tau + 1` values)
//! projects in `O(n + tau log tau)`.

/// A group of `count` entries that share the log-value `log_value`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group {
    /// `ln m(i)` for every entry of the group (finite).
    pub log_value: f64,
    /// Number of entries with this value.
    pub count: u64,
}

/// `ln c` of the projection of the measure given by `groups` (any order;
/// sorted in place) onto the `kappa`-dense measures.
///
/// The projected measure is `min(1, exp(ln c + log_value))` per entry.
/// Requires `kappa` in (0, 1), at least one entry, and finite log-values.
/// Groups may be empty (`count = 0`): they change nothing.
///
/// # Constant work
///
/// The steps taken depend only on the number of groups and their
/// log-values, never on the counts (which come from private data): both
/// cases are always computed and the Case B scan always runs to the end,
/// keeping the first group that satisfies its condition. LazyBB passes all
/// `2 tau + 1` margin groups with the same log-values every round, so the
/// sort sees the same input order too (`docs/privacy.md`, "Timing").
pub fn log_scale(groups: &mut [Group], kappa: f64) -> f64 {
    debug_assert!(kappa > 0.0 && kappa < 1.0);
    debug_assert!(groups.iter().all(|g| g.log_value.is_finite()));
    let n: u64 = groups.iter().map(|g| g.count).sum();
    debug_assert!(n > 0);
    let target = kappa * n as f64;

    // Case A: c = 1.
    let capped_sum: f64 = groups
        .iter()
        .map(|g| g.count as f64 * g.log_value.min(0.0).exp())
        .sum();
    let case_a = capped_sum >= target;

    // Case B: descending order; suffix[g] = ln sum_{h >= g} count_h m_h
    // (-inf over empty groups only).
    groups.sort_by(|a, b| b.log_value.total_cmp(&a.log_value));
    let mut suffix = vec![f64::NEG_INFINITY; groups.len() + 1];
    for g in (0..groups.len()).rev() {
        let term = groups[g].log_value + (groups[g].count as f64).ln();
        suffix[g] = log_add_exp(term, suffix[g + 1]);
    }
    let mut capped = 0u64;
    let mut found = None;
    for (g, group) in groups.iter().enumerate() {
        // Groups before g are capped at 1; g and after are scaled by c.
        // Before the answer, remaining > 0: in Case B we only cap entries
        // whose scaled value exceeds 1, each adding exactly 1, so we never
        // cap kappa n entries before stopping. After it the value is unused
        // (and may be NaN). An empty group's c equals the next non-empty
        // group's (same remaining and suffix), so stopping at it is exact.
        let remaining = target - capped as f64;
        let log_c = remaining.ln() - suffix[g];
        if found.is_none() && log_c + group.log_value <= 0.0 {
            found = Some(log_c);
        }
        capped += group.count;
    }
    match (case_a, found) {
        (true, _) => 0.0,
        (false, Some(log_c)) => log_c,
        // Unreachable for kappa < 1: with every entry capped the sum is
        // n >= kappa n, so the scan has found a group. Return the scale
        // that caps everything.
        (false, None) => -groups.last().map_or(0.0, |g| g.log_value),
    }
}

/// The projection of the measure `exp(log_m)` as the measure itself
/// (convenience for tests and small inputs; LazyBB uses [`log_scale`]).
pub fn project(log_m: &[f64], kappa: f64) -> Vec<f64> {
    let mut groups: Vec<Group> = log_m
        .iter()
        .map(|&log_value| Group {
            log_value,
            count: 1,
        })
        .collect();
    let log_c = log_scale(&mut groups, kappa);
    log_m.iter().map(|&l| (log_c + l).min(0.0).exp()).collect()
}

/// `ln(e^a + e^b)` without overflow.
fn log_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY {
        hi
    } else {
        hi + (lo - hi).exp().ln_1p()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reference: the smallest c >= 1 with sum min(1, c m) >= kappa n, found
    /// by bisection in the linear domain (valid for small, moderate inputs).
    fn brute_force_c(m: &[f64], kappa: f64) -> f64 {
        let target = kappa * m.len() as f64;
        let density = |c: f64| m.iter().map(|&v| (c * v).min(1.0)).sum::<f64>();
        if density(1.0) >= target {
            return 1.0;
        }
        let (mut lo, mut hi) = (1.0, 2.0);
        while density(hi) < target {
            hi *= 2.0;
        }
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if density(mid) >= target {
                hi = mid
            } else {
                lo = mid
            }
        }
        hi
    }

    fn kl(mu: &[f64], m: &[f64]) -> f64 {
        mu.iter()
            .zip(m)
            .map(|(&a, &b)| if a > 0.0 { a * (a / b).ln() - a + b } else { b })
            .sum()
    }

    proptest! {
        /// Entries in (0, 1] and above: result in [0,1], density >= kappa,
        /// max p(i) <= 1/(kappa n), and c equals the brute-force smallest c.
        #[test]
        fn matches_brute_force(
            m in prop::collection::vec(1e-4f64..3.0, 1..40),
            kappa in 0.05f64..0.95,
        ) {
            let n = m.len() as f64;
            let log_m: Vec<f64> = m.iter().map(|v| v.ln()).collect();
            let mu = project(&log_m, kappa);
            let total: f64 = mu.iter().sum();
            prop_assert!(mu.iter().all(|&v| (0.0..=1.0).contains(&v)));
            prop_assert!(total >= kappa * n * (1.0 - 1e-12));
            let max_p = mu.iter().cloned().fold(0.0, f64::max) / total;
            prop_assert!(max_p <= 1.0 / (kappa * n) * (1.0 + 1e-12));
            let c = brute_force_c(&m, kappa);
            for (got, &v) in mu.iter().zip(&m) {
                let want = (c * v).min(1.0);
                prop_assert!((got - want).abs() <= 1e-9 * want.max(1e-300) + 1e-12,
                    "got {} want {} (c = {})", got, want, c);
            }
        }

        /// No feasible point has a smaller KL divergence (checked against
        /// random feasible measures on tiny inputs).
        #[test]
        fn is_the_kl_minimiser(
            m in prop::collection::vec(1e-3f64..2.0, 2..5),
            kappa in 0.1f64..0.9,
            probes in prop::collection::vec(prop::collection::vec(0.0f64..1.0, 5), 200),
        ) {
            let n = m.len();
            let log_m: Vec<f64> = m.iter().map(|v| v.ln()).collect();
            let mu = project(&log_m, kappa);
            let best = kl(&mu, &m);
            for probe in probes {
                let candidate: Vec<f64> = probe[..n].to_vec();
                if candidate.iter().sum::<f64>() >= kappa * n as f64 {
                    prop_assert!(kl(&candidate, &m) >= best - 1e-9);
                }
            }
        }
    }

    /// LazyBB-sized log-weights (lambda tau = 500) would overflow exp().
    #[test]
    fn huge_log_weights_do_not_overflow() {
        let kappa: f64 = 0.25;
        let mut log_m = vec![kappa.ln() - 500.0; 90];
        log_m.extend(vec![kappa.ln() + 500.0; 10]);
        let mu = project(&log_m, kappa);
        assert!(mu.iter().all(|v| v.is_finite() && *v <= 1.0));
        let total: f64 = mu.iter().sum();
        assert!((total - 25.0).abs() < 1e-9, "{total}");
        // The ten heavy entries are capped at 1; the rest share 15 equally.
        assert_eq!(&mu[90..], &[1.0; 10]);
        assert!((mu[0] - 15.0 / 90.0).abs() < 1e-12);
    }

    /// Case A with entries above 1: the cap applies (PAPERS.md §4 item 4).
    #[test]
    fn case_a_caps_entries_above_one() {
        let m = [5.0, 0.5, 0.5, 0.5];
        let log_m: Vec<f64> = m.iter().map(|v: &f64| v.ln()).collect();
        let mu = project(&log_m, 0.35);
        assert_eq!(mu, vec![1.0, 0.5, 0.5, 0.5]);
    }

    /// Uniform start: mu = kappa everywhere is already dense (c = 1).
    #[test]
    fn uniform_kappa_is_a_fixed_point() {
        let mu = project(&[0.3f64.ln(); 7], 0.3);
        assert!(mu.iter().all(|&v| (v - 0.3).abs() < 1e-15));
    }

    #[test]
    fn groups_equal_ungrouped() {
        let values = [-3.0, -1.0, -1.0, 0.5, -2.0, -2.0, -2.0];
        let mu = project(&values, 0.6);
        let mut groups = vec![
            Group {
                log_value: -3.0,
                count: 1,
            },
            Group {
                log_value: -1.0,
                count: 2,
            },
            Group {
                log_value: 0.5,
                count: 1,
            },
            Group {
                log_value: -2.0,
                count: 3,
            },
        ];
        let log_c = log_scale(&mut groups, 0.6);
        for (&v, &got) in values.iter().zip(&mu) {
            assert!(((log_c + v).min(0.0).exp() - got).abs() < 1e-12);
        }
    }

    /// Empty groups (LazyBB passes every margin, occurring or not) give the
    /// same scale, bit for bit, in both cases of the projection.
    #[test]
    fn empty_groups_change_nothing() {
        let mut state = 99u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        for case in 0..500 {
            let kappa = 0.05 + 0.9 * next();
            let size = 1 + case % 12;
            let groups: Vec<Group> = (0..size)
                .map(|_| Group {
                    log_value: 8.0 * next() - 6.0,
                    count: 1 + (20.0 * next()) as u64,
                })
                .collect();
            let mut padded = groups.clone();
            for _ in 0..(1 + case % 5) {
                let log_value = 10.0 * next() - 7.0;
                let at = (next() * padded.len() as f64) as usize;
                padded.insert(
                    at,
                    Group {
                        log_value,
                        count: 0,
                    },
                );
            }
            let want = log_scale(&mut groups.clone(), kappa);
            let got = log_scale(&mut padded, kappa);
            assert_eq!(got.to_bits(), want.to_bits(), "case {case}");
        }
    }
}
