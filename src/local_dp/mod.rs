//! Local-DP collection, in one place: what each column's randomized response
//! runs over and how a dataset's declared local epsilon is split over the
//! columns (here), the mechanism ([`randomized_response`]: k-ary randomized
//! response, sampled exactly, and its unbiased inverse) and the
//! sampled-column protocol ([`sampled_column`]: one uniformly drawn column
//! per row, reported with its label at the full epsilon; its report file and
//! stored form). It sits between `data` (the schema and encoder it reads)
//! and `learn` (the learners that debias its rows).
//!
//! `privboost randomize` (the data owner's side) encodes every cell with the
//! public schema, replaces the value by a k-ary randomized response over the
//! column's [`ColumnDomain`] ([`randomized_response`]), and writes the
//! reported value back as a cell of the same schema (a category name, the
//! midpoint of an interval, a missing token), so the normal upload path
//! accepts the file. The learners then debias their statistics per literal
//! with [`LocalDp::literal_rr`]. Everything here is a function of the public
//! schema and the declared epsilons (docs/privacy.md, "Local DP collection").
//!
//! A column's domain is every value the encoder can give it: each interval
//! (out-of-range numbers are clamped into the end ones), each category, the
//! `is other` value, `false` and `true`, and `is missing` when the column
//! declares missing tokens. So no cell the encoder accepts passes through
//! un-randomized; ignored columns are written empty.

use serde::{Deserialize, Serialize};

use crate::data::{Bins, Column, DataError, Encoder, NumericEncoding, Schema, Task, UnknownPolicy};

pub mod randomized_response;
pub mod sampled_column;

/// How the rows of a local-DP dataset were randomized on the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// Every column and the label, each by its own randomized response at a
    /// share of epsilon (the first protocol; datasets declared before
    /// protocols existed are this one).
    #[default]
    AllColumns,
    /// One uniformly drawn column per row, reported jointly with the label
    /// at the full epsilon (`sampled_column`).
    SampledColumn,
}

impl Protocol {
    /// The name as written in requests, flags and declarations.
    pub fn as_str(&self) -> &'static str {
        match self {
            Protocol::AllColumns => "all-columns",
            Protocol::SampledColumn => "sampled-column",
        }
    }

    /// Parse a name ([`Protocol::as_str`]).
    pub fn parse(name: &str) -> Option<Protocol> {
        [Protocol::AllColumns, Protocol::SampledColumn]
            .into_iter()
            .find(|p| p.as_str() == name)
    }
}

/// A dataset's local-DP declaration: the protocol, the per-row epsilon and
/// the label's part of it.
///
/// - [`Protocol::AllColumns`]: the label gets `label_epsilon`, the rest is
///   split equally over the feature columns (basic composition over the
///   row's columns).
/// - [`Protocol::SampledColumn`]: one randomized response of one column's
///   (value, label) pair at the full `epsilon`; `label_epsilon` is then
///   `epsilon` (the label's report is part of that one epsilon-LDP release).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LocalDp {
    /// How the rows were randomized; absent in declarations stored before
    /// the sampled-column protocol, which are all-columns.
    #[serde(default)]
    pub protocol: Protocol,
    /// Per-row epsilon: the sum of the per-column epsilons.
    pub epsilon: f64,
    /// The label's epsilon.
    pub label_epsilon: f64,
}

/// One literal's randomized response: the column's RR has `k` values at
/// `epsilon`, and `m` of them light the literal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LiteralRr {
    /// Values of the column's domain.
    pub k: u32,
    /// Values that light this literal.
    pub m: u32,
    /// The column's epsilon.
    pub epsilon: f64,
}

