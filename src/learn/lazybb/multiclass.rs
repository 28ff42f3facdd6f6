//! LazyBB for a label with k classes (issue 27): one-vs-rest.
//!
//! Class `c`'s fit is ordinary binary LazyBB on the question "is the row's
//! class `c`?", over the same rows and literals as every other class's fit.
//! Why one-vs-rest and not a multiclass booster: LazyBB's guarantee (its
//! smooth-boosting analysis, LazyBB §3) is for a binary label, and each of
//! the k fits is exactly that binary algorithm, so every one of them keeps
//! its proven privacy argument (docs/privacy.md, "DP-1R" and "DP TopDown")
//! unchanged. The boosting (accuracy) guarantee holds per binary problem;
//! it says nothing about the argmax over the k fits, and we do not claim
//! one for it.
//!
//! # Privacy: sequential composition over the k fits
//!
//! Every row takes part in every fit (it is "class c" or "not class c" in
//! each), so the k fits compose sequentially (basic composition, Dwork and
//! Roth, Theorem 3.16): each gets `epsilon / k` and `delta / k`, rounded
//! down so that the k shares summed do not exceed the job's budget
//! ([`per_fit_budget`]). Within a fit, the rounds split that share exactly
//! as a binary run does (`privacy::calibration::split_over_rounds`, with
//! advanced composition when delta > 0 and it helps). The noise is
//! calibrated to the per-fit share, so the noise per fit grows with k (the
//! selection's Laplace scale `1/eta` is k times the binary one for DP-1R).
//!
//! # Running time
//!
//! k fits of the binary algorithm, each with work independent of the rows'
//! values (boost.rs, "Side channels"): `O(k)` times a binary fit. The
//! per-class labels are built with one pass over every row per class, no
//! data-dependent branch.

use super::LearnError;
use super::boost::{Ensemble, train};
use super::params::ValidLazyBbParams;
use crate::data::{BitVec, Dataset};
use crate::privacy::{Budget, NoiseRng};

/// `total / k`, stepped down until `k` copies summed in order are at most
/// `total`: float division may round up by an ulp, and the composition
/// argument needs the shares to sum to at most what is charged.
fn share(total: f64, k: usize) -> f64 {
    let mut x = total / k as f64;
    while std::iter::repeat_n(x, k).sum::<f64>() > total {
        x = x.next_down();
    }
    x
}

/// The budget of each of the `k` one-vs-rest fits: `epsilon / k` and
/// `delta / k` (module docs), a function of the public budget and `k` only.
pub fn per_fit_budget(budget: Budget, k: usize) -> Result<Budget, LearnError> {
    if k < 2 {
        return Err(LearnError::InvalidParameter(format!(
            "a multiclass label needs at least 2 classes, got {k}"
        )));
    }
    Ok(Budget::new(
        share(budget.epsilon(), k),
        share(budget.delta(), k),
    )?)
}

/// Train the `k` one-vs-rest fits on `data` (whose `classes` give each
/// row's class index), class 0 first. `params` carries the per-fit budget
/// ([`per_fit_budget`]). `on_step(done)` counts rounds over all fits
/// (`k tau` in all).
pub fn train_one_vs_rest(
    data: &Dataset,
    k: usize,
    params: &ValidLazyBbParams,
    rng: &mut NoiseRng,
    on_step: &mut dyn FnMut(u32) -> bool,
) -> Result<Vec<Ensemble>, LearnError> {
    let classes = data.classes.as_ref().ok_or(LearnError::NoLabels)?;
    if classes.len() != data.n_rows() {
        return Err(LearnError::InvalidParameter(
            "the class labels do not match the rows".into(),
        ));
    }
    let tau = params.get().tau;
    // One copy of the bit matrix whose labels are replaced per class.
    let mut binary = Dataset {
        features: data.features.clone(),
        labels: None,
        targets: None,
        classes: None,
        one_hot_groups: data.one_hot_groups.clone(),
    };
    let mut fits = Vec::with_capacity(k);
    for c in 0..k {
        // Every row visited, the bit computed without a branch on its value.
        let is_c: Vec<bool> = classes.iter().map(|&y| usize::from(y) == c).collect();
        binary.labels = Some(BitVec::from_bools(&is_c));
        let done_before = c as u32 * tau;
        let ensemble = train(&binary, params, Some(&mut *rng), &mut |round| {
            on_step(done_before + round)
        })?;
        fits.push(ensemble);
    }
    Ok(fits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shares by hand: 1/3 and 1/26 of epsilon (and of delta), never
    /// summing above the budget.
    #[test]
    fn the_budget_is_split_equally_over_the_fits() {
        let b = per_fit_budget(Budget::new(1.0, 1e-6).unwrap(), 3).unwrap();
        assert!((b.epsilon() - 1.0 / 3.0).abs() < 1e-15, "{}", b.epsilon());
        assert!((b.delta() - 1e-6 / 3.0).abs() < 1e-21, "{}", b.delta());
        assert!(std::iter::repeat_n(b.epsilon(), 3).sum::<f64>() <= 1.0);
        assert!(std::iter::repeat_n(b.delta(), 3).sum::<f64>() <= 1e-6);
        let b = per_fit_budget(Budget::new(5.0, 0.0).unwrap(), 26).unwrap();
        assert!((b.epsilon() - 5.0 / 26.0).abs() < 1e-15, "{}", b.epsilon());
        assert_eq!(b.delta(), 0.0);
        assert!(std::iter::repeat_n(b.epsilon(), 26).sum::<f64>() <= 5.0);
        // Any budget: the shares never sum above it.
        for e in [0.1, 0.3, 0.7, 1.1, 2.9, 1e-3, 123.456] {
            for k in [2, 3, 7, 10, 26] {
                let b = per_fit_budget(Budget::new(e, 0.0).unwrap(), k).unwrap();
                assert!(std::iter::repeat_n(b.epsilon(), k).sum::<f64>() <= e);
                assert!(b.epsilon() > e / k as f64 * (1.0 - 1e-12));
            }
        }
        assert!(per_fit_budget(Budget::new(1.0, 0.0).unwrap(), 1).is_err());
    }
}
