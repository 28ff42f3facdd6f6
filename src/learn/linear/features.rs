//! dp-linear's features and blocks, from the schema alone (public).
//!
//! # Why the encoded literals (and interval midpoints), not raw columns
//!
//! The learners only see the encoded bit matrix, and the literals already
//! carry every public bound the privacy proof needs: each literal is 0 or 1,
//! and a row sets exactly one literal of each one-hot column (intervals,
//! categories, with `is other` / `is missing`). Grouping the literals into
//! **blocks** in which a row has *at most one* non-zero feature, of value in
//! `[-1, 1]`, bounds a row's contribution to any block's sums by 1 in one
//! coordinate, whatever the schema: the sensitivity does not grow with the
//! number of literals (a thermometer-coded threshold column, where many
//! literals are 1 at once, is split into one-literal blocks for that reason).
//!
//! Blocks:
//! - the intercept (every row, value 1);
//! - each one-hot group: one feature per literal (value 1), or, for a numeric
//!   interval column with [`NumericFeatures::Linear`], one feature whose value
//!   is the row's interval midpoint mapped by the public bounds onto
//!   `[-1, 1]` (the column "clamped and scaled", to
//!   the schema's resolution), with its
//!   `is missing` literal as a block of its own; with
//!   [`NumericFeatures::Both`], that line block *and* the column's one-hot
//!   block (one coefficient per interval and `is missing`: corrections to the
//!   line at the schema's full resolution). A row then has one feature in
//!   each of the two blocks: a block still holds at most one feature per row,
//!   which is all the sensitivity argument asks of a block;
//! - every other literal (booleans, thresholds, a boolean's `is missing`):
//!   a one-feature block.
//!
//! Coefficients are then per literal (interpretable as the literal's effect
//! given the others) or per unit of a numeric column.

use serde::{Deserialize, Serialize};

use super::params::NumericFeatures;
use crate::data::{Column, Dataset, Encoder, NumericEncoding};

/// One feature of a block: a name and the literals that put a row on it,
/// each with the row's value on the feature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feature {
    /// A literal's name, or a column's name for a linear feature.
    pub name: String,
    /// `(literal, value)`: a row with this literal set has this value
    /// (in `[-1, 1]`).
    pub literals: Vec<(u32, f64)>,
}

/// A block: features of which a row has at most one non-zero.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    /// The column (or literal) name; `intercept` for the intercept.
    pub name: String,
    /// Whether this is the intercept (every row, value 1).
    pub intercept: bool,
    /// For a linear feature: the column's public bounds, to report the
    /// coefficient per unit of the column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<(f64, f64)>,
    /// The features (the intercept has one, with no literal).
    pub features: Vec<Feature>,
}

impl Block {
    /// Whether this is a line block (a numeric column's value on `[-1, 1]`):
    /// one feature, with the column's bounds.
    pub fn is_line(&self) -> bool {
        !self.intercept && self.bounds.is_some() && self.features.len() == 1
    }

    /// `s_b` of the curvature sensitivity (params.rs): 1 for a one-feature
    /// block, 2 otherwise; 0 for the intercept (its curvature is `n`).
    pub fn curvature_sensitivity(&self) -> usize {
        match (self.intercept, self.features.len()) {
            (true, _) => 0,
            (false, 1) => 1,
            (false, _) => 2,
        }
    }
}

/// The public counts a plan needs, for every numeric treatment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinearShape {
    /// (blocks, curvature sensitivity `D_c`) with interval features.
    pub intervals: (usize, usize),
    /// The same with linear numeric features.
    pub linear: (usize, usize),
    /// The same with both (a line block and an interval block per numeric
    /// interval column).
    pub both: (usize, usize),
    /// Line blocks (numeric interval columns) in the linear and both layouts:
    /// with the intercept they form the jointly stepped group, whose cross
    /// products are released (params.rs, item 1b).
    pub lines: usize,
    /// Features (coefficients, the intercept's included) with intervals,
    /// linear and both: the dimension `d` of the output-perturbation solver
    /// (`output.rs`), whose L1 sensitivity grows with `sqrt(d)`.
    pub dimensions: [usize; 3],
}

impl LinearShape {
    /// The shape of an encoder's schema.
    pub fn new(encoder: &Encoder) -> LinearShape {
        let count = |mode| {
            let blocks = layout(encoder, mode);
            (
                blocks.len(),
                blocks.iter().map(Block::curvature_sensitivity).sum(),
            )
        };
        LinearShape {
            intervals: count(NumericFeatures::Intervals),
            linear: count(NumericFeatures::Linear),
            both: count(NumericFeatures::Both),
            lines: layout(encoder, NumericFeatures::Linear)
                .iter()
                .filter(|b| b.is_line())
                .count(),
            dimensions: [
                NumericFeatures::Intervals,
                NumericFeatures::Linear,
                NumericFeatures::Both,
            ]
            .map(|mode| layout(encoder, mode).iter().map(|b| b.features.len()).sum()),
        }
    }

