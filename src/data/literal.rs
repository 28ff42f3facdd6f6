//! Literals: the Boolean features the learners see, and their human-readable names.
//!
//! A literal's name is what model inspection prints (SPEC §5, the vote table), so it is
//! short and exact: cut points are printed with Rust's shortest round-trip formatting
//! (`25`, `32.5`), which names exactly the `f64` the encoder compares against (the
//! schema rounds equal-width cut points to 12 significant digits for that reason).
//!
//! The forms are listed on [`Literal`].

use serde::{Deserialize, Serialize};

/// One Boolean literal: a condition on one feature column that is true or false for
/// each row. The learners use literals and, implicitly, their negations.
///
/// Names and conditions by kind (cut points printed as the shortest decimal that
/// parses back to the exact `f64` compared against):
///
/// | kind | `name` | `condition` |
/// |---|---|---|
/// | first interval | `age <= 24.3` | `<= 24.3` |
/// | middle interval | `24.3 < age <= 31.6` | `in (24.3, 31.6]` |
/// | last interval | `age > 82.7` | `> 82.7` |
/// | threshold | `age <= 25` | `<= 25` |
/// | category | `workclass == Private` | `== Private` |
/// | unknown category | `workclass is other` | `is other` |
/// | missing | `workclass is missing` | `is missing` |
/// | boolean | `smoker` | `is true` |
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Literal {
    /// Index of the feature column in the schema's feature columns.
    pub feature: usize,
    /// Name of the feature column.
    pub feature_name: String,
    /// Condition, e.g. `<= 25`, `== Private` (every form is listed on the type).
    pub condition: String,
    /// Full human-readable name, e.g. `age <= 25`.
    pub name: String,
}

impl Literal {
    fn new(feature: usize, feature_name: &str, condition: String, name: String) -> Literal {
        Literal {
            feature,
            feature_name: feature_name.to_owned(),
            condition,
            name,
        }
    }

    /// The literals of intervals between consecutive cut points (`cuts.len() + 1`).
    pub(crate) fn intervals(feature: usize, col: &str, cuts: &[f64]) -> Vec<Literal> {
        let n = cuts.len();
        (0..=n)
            .map(|k| {
                let (condition, name) = if k == 0 {
                    let c = num(cuts[0]);
                    (format!("<= {c}"), format!("{col} <= {c}"))
                } else if k == n {
                    let c = num(cuts[n - 1]);
                    (format!("> {c}"), format!("{col} > {c}"))
                } else {
                    let (lo, hi) = (num(cuts[k - 1]), num(cuts[k]));
                    (format!("in ({lo}, {hi}]"), format!("{lo} < {col} <= {hi}"))
                };
                Literal::new(feature, col, condition, name)
            })
            .collect()
    }

    /// The literals `x <= c`, one per cut point.
    pub(crate) fn thresholds(feature: usize, col: &str, cuts: &[f64]) -> Vec<Literal> {
        cuts.iter()
            .map(|&c| {
                let c = num(c);
                Literal::new(feature, col, format!("<= {c}"), format!("{col} <= {c}"))
            })
            .collect()
    }

    /// The literal `col == value`.
    pub(crate) fn category(feature: usize, col: &str, value: &str) -> Literal {
        Literal::new(
            feature,
            col,
            format!("== {value}"),
            format!("{col} == {value}"),
        )
    }

    /// A literal `col is <what>` (`other`, `missing`).
    pub(crate) fn is(feature: usize, col: &str, what: &str) -> Literal {
        Literal::new(
            feature,
            col,
            format!("is {what}"),
            format!("{col} is {what}"),
        )
    }

    /// The literal of a boolean column: the column itself.
    pub(crate) fn boolean(feature: usize, col: &str) -> Literal {
        Literal::new(feature, col, "is true".to_owned(), col.to_owned())
    }
}

/// A number as printed in literal names: the shortest text that parses back to it.
pub(crate) fn num(x: f64) -> String {
    format!("{x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_names() {
        let l = Literal::intervals(0, "age", &[24.3, 31.6, 82.7]);
        let names: Vec<_> = l.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "age <= 24.3",
                "24.3 < age <= 31.6",
                "31.6 < age <= 82.7",
                "age > 82.7"
            ]
        );
        assert_eq!(l[1].condition, "in (24.3, 31.6]");
        assert_eq!(l[3].condition, "> 82.7");
    }

    #[test]
    fn other_names() {
        assert_eq!(Literal::thresholds(2, "age", &[25.0])[0].name, "age <= 25");
        assert_eq!(
            Literal::thresholds(2, "age", &[32.5])[0].condition,
            "<= 32.5"
        );
        let c = Literal::category(1, "workclass", "Private");
        assert_eq!(
            (c.name.as_str(), c.condition.as_str()),
            ("workclass == Private", "== Private")
        );
        assert_eq!(
            Literal::is(1, "workclass", "missing").name,
            "workclass is missing"
        );
        assert_eq!(Literal::is(1, "workclass", "other").condition, "is other");
        assert_eq!(Literal::boolean(3, "smoker").name, "smoker");
        assert_eq!(num(1490400.0), "1490400");
        assert_eq!(num(0.0008948), "0.0008948");
    }
}