impl LocalDp {
    /// The declaration for `schema` at per-row `epsilon`, with the label's
    /// share `label_epsilon` or, if `None`, an equal share of every column
    /// (`epsilon / (features + 1)`). Checks the schema can be randomized
    /// ([`Domains::new`]) and the split: each column's epsilon finite and > 0.
    pub fn new(
        schema: &Schema,
        epsilon: f64,
        label_epsilon: Option<f64>,
    ) -> Result<LocalDp, DataError> {
        Domains::new(schema)?;
        // The all-columns protocol randomizes the label alone, as one bit,
        // and its learner (LazyBB's debiased 1-Rule) is binary; a class list
        // would be written as garbage, so it is refused before any row is
        // read (the sampled-column protocol takes k classes).
        if let Task::Multiclass { k } = schema.task() {
            return Err(DataError::schema(format!(
                "the all-columns local-DP protocol covers binary classification only: a label with {k} classes needs the sampled-column protocol (privboost randomize --protocol sampled-column, trained by ldp-naive-bayes), or upload the rows centrally"
            )));
        }
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(DataError::LocalDp {
                message: format!("the local epsilon must be a finite number > 0, got {epsilon}"),
            });
        }
        let features = feature_count(schema);
        let label_epsilon = label_epsilon.unwrap_or(epsilon / (features as f64 + 1.0).max(1.0));
        let bad_label = !(label_epsilon.is_finite() && label_epsilon > 0.0)
            || label_epsilon > epsilon
            || (features > 0 && label_epsilon >= epsilon);
        if bad_label {
            return Err(DataError::LocalDp {
                message: format!(
                    "the label epsilon must be > 0 and leave a part of the local epsilon {epsilon} for the {features} feature columns, got {label_epsilon}"
                ),
            });
        }
        Ok(LocalDp {
            protocol: Protocol::AllColumns,
            epsilon,
            label_epsilon,
        })
    }

    /// The sampled-column declaration for `schema` at per-row `epsilon`
    /// (`sampled_column`): checks the schema and that every column's
    /// pair randomized response can run at `epsilon`.
    pub fn sampled_column(schema: &Schema, epsilon: f64) -> Result<LocalDp, DataError> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(DataError::LocalDp {
                message: format!("the local epsilon must be a finite number > 0, got {epsilon}"),
            });
        }
        sampled_column::SampledColumn::new(schema, epsilon)?;
        Ok(LocalDp {
            protocol: Protocol::SampledColumn,
            epsilon,
            label_epsilon: epsilon,
        })
    }

    /// The declaration for `protocol`: [`LocalDp::new`] or
    /// [`LocalDp::sampled_column`] (which takes no label share).
    pub fn with_protocol(
        protocol: Protocol,
        schema: &Schema,
        epsilon: f64,
        label_epsilon: Option<f64>,
    ) -> Result<LocalDp, DataError> {
        match (protocol, label_epsilon) {
            (Protocol::AllColumns, _) => LocalDp::new(schema, epsilon, label_epsilon),
            (Protocol::SampledColumn, None) => LocalDp::sampled_column(schema, epsilon),
            (Protocol::SampledColumn, Some(_)) => Err(DataError::LocalDp {
                message: "the sampled-column protocol reports the label jointly with one column at the full epsilon: it takes no label epsilon".into(),
            }),
        }
    }

    /// Each feature column's epsilon: `(epsilon - label_epsilon) / features`
    /// (all-columns); the full epsilon for sampled-column, where the one
    /// reported column's pair gets all of it.
    pub fn feature_epsilon(&self, schema: &Schema) -> f64 {
        if self.protocol == Protocol::SampledColumn {
            return self.epsilon;
        }
        let features = feature_count(schema).max(1);
        (self.epsilon - self.label_epsilon) / features as f64
    }

    /// The randomized response of every literal of `encoder`, in literal
    /// order (the learners' debiasing).
    pub fn literal_rr(&self, encoder: &Encoder) -> Result<Vec<LiteralRr>, DataError> {
        let schema = encoder.schema();
        let domains = Domains::new(schema)?;
        let epsilon = self.feature_epsilon(schema);
        let mut out = Vec::with_capacity(encoder.n_literals());
        for domain in domains.columns.iter().flatten() {
            let k = domain.values.len() as u32;
            for literal in 0..domain.n_literals {
                let m = domain
                    .values
                    .iter()
                    .filter(|v| v.literals.contains(&literal))
                    .count() as u32;
                out.push(LiteralRr { k, m, epsilon });
            }
        }
        if out.len() != encoder.n_literals() {
            return Err(DataError::schema(
                "local DP: the column domains do not cover the encoder's literals",
            ));
        }
        Ok(out)
    }
}

fn feature_count(schema: &Schema) -> usize {
    schema.columns.iter().filter(|c| c.is_feature()).count()
}

/// One value of a column's domain: the column's literals it lights (offsets
/// from the column's first literal) and a cell that encodes to it.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainValue {
    /// Lit literals, as offsets within the column, ascending.
    pub literals: Vec<u32>,
    /// A cell that the encoder turns into exactly these literals.
    pub cell: String,
}

/// Every value a feature column can take.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDomain {
    /// The column's literals.
    pub n_literals: u32,
    /// The values, in a fixed order (the RR's `0..k`).
    pub values: Vec<DomainValue>,
}