    /// `d`: the features (coefficients) of the layout of `mode`.
    pub fn dimension_of(&self, mode: NumericFeatures) -> usize {
        match mode {
            NumericFeatures::Intervals => self.dimensions[0],
            NumericFeatures::Linear => self.dimensions[1],
            NumericFeatures::Both => self.dimensions[2],
        }
    }

    /// `(K, D_c)` for `mode`.
    pub fn of(&self, mode: NumericFeatures) -> (usize, usize) {
        match mode {
            NumericFeatures::Intervals => self.intervals,
            NumericFeatures::Linear => self.linear,
            NumericFeatures::Both => self.both,
        }
    }

    /// Line blocks in the layout of `mode` (none with intervals).
    pub fn lines_of(&self, mode: NumericFeatures) -> usize {
        match mode {
            NumericFeatures::Intervals => 0,
            NumericFeatures::Linear | NumericFeatures::Both => self.lines,
        }
    }
}

/// The blocks of a schema, intercept first, then in literal order.
pub fn layout(encoder: &Encoder, mode: NumericFeatures) -> Vec<Block> {
    let literals = encoder.literals();
    let schema = encoder.schema();
    let mut grouped = vec![false; literals.len()];
    let mut blocks: Vec<(usize, Block)> = Vec::new();
    let single = |l: usize| Block {
        name: literals[l].name.clone(),
        intercept: false,
        bounds: None,
        features: vec![Feature {
            name: literals[l].name.clone(),
            literals: vec![(l as u32, 1.0)],
        }],
    };
    for group in encoder.one_hot_groups() {
        for l in group.clone() {
            grouped[l] = true;
        }
        let name = literals[group.start].feature_name.clone();
        let numeric = schema.columns.iter().find_map(|c| match c {
            Column::Numeric(n) if n.name == name && n.encoding == NumericEncoding::Intervals => {
                Some(n)
            }
            _ => None,
        });
        let one_hot = || Block {
            name: name.clone(),
            intercept: false,
            bounds: None,
            features: group
                .clone()
                .map(|l| Feature {
                    name: literals[l].name.clone(),
                    literals: vec![(l as u32, 1.0)],
                })
                .collect(),
        };
        match (mode, numeric) {
            (NumericFeatures::Linear | NumericFeatures::Both, Some(column)) => {
                let both = mode == NumericFeatures::Both;
                // Invariant: the encoder was built from this schema, whose
                // columns it validated (cut points included).
                let cuts = column.cut_points().unwrap_or_default();
                let (min, max) = (column.min, column.max);
                let width = (max - min).max(f64::MIN_POSITIVE);
                let mut feature = Feature {
                    name: name.clone(),
                    literals: Vec::new(),
                };
                for (k, l) in group.clone().enumerate() {
                    if literals[l].condition.starts_with("is ") {
                        // `is missing`: its own block (no value to put on the
                        // line), or, with both, a feature of the one-hot block.
                        if !both {
                            blocks.push((l, single(l)));
                        }
                        continue;
                    }
                    let lo = if k == 0 { min } else { cuts[k - 1] };
                    let hi = cuts.get(k).copied().unwrap_or(max);
                    // Centred on the public midpoint of the bounds, so that
                    // the line's slope and the intercept are nearly
                    // uncorrelated and coordinate descent converges in a
                    // few epochs (with values in [0, 1] the two directions
                    // fight, and two epochs left half the signal).
                    // Onto all of [-1, 1], not [-1/2, 1/2]: the sensitivity
                    // allows |v| <= 1, and the signal of a sum of r v (and
                    // of a curvature, v^2) grows with |v| while the noise
                    // does not (on Abalone, whose columns fill little of
                    // their public ranges, halving v left the curvatures
                    // below their noise).
                    let z = 2.0 * (((lo + hi) / 2.0 - min) / width).clamp(0.0, 1.0) - 1.0;
                    feature.literals.push((l as u32, z));
                }
                if both {
                    // After the line (stable sort by first literal): the
                    // corrections are stepped once the line has moved.
                    blocks.push((group.start, one_hot()));
                }
                blocks.insert(
                    blocks.len() - usize::from(both),
                    (
                        group.start,
                        Block {
                            name: name.clone(),
                            intercept: false,
                            bounds: Some((min, max)),
                            features: vec![feature],
                        },
                    ),
                );
            }
            _ => blocks.push((group.start, one_hot())),
        }
    }
    for (l, _) in grouped.iter().enumerate().filter(|(_, g)| !**g) {
        blocks.push((l, single(l)));
    }
    blocks.sort_by_key(|(first, _)| *first);
    let mut out = vec![Block {
        name: "intercept".into(),
        intercept: true,
        bounds: None,
        features: vec![Feature {
            name: "intercept".into(),
            literals: Vec::new(),
        }],
    }];
    out.extend(blocks.into_iter().map(|(_, b)| b));
    out
}

