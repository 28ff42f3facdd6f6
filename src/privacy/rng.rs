//! The noise source: a CSPRNG keyed from the operating system.
//!
//! A known seed lets anyone strip the noise from a release (SPEC §2), so the
//! only public constructor reads fresh key material from the OS
//! (`getrandom`). ChaCha20 expands that key; it is a cryptographically secure
//! generator, so its output is as unpredictable as the OS source for our
//! purposes, and it is much faster than one syscall per draw.

use rand::rngs::{ChaCha20Rng, SysRng};
use rand::{Rng, SeedableRng};

use super::PrivacyError;

/// Source of all noise used by the mechanisms in [`crate::privacy`].
///
/// Deliberately not `Clone`: two copies would replay the same noise.
#[derive(Debug)]
pub struct NoiseRng {
    inner: ChaCha20Rng,
}

impl NoiseRng {
    /// A generator keyed with 256 bits from the operating system's CSPRNG.
    pub fn from_os() -> Result<NoiseRng, PrivacyError> {
        let inner = ChaCha20Rng::try_from_rng(&mut SysRng)
            .map_err(|e| PrivacyError::Entropy(e.to_string()))?;
        Ok(NoiseRng { inner })
    }

    /// A reproducible generator, for this crate's unit tests only.
    #[cfg(test)]
    pub(crate) fn seeded(seed: u64) -> NoiseRng {
        NoiseRng {
            inner: ChaCha20Rng::seed_from_u64(seed),
        }
    }

    /// 64 uniform random bits: the only primitive the exact samplers in
    /// [`super::exact`] use.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }
}