/// The domains of a schema's columns, and of its label.
#[derive(Debug, Clone, PartialEq)]
pub struct Domains {
    /// Per schema column (in schema order): `None` for an ignored column.
    pub columns: Vec<Option<ColumnDomain>>,
    /// The label's cells: positive then negative for a binary label; the
    /// schema's classes, in order, for a class list (sampled-column only:
    /// [`LocalDp::new`] refuses it).
    pub label: Vec<String>,
}

impl Domains {
    /// The domains of `schema`. Refuses what local DP does not cover: a
    /// regression label (the learners that debias are classifiers) and
    /// private bins (a phase that would spend central budget). A class list
    /// is read here; the all-columns protocol refuses it ([`LocalDp::new`]).
    pub fn new(schema: &Schema) -> Result<Domains, DataError> {
        schema.validate()?;
        match schema.task() {
            Task::Binary => {}
            Task::Regression { .. } => {
                return Err(DataError::schema(
                    "local DP covers binary classification only: a numeric (regression) label cannot be randomized and debiased by the learners yet",
                ));
            }
            Task::Multiclass { .. } => {}
        }
        let mut columns = Vec::with_capacity(schema.columns.len());
        for column in &schema.columns {
            columns.push(match column {
                Column::Ignore(_) => None,
                Column::Numeric(c) => {
                    if let Some(Bins::Private(_)) = c.bins {
                        return Err(DataError::column(
                            &c.name,
                            "local DP needs public bins: private bins would be chosen from the randomized values at a central cost; give bins or thresholds",
                        ));
                    }
                    let cuts = c.cut_points()?;
                    let values = (0..=cuts.len())
                        .map(|k| {
                            let lo = if k == 0 { c.min } else { cuts[k - 1] };
                            let hi = if k == cuts.len() { c.max } else { cuts[k] };
                            let literals = match c.encoding {
                                NumericEncoding::Intervals => vec![k as u32],
                                NumericEncoding::Thresholds => (k..cuts.len())
                                    .map(|j| j as u32)
                                    .collect(),
                            };
                            DomainValue {
                                literals,
                                cell: format!("{}", lo + (hi - lo) / 2.0),
                            }
                        })
                        .collect();
                    with_missing(column, values)
                }
                Column::Categorical(c) => {
                    let mut values: Vec<DomainValue> = c
                        .categories
                        .iter()
                        .enumerate()
                        .map(|(i, name)| DomainValue {
                            literals: vec![i as u32],
                            cell: name.clone(),
                        })
                        .collect();
                    if c.unknown == UnknownPolicy::Other {
                        // A cell that is neither a category nor a missing
                        // token, so the encoder reads it as `is other`.
                        let taken = |s: &str| {
                            c.categories.iter().any(|x| x == s)
                                || c.missing.iter().flatten().any(|x| x == s)
                        };
                        let mut cell = String::from("other");
                        while taken(&cell) {
                            cell.push('_');
                        }
                        values.push(DomainValue {
                            literals: vec![c.categories.len() as u32],
                            cell,
                        });
                    }
                    with_missing(column, values)
                }
                Column::Boolean(_) => with_missing(
                    column,
                    vec![
                        DomainValue {
                            literals: vec![],
                            cell: "false".into(),
                        },
                        DomainValue {
                            literals: vec![0],
                            cell: "true".into(),
                        },
                    ],
                ),
            });
        }
        Ok(Domains {
            columns,
            label: match &schema.label.classes {
                Some(classes) => classes.clone(),
                None => vec![schema.label.positive.clone(), schema.label.negative_name()],
            },
        })
    }

    /// The domain index of feature column `column`'s (schema index) cell
    /// `value`, as the encoder reads it (trimmed; clamped; missing tokens;
    /// unknown categories by the column's policy). Errors as the encoder does.
    pub fn value_index(
        &self,
        encoder: &Encoder,
        column: usize,
        value: &str,
        row: usize,
        active: &mut Vec<u32>,
    ) -> Result<u32, DataError> {
        let name = encoder.schema().columns[column].name();
        let domain = self.columns[column]
            .as_ref()
            .ok_or_else(|| DataError::cell(row, name, "an ignored column has no domain"))?;
        let Some(Some(f)) = encoder.column_role(name) else {
            return Err(DataError::cell(row, name, "not a feature column"));
        };
        active.clear();
        encoder.encode_cell(f, Some(value.trim()), row, active)?;
        let first = encoder.first_literal(f);
        let lit: Vec<u32> = active.iter().map(|&l| l - first).collect();
        domain
            .values
            .iter()
            .position(|v| v.literals == lit)
            .map(|i| i as u32)
            .ok_or_else(|| DataError::cell(row, name, "value outside the column's domain"))
    }

