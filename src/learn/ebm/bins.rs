//! DP-EBM's features and their private binning (DP-EBM App. 8.1, with the
//! schema's literals as the fine, data-independent base grid).
//!
//! A feature is one one-hot column of the schema (interval-encoded numeric or
//! categorical, with its `is other` / `is missing` literals): its base bins are
//! its literals, and every row sets exactly one. Every other literal (a
//! boolean, a threshold `x <= c`, a boolean's `is missing`) is a feature of
//! two base bins, false and true. All of this comes from the schema alone.
//!
//! The binning phase releases a noisy count of every base bin and merges bins
//! from those public counts until each holds about `n / max_bins` rows, so
//! that the shape-function updates are divided by large, public denominators.

use serde::{Deserialize, Serialize};

use super::params::EbmPlan;
use crate::data::{Column, Dataset, Encoder};
use crate::learn::LearnError;
use crate::privacy::NoiseRng;

/// One feature's base bins, from the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureLayout {
    /// The column name (or the literal's name for a one-literal feature).
    pub name: String,
    /// The literal of each base bin; `None` is the "literal false" bin of a
    /// one-literal feature.
    pub base: Vec<Option<u32>>,
    /// The first `ordered` base bins are a numeric column's intervals, in
    /// order; the rest (categories, `is other`, `is missing`) are unordered.
    pub ordered: usize,
}

/// The features of a schema (public: no data read), in literal order.
pub fn layout(encoder: &Encoder) -> Vec<FeatureLayout> {
    let literals = encoder.literals();
    let mut grouped = vec![false; literals.len()];
    let mut features: Vec<(usize, FeatureLayout)> = Vec::new();
    for group in encoder.one_hot_groups() {
        let name = literals[group.start].feature_name.clone();
        let numeric = encoder
            .schema()
            .columns
            .iter()
            .any(|c| matches!(c, Column::Numeric(_)) && c.name() == name);
        let ordered = if numeric {
            group
                .clone()
                .filter(|&l| !literals[l].condition.starts_with("is "))
                .count()
        } else {
            0
        };
        for l in group.clone() {
            grouped[l] = true;
        }
        features.push((
            group.start,
            FeatureLayout {
                name,
                base: group.clone().map(|l| Some(l as u32)).collect(),
                ordered,
            },
        ));
    }
    for (l, literal) in literals.iter().enumerate() {
        if !grouped[l] {
            features.push((
                l,
                FeatureLayout {
                    name: literal.name.clone(),
                    base: vec![None, Some(l as u32)],
                    ordered: 0,
                },
            ));
        }
    }
    features.sort_by_key(|(first, _)| *first);
    features.into_iter().map(|(_, f)| f).collect()
}

/// The base bin of every row for one feature. Work is `n` per base bin,
/// whatever the bits (no data-dependent branch): each row sets exactly one
/// literal of a one-hot group, so the sum of `j * bit_j` is its bin; a
/// one-literal feature's bin is its bit.
pub fn codes(data: &Dataset, feature: &FeatureLayout) -> Vec<u16> {
    let n = data.n_rows();
    let mut code = vec![0u16; n];
    for (j, literal) in feature.base.iter().enumerate() {
        let Some(l) = literal else { continue };
        let j = j as u16;
        for (w, &word) in data.features.column(*l as usize).iter().enumerate() {
            let rows = &mut code[w * 64..(w * 64 + 64).min(n)];
            for (b, c) in rows.iter_mut().enumerate() {
                *c += j * ((word >> b) & 1) as u16;
            }
        }
    }
    code
}

/// One feature after the private binning: base bin -> merged bin, and the
/// public noisy count of each merged bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedBins {
    /// Merged bin of each base bin.
    pub bin_of_base: Vec<u16>,
    /// Noisy count of each merged bin (clipped at 0 per base bin, summed).
    pub counts: Vec<f64>,
}

