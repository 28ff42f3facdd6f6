//! The weak hypotheses a LazyBB model is made of.

use serde::{Deserialize, Serialize};

use crate::data::BitMatrix;

/// One weak hypothesis `h: x -> {-1, +1}` (LazyBB §4.1: the class 1R).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Hypothesis {
    /// `+1` when literal `literal` is true (or false, when `negated`), else `-1`.
    Literal {
        /// Index into the model's literal list.
        literal: u32,
        /// Predict `+1` when the literal is false.
        negated: bool,
    },
    /// The constant `+1` (`positive`) or `-1`.
    Constant {
        /// Which constant.
        positive: bool,
    },
}

impl Hypothesis {
    /// The candidate with index `index` in the order the 1-Rule learner
    /// enumerates them: `x_0..x_{d-1}`, then `not x_0..not x_{d-1}`, then the
    /// constants `+1`, `-1` (so `2d + 2` candidates).
    pub(crate) fn from_candidate_index(index: usize, d: usize) -> Hypothesis {
        match index {
            i if i < d => Hypothesis::Literal {
                literal: i as u32,
                negated: false,
            },
            i if i < 2 * d => Hypothesis::Literal {
                literal: (i - d) as u32,
                negated: true,
            },
            i if i == 2 * d => Hypothesis::Constant { positive: true },
            _ => Hypothesis::Constant { positive: false },
        }
    }

    /// Add `step * y_i h(x_i)` to each entry of `margins` (the LazyBB margin
    /// update, SPEC §4.1, with `step = 1`; LazyBB keeps `2 s + label` per row
    /// and uses `step = 2`).
    pub(crate) fn add_margins(
        &self,
        features: &BitMatrix,
        labels: &[i8],
        margins: &mut [i32],
        step: i32,
    ) {
        match *self {
            Hypothesis::Constant { positive } => {
                let h = if positive { step } else { -step };
                for (m, &y) in margins.iter_mut().zip(labels) {
                    *m += h * i32::from(y);
                }
            }
            Hypothesis::Literal { literal, negated } => {
                let flip = if negated { u64::MAX } else { 0 };
                let column = features.column(literal as usize);
                for ((chunk_m, chunk_y), &word) in
                    margins.chunks_mut(64).zip(labels.chunks(64)).zip(column)
                {
                    let bits = word ^ flip;
                    for (b, (m, &y)) in chunk_m.iter_mut().zip(chunk_y).enumerate() {
                        // h = +1 when the bit is set, -1 otherwise; branch-free.
                        let h = 2 * ((bits >> b) & 1) as i32 - 1;
                        *m += step * h * i32::from(y);
                    }
                }
            }
        }
    }
}