/// One block's rows: the feature of each row (`features` = none) and its
/// value. Work is `n` per literal of the block, whatever the bits: a row
/// sets at most one of the block's literals, so `sum_j (j + 1) bit_j` is
/// its literal's slot (0: none). A row that broke that claim (a hand-built
/// matrix) lands on some slot or none: still one feature per row, which is
/// all the sensitivity argument needs.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRows {
    /// Feature index of each row; `n_features` for "no feature".
    pub feature: Vec<u16>,
    /// Value of each row on its feature (0 for none).
    pub value: Vec<f64>,
}

/// The rows of `block` in `data`.
pub fn block_rows(data: &Dataset, block: &Block) -> BlockRows {
    let n = data.n_rows();
    let n_features = block.features.len() as u16;
    if block.intercept {
        return BlockRows {
            feature: vec![0; n],
            value: vec![1.0; n],
        };
    }
    // Slot table: slot 0 = none; slot j + 1 = the block's j-th literal.
    let mut slot_feature = vec![n_features];
    let mut slot_value = vec![0.0];
    let mut slot_literal = Vec::new();
    for (f, feature) in block.features.iter().enumerate() {
        for &(l, v) in &feature.literals {
            slot_feature.push(f as u16);
            slot_value.push(v);
            slot_literal.push(l);
        }
    }
    let mut slot = vec![0u32; n];
    for (j, &l) in slot_literal.iter().enumerate() {
        let j = j as u32 + 1;
        for (w, &word) in data.features.column(l as usize).iter().enumerate() {
            let rows = &mut slot[w * 64..(w * 64 + 64).min(n)];
            for (b, s) in rows.iter_mut().enumerate() {
                *s += j * ((word >> b) & 1) as u32;
            }
        }
    }
    let slots = slot_feature.len();
    let (feature, value) = slot
        .into_iter()
        .map(|s| {
            let s = s as usize;
            let s = if s < slots { s } else { 0 };
            (slot_feature[s], slot_value[s])
        })
        .unzip();
    BlockRows { feature, value }
}

/// The number of rows on each literal of `block`'s first feature, in the
/// feature's literal order (for a line block: the column's intervals in
/// order). Work is `n / 64` words per literal whatever the bits (the
/// matrix's high bits past `n` are zero). What the range release of
/// params.rs, item 0, adds noise to: a row is on at most one of a line's
/// literals, so substituting it moves at most two counts by 1.
pub fn literal_counts(data: &Dataset, block: &Block) -> Vec<i64> {
    block.features.first().map_or_else(Vec::new, |f| {
        f.literals
            .iter()
            .map(|&(l, _)| {
                data.features
                    .column(l as usize)
                    .iter()
                    .map(|w| i64::from(w.count_ones()))
                    .sum()
            })
            .collect()
    })
}

/// A line's values mapped from its private range onto `[-1, 1]`
/// (post-processing of the released counts, params.rs item 0): the range
/// runs from the lowest to the highest interval midpoint whose noisy count
/// is at least `threshold`; that span is mapped onto `[-1, 1]` and every
/// value outside it clamped to its edge, so every value stays in `[-1, 1]`
/// (the bound every later sensitivity argument uses). The block's `bounds`
/// become the range in the column's units (so a coefficient per unit stays
/// `2 w / (hi - lo)`). With fewer than two distinct midpoints inside, the
/// line keeps the public bounds. Returns whether the line was rescaled.
pub fn rescale_line(block: &mut Block, noisy_counts: &[f64], threshold: f64) -> bool {
    let (Some((min, max)), Some(feature)) = (block.bounds, block.features.first_mut()) else {
        return false;
    };
    let (lo, hi) = feature
        .literals
        .iter()
        .zip(noisy_counts)
        .filter(|(_, c)| **c >= threshold)
        .fold(
            (f64::INFINITY, f64::NEG_INFINITY),
            |(lo, hi), (&(_, z), _)| (lo.min(z), hi.max(z)),
        );
    // Also false for no interval inside (lo = inf) and for NaN.
    if !(hi - lo > 1e-9 && hi - lo <= 2.0) {
        return false;
    }
    for (_, z) in &mut feature.literals {
        *z = (2.0 * (*z - lo) / (hi - lo) - 1.0).clamp(-1.0, 1.0);
    }
    // z = 2 (x - min) / (max - min) - 1 on the public bounds.
    let x = |z: f64| min + (z + 1.0) / 2.0 * (max - min);
    block.bounds = Some((x(lo), x(hi)));
    true
}