impl MergedBins {
    /// Number of merged bins.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether there is no bin (never, for a built value).
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }
}

/// Noisy counts of the base bins: the true histogram plus the plan's
/// binning noise on every count (discrete Gaussian with delta > 0, discrete
/// Laplace with delta = 0), clipped at 0 (post-processing). Sensitivity
/// argument: `EbmParams::plan`.
pub fn noisy_counts(
    codes: &[u16],
    n_base: usize,
    plan: &EbmPlan,
    rng: &mut NoiseRng,
) -> Result<Vec<f64>, LearnError> {
    let mut hist = vec![0i128; n_base];
    for &c in codes {
        hist[usize::from(c)] += 1;
    }
    hist.iter()
        .map(|&h| Ok((h + plan.bin_noise.draw(rng)?).max(0) as f64))
        .collect()
}

/// Merge base bins from their public noisy counts (App. 8.1): the ordered
/// bins left to right until a bin holds `target`, a leftover joining the
/// last closed bin; unordered bins of at least `target` kept, the others
/// grouped the same way in schema order (stop 38: the appendix pools them
/// all into one, which erases a feature such as hour of day, 24 categories
/// of about 4% each, as soon as `target` exceeds 4% of n); a leftover joins
/// the last group, or the smallest other bin when no group closed. Only
/// the public counts and the schema's order decide: post-processing.
pub fn merge(noisy: &[f64], ordered: usize, target: f64) -> MergedBins {
    let mut bins = Merging {
        bin_of_base: vec![0u16; noisy.len()],
        counts: Vec::new(),
    };
    let (last, rest, open) = bins.group_in_order(0..ordered, noisy, target);
    if !rest.is_empty() {
        let into = last.unwrap_or_else(|| bins.open_bin(0.0));
        bins.join(into, &rest, open);
    }
    let mut rare: Vec<usize> = Vec::new();
    for (j, &c) in noisy.iter().enumerate().skip(ordered) {
        if c >= target {
            let bin = bins.open_bin(c);
            bins.bin_of_base[j] = bin as u16;
        } else {
            rare.push(j);
        }
    }
    let (last, rest, pooled) = bins.group_in_order(rare, noisy, target);
    if !rest.is_empty() {
        let into = match last {
            Some(group) => group,
            // The smallest other bin (first of equals).
            None if pooled < target && !bins.counts.is_empty() => bins.smallest(),
            None => bins.open_bin(0.0),
        };
        bins.join(into, &rest, pooled);
    }
    MergedBins {
        bin_of_base: bins.bin_of_base,
        counts: bins.counts,
    }
}

/// [`merge`]'s state: the merged bin of each base bin and each merged bin's
/// count so far.
struct Merging {
    bin_of_base: Vec<u16>,
    counts: Vec<f64>,
}

impl Merging {
    /// A new merged bin holding `count`; its index.
    fn open_bin(&mut self, count: f64) -> usize {
        self.counts.push(count);
        self.counts.len() - 1
    }