    /// The label's domain index of a cell: 0 positive, 1 negative; a class
    /// list's index in schema order.
    pub fn label_index(
        &self,
        encoder: &Encoder,
        value: &str,
        row: usize,
    ) -> Result<u32, DataError> {
        match encoder.schema().task() {
            Task::Multiclass { .. } => Ok(u32::from(encoder.encode_class(value.trim(), row)?)),
            _ => Ok(u32::from(!encoder.encode_label(value.trim(), row)?)),
        }
    }
}

/// `values` and, if the column declares missing tokens, `is missing` (the
/// column's last literal; the cell is its first token).
fn with_missing(column: &Column, mut values: Vec<DomainValue>) -> Option<ColumnDomain> {
    let n_values_literals = column.n_literals() as u32 - u32::from(column.missing().is_some());
    if let Some(tokens) = column.missing() {
        values.push(DomainValue {
            literals: vec![n_values_literals],
            cell: tokens[0].clone(),
        });
    }
    Some(ColumnDomain {
        n_literals: column.n_literals() as u32,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Schema {
        Schema::from_json(
            r#"{
              "label": {"column": "y", "positive": "yes", "negative": "no"},
              "columns": [
                {"name": "age", "type": "numeric", "min": 17, "max": 90, "bins": 4},
                {"name": "hours", "type": "numeric", "min": 1, "max": 99, "thresholds": [20, 40, 60], "encoding": "thresholds", "missing": ["?"]},
                {"name": "work", "type": "categorical", "categories": ["Private", "other"], "missing": ["?", ""]},
                {"name": "id", "type": "ignore"},
                {"name": "color", "type": "categorical", "categories": ["red"], "unknown": "other"},
                {"name": "shape", "type": "categorical", "categories": ["round"], "missing": ["NA"], "unknown": "missing"},
                {"name": "smoker", "type": "boolean"}
              ]
            }"#,
        )
        .unwrap()
    }

    /// Every domain value's cell encodes to exactly that value: the output
    /// of `randomize` is read back as the value it reports.
    #[test]
    fn every_cell_encodes_to_its_value() {
        let schema = schema();
        let encoder = Encoder::new(&schema).unwrap();
        let domains = Domains::new(&schema).unwrap();
        let mut active = Vec::new();
        let mut sizes = Vec::new();
        for (c, domain) in domains.columns.iter().enumerate() {
            let Some(domain) = domain else { continue };
            sizes.push(domain.values.len());
            for (i, v) in domain.values.iter().enumerate() {
                let index = domains
                    .value_index(&encoder, c, &v.cell, 1, &mut active)
                    .unwrap();
                assert_eq!(index as usize, i, "column {c}, cell {:?}", v.cell);
            }
        }
        // age 4 intervals; hours 4 intervals + missing; work 2 + missing;
        // color 1 + other; shape 1 + missing; smoker false/true.
        assert_eq!(sizes, [4, 5, 3, 2, 2, 2]);
        assert_eq!(domains.label, ["yes", "no"]);
        assert_eq!(domains.label_index(&encoder, "no", 1).unwrap(), 1);
        // Clamped and unknown values land on a domain value.
        assert_eq!(
            domains
                .value_index(&encoder, 0, "500", 1, &mut active)
                .unwrap(),
            3
        );
        assert_eq!(
            domains
                .value_index(&encoder, 4, "blue", 1, &mut active)
                .unwrap(),
            1
        );
        assert_eq!(
            domains
                .value_index(&encoder, 5, "cube", 1, &mut active)
                .unwrap(),
            1
        );
        assert!(
            domains
                .value_index(&encoder, 0, "abc", 1, &mut active)
                .is_err()
        );
        // The `other` cell avoids a category named "other".
        let color = domains.columns[4].as_ref().unwrap();
        assert_eq!(color.values[1].cell, "other");
    }

    /// Per literal: the column's k, how many values light it (thresholds
    /// are lit by several), and the column's share of epsilon.
    #[test]
    fn literal_rr_follows_the_domains_and_the_split() {
        let schema = schema();
        let encoder = Encoder::new(&schema).unwrap();
        let local = LocalDp::new(&schema, 7.0, None).unwrap();
        assert_eq!(local.label_epsilon, 1.0); // 6 features + the label
        assert_eq!(local.feature_epsilon(&schema), 1.0);
        let rr = local.literal_rr(&encoder).unwrap();
        assert_eq!(rr.len(), encoder.n_literals());
        let km: Vec<(u32, u32)> = rr.iter().map(|r| (r.k, r.m)).collect();
        assert_eq!(
            km,
            [
                (4, 1),
                (4, 1),
                (4, 1),
                (4, 1), // age intervals
                (5, 1),
                (5, 2),
                (5, 3),
                (5, 1), // hours x <= 20/40/60, missing
                (3, 1),
                (3, 1),
                (3, 1), // work
                (2, 1),
                (2, 1), // color, other
                (2, 1),
                (2, 1), // shape, missing
                (2, 1), // smoker
            ]
        );
        let given = LocalDp::new(&schema, 7.0, Some(4.0)).unwrap();
        assert_eq!(given.feature_epsilon(&schema), 0.5);
    }

    /// A declaration stored before protocols existed reads as all-columns
    /// (old datasets keep their protocol); a sampled-column one round-trips
    /// and gives the label the full epsilon; no label share is accepted.
    #[test]
    fn declarations_carry_their_protocol() {
        let old: LocalDp = serde_json::from_str(r#"{"epsilon": 4, "label_epsilon": 1}"#).unwrap();
        assert_eq!(old.protocol, Protocol::AllColumns);
        let schema = schema();
        let sampled = LocalDp::sampled_column(&schema, 2.0).unwrap();
        let json = serde_json::to_value(sampled).unwrap();
        assert_eq!(json["protocol"], "sampled-column");
        assert_eq!(json["label_epsilon"], 2.0);
        assert_eq!(serde_json::from_value::<LocalDp>(json).unwrap(), sampled);
        assert_eq!(sampled.feature_epsilon(&schema), 2.0);
        assert!(LocalDp::with_protocol(Protocol::SampledColumn, &schema, 2.0, Some(1.0)).is_err());
        for bad in [0.0, -1.0, f64::NAN] {
            assert!(LocalDp::sampled_column(&schema, bad).is_err());
        }
        assert_eq!(
            Protocol::parse("sampled-column"),
            Some(Protocol::SampledColumn)
        );
        assert_eq!(Protocol::parse("all-columns"), Some(Protocol::AllColumns));
        assert_eq!(Protocol::parse("columns"), None);
    }

    #[test]
    fn refuses_what_it_cannot_randomize() {
        let schema = schema();
        for (e, l) in [
            (0.0, None),
            (f64::NAN, None),
            (-1.0, None),
            (1.0, Some(1.0)),
            (1.0, Some(0.0)),
        ] {
            assert!(LocalDp::new(&schema, e, l).is_err(), "{e} {l:?}");
        }
        let regression = Schema::from_json(
            r#"{"label": {"column": "y", "type": "numeric", "min": 0, "max": 1},
                "columns": [{"name": "a", "type": "boolean"}]}"#,
        )
        .unwrap();
        let e = Domains::new(&regression).unwrap_err().to_string();
        assert!(e.contains("binary classification only"), "{e}");
        // A class list: refused by the all-columns protocol (its label is
        // one randomized bit; before this check `randomize` wrote empty
        // labels), taken by sampled-column with the classes as the label's
        // domain.
        let multiclass = Schema::from_json(
            r#"{"label": {"column": "y", "classes": ["a", "b", "c"]},
                "columns": [{"name": "a", "type": "boolean"}]}"#,
        )
        .unwrap();
        let e = LocalDp::new(&multiclass, 2.0, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("a label with 3 classes"), "{e}");
        assert!(LocalDp::sampled_column(&multiclass, 2.0).is_ok());
        let domains = Domains::new(&multiclass).unwrap();
        assert_eq!(domains.label, ["a", "b", "c"]);
        let encoder = Encoder::new(&multiclass).unwrap();
        assert_eq!(domains.label_index(&encoder, " c ", 1).unwrap(), 2);
        assert!(domains.label_index(&encoder, "d", 1).is_err());
        let private = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "1"},
                "columns": [{"name": "a", "type": "numeric", "min": 0, "max": 1, "bins": {"private": 4}}]}"#,
        )
        .unwrap();
        let e = Domains::new(&private).unwrap_err().to_string();
        assert!(e.contains("public bins"), "{e}");
    }
}
