//! Contribution bounding for the privacy unit (issue 28).
//!
//! A schema with `"privacy_unit": {"column": c, "max_rows": k}` declares that
//! neighbouring tables differ in the rows of one unit (all rows sharing one
//! identifier in column `c`). Every guarantee is then stated for the table
//! after each unit has been cut to at most `k` rows: this module does the
//! cut, once, at upload (docs/privacy.md, "The privacy unit", argues why once
//! at upload is right for the ledger).
//!
//! - The reader never keeps an identifier: it hands over one [`UnitKey`] per
//!   kept row, a keyed hash of the trimmed cell ([`UnitHasher`], SHA-256 of a
//!   256-bit key drawn from the OS CSPRNG per upload, then the cell; the key
//!   is dropped with the hasher when the upload ends). Two different
//!   identifiers collide with probability about `n^2 / 2^129`; a collision
//!   only merges two units, which still keeps every person to at most `k`
//!   rows (the merged unit has at most `k`).
//! - [`bound`] takes the keys of any reader's rows (CSV today, Parquet
//!   later), after parsing, and returns the rows to keep: for each unit with
//!   more than `k` rows a uniformly random `k`-subset (a partial
//!   Fisher-Yates shuffle with exact uniform draws from the OS CSPRNG), not
//!   the first rows in file order; the kept rows stay in file order.
//!
//! Memory during an upload: 16 bytes (the key) and 8 bytes (a row index)
//! per row, on top of the bit matrix; nothing of it is stored, shown or
//! logged. The number of rows dropped is data-dependent: only the owner who
//! uploaded the file is told it, as with the rows skipped as malformed
//! (SPEC §3); analysts never see it.

use sha2::{Digest, Sha256};

use crate::privacy::exact::uniform_below;
use crate::privacy::{NoiseRng, PrivacyError};

use super::dataset::Dataset;

/// A row's unit, as a keyed hash of its identifier (never the identifier).
pub type UnitKey = u128;

/// The keyed hash of one upload's identifiers. Deliberately not `Clone`
/// nor `Debug`: the key lives for one upload only and is never shown.
pub struct UnitHasher {
    key: [u8; 32],
}

impl UnitHasher {
    /// A hasher keyed with 256 bits from the OS CSPRNG.
    pub fn from_os() -> Result<UnitHasher, PrivacyError> {
        let mut rng = NoiseRng::from_os()?;
        let mut key = [0u8; 32];
        for chunk in key.chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
        }
        Ok(UnitHasher { key })
    }

    /// A hasher with a fixed key: tests only.
    #[cfg(test)]
    pub(crate) fn with_key(key: [u8; 32]) -> UnitHasher {
        UnitHasher { key }
    }

    /// The key of one identifier cell (already trimmed). The key has a
    /// fixed length, so `key || cell` is an unambiguous input.
    pub fn key_of(&self, cell: &[u8]) -> UnitKey {
        let mut h = Sha256::new();
        h.update(self.key);
        h.update(cell);
        let d = h.finalize();
        let mut first = [0u8; 16];
        first.copy_from_slice(&d[..16]);
        u128::from_le_bytes(first)
    }
}

/// The result of [`bound`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    /// The rows kept, ascending (file order).
    pub kept: Vec<usize>,
    /// Rows dropped (data-dependent: for the uploading owner only).
    pub dropped: usize,
}

/// Keep at most `max_rows` rows of each unit: the rows of a unit with more
/// are a uniformly random `max_rows`-subset of them (each subset equally
/// likely), drawn with `rng`. `units[i]` is row `i`'s unit.
pub fn bound(
    units: &[UnitKey],
    max_rows: u32,
    rng: &mut NoiseRng,
) -> Result<Bounded, PrivacyError> {
    let k = max_rows.max(1) as usize;
    let mut order: Vec<usize> = (0..units.len()).collect();
    // Group the rows of each unit (stable: within a unit, file order).
    order.sort_by_key(|&i| units[i]);
    let mut kept = Vec::with_capacity(units.len());
    let mut start = 0;
    while start < order.len() {
        let unit = units[order[start]];
        let mut end = start + 1;
        while end < order.len() && units[order[end]] == unit {
            end += 1;
        }
        let group = &mut order[start..end];
        let c = group.len();
        if c > k {
            // Partial Fisher-Yates: after step i, group[..=i] is a uniform
            // random ordered (i+1)-subset; exact uniform indices.
            for i in 0..k {
                let j = i + uniform_below(rng, (c - i) as u128)? as usize;
                group.swap(i, j);
            }
            kept.extend_from_slice(&group[..k]);
        } else {
            kept.extend_from_slice(group);
        }
        start = end;
    }
    kept.sort_unstable();
    let dropped = units.len() - kept.len();
    Ok(Bounded { kept, dropped })
}

