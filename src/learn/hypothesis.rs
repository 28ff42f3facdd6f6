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

    /// Add `y_i h(x_i)` to each margin (the LazyBB margin update, SPEC §4.1).
    pub(crate) fn add_margins(&self, features: &BitMatrix, labels: &[i8], margins: &mut [i32]) {
        match *self {
            Hypothesis::Constant { positive } => {
                let h = if positive { 1 } else { -1 };
                for (m, &y) in margins.iter_mut().zip(labels) {
                    *m += h * i32::from(y);
                }
            }
            Hypothesis::Literal { literal, negated } => {
                let column = features.column(literal as usize);
                for (i, (m, &y)) in margins.iter_mut().zip(labels).enumerate() {
                    let bit = (column[i / 64] >> (i % 64)) & 1 == 1;
                    let h = if bit != negated { 1 } else { -1 };
                    *m += h * i32::from(y);
                }
            }
        }
    }
}