    /// The merged bin with the smallest count (the first of equals; the
    /// counts are sums of clipped noisy counts, never NaN).
    fn smallest(&self) -> usize {
        self.counts
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| a.total_cmp(b))
            .map_or(0, |(i, _)| i)
    }

    /// `bases` (with their summed count `count`) join merged bin `bin`.
    fn join(&mut self, bin: usize, bases: &[usize], count: f64) {
        self.counts[bin] += count;
        for &j in bases {
            self.bin_of_base[j] = bin as u16;
        }
    }

    /// `bases` in the given order, a new merged bin closed each time the
    /// open run's noisy count reaches `target`. Returns the last bin closed
    /// (`None` if none), the bases of the run left open and their count.
    fn group_in_order(
        &mut self,
        bases: impl IntoIterator<Item = usize>,
        noisy: &[f64],
        target: f64,
    ) -> (Option<usize>, Vec<usize>, f64) {
        let mut last = None;
        let mut open = 0.0;
        let mut members: Vec<usize> = Vec::new();
        for j in bases {
            open += noisy[j];
            members.push(j);
            if open >= target {
                let bin = self.open_bin(0.0);
                self.join(bin, &members, open);
                last = Some(bin);
                open = 0.0;
                members.clear();
            }
        }
        (last, members, open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{LabelMode, Schema, read_csv};

    #[test]
    fn merge_by_hand() {
        // Ordered counts 3, 1, 5, 2, 1 with target 4: [3+1], [5], leftover [2+1]
        // joins the last closed bin. Unordered 10, 1, 2: 10 stays; 1 + 2 = 3 is
        // below 4 and joins the smallest bin so far (4, the first).
        let m = merge(&[3.0, 1.0, 5.0, 2.0, 1.0, 10.0, 1.0, 2.0], 5, 4.0);
        assert_eq!(m.bin_of_base, vec![0, 0, 1, 1, 1, 2, 0, 0]);
        assert_eq!(m.counts, vec![7.0, 8.0, 10.0]);
        // Everything below target: one bin.
        let m = merge(&[1.0, 1.0], 2, 100.0);
        assert_eq!(m.bin_of_base, vec![0, 0]);
        assert_eq!(m.counts, vec![2.0]);
        // Rare unordered bins that pool above the target make their own bin.
        let m = merge(&[10.0, 3.0, 3.0], 0, 5.0);
        assert_eq!(m.bin_of_base, vec![0, 1, 1]);
        // Many rare ones make groups of at least the target, in schema order
        // (hours of a day), not one pool; a leftover joins the last group.
        let m = merge(&[1.0; 6], 0, 2.0);
        assert_eq!(m.bin_of_base, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(m.counts, vec![2.0, 2.0, 2.0]);
        let m = merge(&[1.0; 5], 0, 2.0);
        assert_eq!(m.bin_of_base, vec![0, 0, 1, 1, 1]);
        assert_eq!(m.counts, vec![2.0, 3.0]);
        let m = merge(&[10.0, 1.0, 1.0, 1.0, 1.0], 0, 2.0);
        assert_eq!(m.bin_of_base, vec![0, 1, 1, 2, 2]);
        assert_eq!(m.counts, vec![10.0, 2.0, 2.0]);
        // After ordered bins: the rare categories group among themselves.
        let m = merge(&[4.0, 4.0, 1.0, 1.0, 1.0], 2, 2.0);
        assert_eq!(m.bin_of_base, vec![0, 1, 2, 2, 2]);
        assert_eq!(m.counts, vec![4.0, 4.0, 3.0]);
    }

    #[test]
    fn layout_and_codes_from_the_schema() {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "1"}, "columns": [
                {"name": "age", "type": "numeric", "min": 0, "max": 30, "bins": 3, "missing": ["?"]},
                {"name": "c", "type": "categorical", "categories": ["a", "b"]},
                {"name": "f", "type": "boolean"}]}"#,
        )
        .unwrap();
        let encoder = Encoder::new(&schema).unwrap();
        let features = layout(&encoder);
        assert_eq!(features.len(), 3);
        assert_eq!(features[0].name, "age");
        assert_eq!(features[0].ordered, 3);
        assert_eq!(features[0].base.len(), 4);
        assert_eq!(features[1].ordered, 0);
        assert_eq!(features[2].base, vec![None, Some(6)]);
        let data = read_csv(
            "age,c,f,y\n5,a,1,1\n25,b,0,0\n?,a,0,1\n15,b,1,0\n".as_bytes(),
            &encoder,
            LabelMode::Required,
        )
        .unwrap();
        assert_eq!(codes(&data, &features[0]), vec![0, 2, 3, 1]);
        assert_eq!(codes(&data, &features[1]), vec![0, 1, 0, 1]);
        assert_eq!(codes(&data, &features[2]), vec![1, 0, 0, 1]);
    }
}