/// `data` with each unit cut to at most `max_rows` rows ([`bound`]); the
/// dataset itself when nothing is dropped. Returns the rows dropped and the
/// kept rows' keys too.
pub fn bound_dataset(
    data: Dataset,
    units: Vec<UnitKey>,
    max_rows: u32,
    rng: &mut NoiseRng,
) -> Result<(Dataset, usize, Vec<UnitKey>), PrivacyError> {
    assert_eq!(units.len(), data.n_rows(), "one unit key per row");
    let b = bound(&units, max_rows, rng)?;
    if b.dropped == 0 {
        return Ok((data, 0, units));
    }
    let kept = b.kept.iter().map(|&r| units[r]).collect();
    Ok((data.subset(&b.kept), b.dropped, kept))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_keyed_and_deterministic_within_an_upload() {
        let a = UnitHasher::with_key([1; 32]);
        let b = UnitHasher::with_key([2; 32]);
        assert_eq!(a.key_of(b"p1"), a.key_of(b"p1"));
        assert_ne!(a.key_of(b"p1"), a.key_of(b"p2"));
        assert_ne!(a.key_of(b"p1"), b.key_of(b"p1"));
        let os = UnitHasher::from_os().unwrap();
        let os2 = UnitHasher::from_os().unwrap();
        assert_ne!(os.key_of(b"p1"), os2.key_of(b"p1"));
    }

    /// Units of 1..10 rows with k = 3: each unit keeps min(size, 3) rows,
    /// its own, in file order; units at or under the bound keep all.
    #[test]
    fn each_unit_keeps_at_most_k_of_its_own_rows() {
        let mut units = Vec::new();
        for u in 1..=10u128 {
            for _ in 0..u {
                units.push(u);
            }
        }
        // Interleave: rotate so that units are not contiguous.
        units.rotate_left(7);
        let mut rng = NoiseRng::seeded(5);
        let b = bound(&units, 3, &mut rng).unwrap();
        assert!(b.kept.windows(2).all(|w| w[0] < w[1]));
        for u in 1..=10u128 {
            let kept = b.kept.iter().filter(|&&i| units[i] == u).count();
            assert_eq!(kept, (u as usize).min(3), "unit {u}");
        }
        assert_eq!(b.dropped, 55 - (1 + 2 + 3 * 8));
        // k = 1 on all-distinct units keeps everything.
        let distinct: Vec<u128> = (0..50).collect();
        let all = bound(&distinct, 1, &mut rng).unwrap();
        assert_eq!(all.kept, (0..50).collect::<Vec<_>>());
        assert_eq!(all.dropped, 0);
    }

    /// The kept subset is uniform, not the first rows: one unit of 5 rows
    /// cut to 2 keeps each of the 10 pairs with probability 1/10. Over
    /// 20000 draws each count is Binomial(20000, 0.1): mean 2000, sd 42.4;
    /// 6 sd (1745..2255) fails with probability < 1e-8 per pair if uniform,
    /// and "the first two rows" would put all 20000 on one pair.
    #[test]
    fn the_kept_subset_is_uniform() {
        let units = [7u128; 5];
        let mut rng = NoiseRng::seeded(11);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..20_000 {
            let b = bound(&units, 2, &mut rng).unwrap();
            assert_eq!(b.kept.len(), 2);
            *counts.entry((b.kept[0], b.kept[1])).or_insert(0usize) += 1;
        }
        assert_eq!(counts.len(), 10);
        for (pair, c) in counts {
            assert!((1745..=2255).contains(&c), "{pair:?}: {c}");
        }
    }
}
