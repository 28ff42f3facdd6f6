//! The mechanisms privboost runs, described once.
//!
//! Each [`Mechanism`] constant is the single source of the user-facing text
//! about one mechanism: the model's privacy statement, `privboost inspect`
//! and the API build their mechanism and sampler wording from it, and
//! docs/privacy.md has the section it names. User-facing text names the
//! mechanism and the docs section, never a Rust module path.
//!
//! In test builds the samplers record which mechanisms ran on this thread
//! (`record`, `take_ran`), so a test can check that a learner's statement
//! names exactly the mechanisms it called (`learn::tests`).

/// One mechanism: a stable id, a name, how its noise is drawn, and where
/// docs/privacy.md proves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mechanism {
    /// Stable identifier, recorded in model files (`mechanisms`).
    pub id: &'static str,
    /// User-facing name.
    pub name: &'static str,
    /// The noise and how it is sampled, in one sentence.
    pub sampler: &'static str,
    /// The docs/privacy.md section with the statement and proof.
    pub docs: &'static str,
}

/// Report-noisy-max with exact discrete Laplace noise
/// (`privacy::laplace::report_noisy_max`).
pub const REPORT_NOISY_MAX_LAPLACE: Mechanism = Mechanism {
    id: "report-noisy-max-discrete-laplace",
    name: "report-noisy-max with exact discrete Laplace noise",
    sampler: "each score divided by the noise scale and rounded to a 2^-30 grid; one exact discrete Laplace draw per candidate (Canonne-Kamath-Steinke 2020, Algorithm 2, in integer arithmetic only); the lowest index among the largest noisy scores wins",
    docs: "docs/privacy.md, \"Report-noisy-max (exact)\"",
};

/// Additive exact discrete Gaussian noise (`privacy::exact::discrete_gaussian`).
/// No LazyBB learner calls it; it is here for learners that add Gaussian
/// noise to sums (e.g. DP-EBM).
pub const DISCRETE_GAUSSIAN: Mechanism = Mechanism {
    id: "discrete-gaussian",
    name: "additive exact discrete Gaussian noise",
    sampler: "exact discrete Gaussian draws (Canonne-Kamath-Steinke 2020, Algorithm 3, in integer arithmetic only)",
    docs: "docs/privacy.md, \"Exact samplers (CKS20)\"",
};

/// Additive exact discrete Laplace noise, the geometric mechanism
/// (`privacy::exact::additive_discrete_laplace`): dp-linear's pure-DP sums.
pub const DISCRETE_LAPLACE: Mechanism = Mechanism {
    id: "discrete-laplace",
    name: "additive exact discrete Laplace noise",
    sampler: "exact discrete Laplace draws (Canonne-Kamath-Steinke 2020, Algorithm 2, in integer arithmetic only)",
    docs: "docs/privacy.md, \"DP linear models (dp-linear)\"",
};

/// k-ary randomized response on the client (`privboost randomize`,
/// `local_dp::randomized_response`): the rows of a `local_dp` dataset.
pub const RANDOMIZED_RESPONSE: Mechanism = Mechanism {
    id: "randomized-response",
    name: "k-ary randomized response on the client",
    sampler: "per cell, a uniform candidate among the column's k values, accepted always if it is the true value and otherwise with probability exp(-eps') (Canonne-Kamath-Steinke 2020, Algorithm 1, eps' = eps rounded down to a multiple of 2^-30), drawn again until accepted",
    docs: "docs/privacy.md, \"Local DP collection\"",
};

/// Objective perturbation (Chaudhuri, Monteleoni and Sarwate 2011): a
/// hidden random vector added to dp-linear's objective
/// (`privacy::objective`). Its output is released only through
/// [`DISCRETE_LAPLACE`] on a grid; the hidden vector itself is the one
/// floating-point draw in privboost.
pub const OBJECTIVE_PERTURBATION: Mechanism = Mechanism {
    id: "objective-perturbation",
    name: "objective perturbation",
    sampler: "a hidden vector b, never released, of density proportional to exp(-beta ||b||): its norm a sum of exponentials and its direction normalised Gaussians, drawn in floating point from uniform multiples of 2^-53 (not exact: the proof is a change of variables over the reals)",
    docs: "docs/privacy.md, \"dp-linear by objective perturbation\"",
};

/// Every mechanism the code can run.
pub const ALL: &[Mechanism] = &[
    REPORT_NOISY_MAX_LAPLACE,
    DISCRETE_GAUSSIAN,
    DISCRETE_LAPLACE,
    RANDOMIZED_RESPONSE,
    OBJECTIVE_PERTURBATION,
];

/// Where all noise comes from, whatever the mechanism.
pub const RANDOMNESS: &str =
    "a ChaCha20 CSPRNG keyed by the operating system (docs/privacy.md, \"Randomness\")";

impl Mechanism {
    /// The mechanism with this id.
    pub fn by_id(id: &str) -> Option<Mechanism> {
        ALL.iter().copied().find(|m| m.id == id)
    }

    /// "name (docs section)".
    pub fn cited(&self) -> String {
        format!("{} ({})", self.name, self.docs)
    }
}

/// The sampler sentence of a statement over these mechanisms.
pub fn sampler_text(mechanisms: &[Mechanism]) -> String {
    let parts: Vec<String> = mechanisms
        .iter()
        .map(|m| format!("{}: {}", m.name, m.sampler))
        .collect();
    let exactness = if mechanisms.contains(&OBJECTIVE_PERTURBATION) {
        "every released value's noise is exact; the hidden vector of objective perturbation is drawn in floating point"
    } else {
        "exact, no floating-point value enters a random draw"
    };
    format!("{exactness}; {}; all from {RANDOMNESS}", parts.join("; "))
}

#[cfg(test)]
thread_local! {
    static RAN: std::cell::RefCell<std::collections::BTreeSet<&'static str>> =
        const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Test builds only: note that `m` ran on this thread.
#[cfg(test)]
pub(crate) fn record(m: Mechanism) {
    RAN.with(|r| r.borrow_mut().insert(m.id));
}

/// Test builds only: the ids of the mechanisms that ran on this thread since
/// the last call.
#[cfg(test)]
pub(crate) fn take_ran() -> std::collections::BTreeSet<&'static str> {
    RAN.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_texts_name_no_module_paths() {
        let ids: std::collections::BTreeSet<_> = ALL.iter().map(|m| m.id).collect();
        assert_eq!(ids.len(), ALL.len());
        for m in ALL {
            assert_eq!(Mechanism::by_id(m.id), Some(*m));
            for text in [m.name, m.sampler, m.docs, RANDOMNESS] {
                assert!(!text.contains("::"), "{text}");
            }
            let docs = include_str!("../../docs/privacy.md");
            let section = m.docs.split('"').nth(1).unwrap();
            assert!(
                docs.lines()
                    .any(|l| l.starts_with('#') && l.ends_with(section)),
                "docs/privacy.md has no section {section}"
            );
        }
    }

    #[test]
    fn the_samplers_record_what_ran() {
        let mut rng = super::super::NoiseRng::seeded(1);
        take_ran();
        super::super::laplace::report_noisy_max(&mut rng, &[0.0, 1.0], 1.0).unwrap();
        assert_eq!(take_ran(), [REPORT_NOISY_MAX_LAPLACE.id].into());
        super::super::exact::discrete_gaussian(&mut rng, 4, 1).unwrap();
        assert_eq!(take_ran(), [DISCRETE_GAUSSIAN.id].into());
    }
}
