//! The inputs of an Open Inference Protocol request, decoded column by
//! column: one tensor per schema column, with one element per row, read
//! straight from the body into [`Cell`]s (JSON `data`, flat or nested, or
//! the binary extension's bytes), borrowing its strings. No JSON tree and no
//! map per row is built, so a 10,000-row batch costs one pass over its bytes
//! and one encoding per cell (docs/performance.md, "Batch prediction over
//! the Open Inference Protocol").

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer};
use serde_json::{Map, Number, Value};

use super::error::{ApiError, FieldError};
use crate::data::{Cell, CellSeed, DataError, Encoder};

/// One input tensor (the JSON part of the request).
#[derive(Debug, Deserialize)]
pub(super) struct InferInput<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    shape: Vec<i64>,
    datatype: String,
    #[serde(default, borrow)]
    data: Option<Cells<'a>>,
    #[serde(default)]
    parameters: Option<Map<String, Value>>,
}

/// A tensor's JSON `data`, flattened in row-major order (the protocol
/// allows nested or flat arrays; a lone scalar is one element).
#[derive(Debug, Default)]
pub(super) struct Cells<'a>(Vec<Cell<'a>>);

impl<'de: 'a, 'a> Deserialize<'de> for Cells<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut cells = Vec::new();
        CellSeed {
            out: &mut cells,
            flatten: true,
        }
        .deserialize(deserializer)?;
        Ok(Cells(cells))
    }
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::BadRequest(message.into())
}

/// Decode `count` elements of `datatype` from little-endian bytes (BYTES:
/// each a 4-byte length, then that many bytes of UTF-8).
fn decode_binary<'a>(
    datatype: &str,
    bytes: &'a [u8],
    count: usize,
) -> Result<Vec<Cell<'a>>, String> {
    fn fixed<const N: usize>(
        bytes: &[u8],
        count: usize,
        datatype: &str,
    ) -> Result<Vec<[u8; N]>, String> {
        if bytes.len() != N * count {
            return Err(format!(
                "{} bytes for {count} {datatype} elements",
                bytes.len()
            ));
        }
        Ok(bytes
            .chunks_exact(N)
            // Invariant: chunks_exact(N) gives N bytes.
            .map(|c| c.try_into().expect("N bytes"))
            .collect())
    }
    let number = |n: Number| Cell::Number(n);
    Ok(match datatype {
        "FP64" => fixed::<8>(bytes, count, datatype)?
            .into_iter()
            .map(|b| Cell::from_f64(f64::from_le_bytes(b)))
            .collect(),
        "FP32" => fixed::<4>(bytes, count, datatype)?
            .into_iter()
            .map(|b| Cell::from_f64(f64::from(f32::from_le_bytes(b))))
            .collect(),
        "INT64" => fixed::<8>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(i64::from_le_bytes(b).into()))
            .collect(),
        "INT32" => fixed::<4>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(i32::from_le_bytes(b).into()))
            .collect(),
        "INT16" => fixed::<2>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(i16::from_le_bytes(b).into()))
            .collect(),
        "INT8" => fixed::<1>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number((b[0] as i8).into()))
            .collect(),
        "UINT64" => fixed::<8>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(u64::from_le_bytes(b).into()))
            .collect(),
        "UINT32" => fixed::<4>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(u32::from_le_bytes(b).into()))
            .collect(),
        "UINT16" => fixed::<2>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(u16::from_le_bytes(b).into()))
            .collect(),
        "UINT8" => fixed::<1>(bytes, count, datatype)?
            .into_iter()
            .map(|b| number(b[0].into()))
            .collect(),
        "BOOL" => fixed::<1>(bytes, count, datatype)?
            .into_iter()
            .map(|b| Cell::Bool(b[0] != 0))
            .collect(),
        "BYTES" => {
            // `count` comes from the request's shape: reserve no more than
            // the bytes can hold (4 or more each), so a huge shape over a
            // short tensor is refused below, not an allocation failure.
            let mut out = Vec::with_capacity(count.min(bytes.len() / 4));
            let mut rest = bytes;
            while !rest.is_empty() {
                let (len, tail) = rest
                    .split_first_chunk::<4>()
                    .ok_or("a BYTES element is cut short")?;
                let len = u32::from_le_bytes(*len) as usize;
                let s = tail.get(..len).ok_or("a BYTES element is cut short")?;
                let s = std::str::from_utf8(s).map_err(|_| "a BYTES element is not UTF-8")?;
                out.push(Cell::Text(Cow::Borrowed(s)));
                rest = &tail[len..];
            }
            if out.len() != count {
                return Err(format!("{} BYTES elements for shape of {count}", out.len()));
            }
            out
        }
        other => return Err(format!("unsupported datatype {other}")),
    })
}

/// A request's rows as columns: each schema feature's cells (one per row),
/// in the encoder's feature order.
pub(super) struct Columns<'a> {
    n: usize,
    features: Vec<Vec<Cell<'a>>>,
}

impl<'a> Columns<'a> {
    /// The columns of `inputs` (binary tensors read from `binary`, in input
    /// order), checked against `encoder`'s schema: one tensor per feature
    /// column, each with one element per row (shape `[n]` or `[n, 1]`); the
    /// label and ignored columns may be present and are skipped; an unknown
    /// or repeated name is refused.
    pub(super) fn new(
        inputs: Vec<InferInput<'a>>,
        binary: &'a [u8],
        encoder: &Encoder,
    ) -> Result<Columns<'a>, ApiError> {
        let mut offset = 0usize;
        let mut n: Option<usize> = None;
        let names = encoder.feature_names();
        let mut features: Vec<Option<Vec<Cell<'a>>>> = vec![None; names.len()];
        let mut seen = std::collections::HashSet::new();
        for (k, input) in inputs.into_iter().enumerate() {
            let field = InputField(k);
            let count = input
                .shape
                .iter()
                .try_fold(1usize, |acc, d| {
                    usize::try_from(*d).ok().map(|d| acc.saturating_mul(d))
                })
                .ok_or_else(|| bad(format!("{field}: negative dimension in shape")))?;
            let rows = input.shape.first().copied().unwrap_or(0).max(0) as usize;
            if input.shape.is_empty() || count != rows {
                return Err(bad(format!(
                    "{field}: shape must be [n] or [n, 1] (one value per row)"
                )));
            }
            if *n.get_or_insert(rows) != rows {
                return Err(bad(format!("{field}: every input must have the same rows")));
            }
            if !seen.insert(input.name.clone()) {
                return Err(bad(format!(
                    "{field}: a second input named {:?}",
                    input.name
                )));
            }
            let size = input
                .parameters
                .as_ref()
                .and_then(|p| p.get("binary_data_size"))
                .and_then(Value::as_u64);
            let cells = match (size, input.data) {
                (Some(size), None) => {
                    let size = usize::try_from(size).unwrap_or(usize::MAX);
                    let bytes = binary
                        .get(offset..offset.saturating_add(size))
                        .ok_or_else(|| bad(format!("{field}: binary_data_size past the body")))?;
                    offset += size;
                    decode_binary(&input.datatype, bytes, count)
                        .map_err(|e| bad(format!("{field}: {e}")))?
                }
                (None, Some(Cells(cells))) => {
                    if cells.len() != count {
                        return Err(bad(format!(
                            "{field}: {} values for shape {:?}",
                            cells.len(),
                            input.shape
                        )));
                    }
                    cells
                }
                _ => {
                    return Err(bad(format!(
                        "{field}: give either data or parameters.binary_data_size"
                    )));
                }
            };
            match encoder.column_role(&input.name) {
                Some(Some(f)) => features[f] = Some(cells),
                // An ignored column, or the label: skipped.
                Some(None) => {}
                None if input.name == encoder.schema().label_column() => {}
                None => {
                    return Err(unencodable(DataError::row(
                        1,
                        format!("unknown column {:?} (not in the schema)", input.name),
                    )));
                }
            }
        }
        if offset != binary.len() {
            return Err(bad(
                "the binary part is longer than the inputs' binary_data_size",
            ));
        }
        let n = n.unwrap_or(0);
        let features = features
            .into_iter()
            .zip(names)
            .map(|(cells, name)| {
                cells.ok_or_else(|| {
                    unencodable(DataError::cell(1, name, "column is missing from the row"))
                })
            })
            .collect::<Result<Vec<_>, _>>();
        // No rows: refused as "no rows" by the caller, whatever is missing.
        let features = if n == 0 { Vec::new() } else { features? };
        Ok(Columns { n, features })
    }

    /// Number of rows.
    pub(super) fn n_rows(&self) -> usize {
        self.n
    }

    /// Encode row `i` (0-based) into `active` (cleared first): the same
    /// literals as the row keyed by column name.
    pub(super) fn encode_row(
        &self,
        encoder: &Encoder,
        i: usize,
        active: &mut Vec<u32>,
    ) -> Result<(), DataError> {
        active.clear();
        for (f, cells) in self.features.iter().enumerate() {
            encoder.encode_value(f, &cells[i], i + 1, active)?;
        }
        Ok(())
    }
}

/// `inputs[k]` in messages (formatted only when one is written).
#[derive(Clone, Copy)]
struct InputField(usize);

impl std::fmt::Display for InputField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "inputs[{}]", self.0)
    }
}

/// A request whose values cannot be encoded (422, as on `/v1`).
fn unencodable(e: DataError) -> ApiError {
    ApiError::Validation(vec![FieldError::new("rows[0]", e.to_string())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Schema;

    fn encoder() -> Encoder {
        let schema = Schema::from_json(
            r#"{"label": {"column": "y", "positive": "1", "negative": "0"},
                "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 10, "bins": 5},
                            {"name": "id", "type": "ignore"},
                            {"name": "c", "type": "categorical", "categories": ["a", "b"]}]}"#,
        )
        .unwrap();
        Encoder::new(&schema).unwrap()
    }

    fn inputs(json: &str) -> Vec<InferInput<'_>> {
        serde_json::from_str(json).unwrap()
    }

    fn message(e: ApiError) -> String {
        match e {
            ApiError::BadRequest(m) => m,
            ApiError::Validation(errors) => format!("{}: {}", errors[0].field, errors[0].message),
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Each row's literals as the encoder's names.
    fn rows(columns: &Columns<'_>, e: &Encoder) -> Vec<Vec<String>> {
        let mut active = Vec::new();
        (0..columns.n_rows())
            .map(|i| {
                columns.encode_row(e, i, &mut active).unwrap();
                active
                    .iter()
                    .map(|&l| e.literals()[l as usize].name.clone())
                    .collect()
            })
            .collect()
    }

    /// Flat, nested (`[n, 1]`) and escaped JSON data, the label and an
    /// ignored column skipped, give the rows' literals in schema order.
    #[test]
    fn json_tensors_become_rows() {
        let e = encoder();
        let json = r#"[
            {"name": "c", "datatype": "BYTES", "shape": [3], "data": ["a", "\u0062", " a "]},
            {"name": "x", "datatype": "FP64", "shape": [3, 1], "data": [[1], [9.5], [20]]},
            {"name": "y", "datatype": "BYTES", "shape": [3], "data": ["1", "0", "1"]},
            {"name": "id", "datatype": "INT64", "shape": [3], "data": [1, 2, 3]}
        ]"#;
        let columns = Columns::new(inputs(json), &[], &e).unwrap();
        assert_eq!(
            rows(&columns, &e),
            [
                ["x <= 2", "c == a"],
                ["x > 8", "c == b"],
                ["x > 8", "c == a"]
            ]
        );
    }

    /// The binary extension: tensors read in input order from the bytes
    /// after the JSON, each datatype little-endian, BYTES length-prefixed;
    /// a non-finite float is null (refused here: no missing tokens).
    #[test]
    fn binary_tensors_become_rows() {
        let e = encoder();
        let mut bytes = Vec::new();
        for s in ["b", "a"] {
            bytes.extend_from_slice(&(s.len() as u32).to_le_bytes());
            bytes.extend_from_slice(s.as_bytes());
        }
        for x in [3.0f32, 7.0] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        let json = r#"[
            {"name": "c", "datatype": "BYTES", "shape": [2], "parameters": {"binary_data_size": 10}},
            {"name": "x", "datatype": "FP32", "shape": [2], "parameters": {"binary_data_size": 8}}
        ]"#;
        let columns = Columns::new(inputs(json), &bytes, &e).unwrap();
        assert_eq!(
            rows(&columns, &e),
            [["2 < x <= 4", "c == b"], ["6 < x <= 8", "c == a"]]
        );
        for (datatype, element, expect) in [
            ("INT8", vec![3u8], "2 < x <= 4"),
            ("UINT16", 9u16.to_le_bytes().to_vec(), "x > 8"),
            ("INT32", (-4i32).to_le_bytes().to_vec(), "x <= 2"),
            ("UINT64", 5u64.to_le_bytes().to_vec(), "4 < x <= 6"),
            ("FP64", 1e308f64.to_le_bytes().to_vec(), "x > 8"),
        ] {
            let json = format!(
                r#"[{{"name": "c", "datatype": "BYTES", "shape": [1], "data": ["a"]}},
                    {{"name": "x", "datatype": "{datatype}", "shape": [1],
                      "parameters": {{"binary_data_size": {}}}}}]"#,
                element.len()
            );
            let columns = Columns::new(inputs(&json), &element, &e).unwrap();
            assert_eq!(rows(&columns, &e)[0][0], expect, "{datatype}");
        }
        let nan = f64::NAN.to_le_bytes();
        let json = r#"[{"name": "c", "datatype": "BYTES", "shape": [1], "data": ["a"]},
                       {"name": "x", "datatype": "FP64", "shape": [1], "parameters": {"binary_data_size": 8}}]"#;
        let columns = Columns::new(inputs(json), &nan, &e).unwrap();
        let err = columns.encode_row(&e, 0, &mut Vec::new()).unwrap_err();
        assert!(
            err.to_string().contains("declares no missing tokens"),
            "{err}"
        );
    }

    /// Every malformed request is refused with what is wrong and where.
    #[test]
    fn malformed_inputs_are_refused() {
        let e = encoder();
        let x = r#"{"name": "x", "datatype": "FP64", "shape": [1], "data": [1]}"#;
        let c = r#"{"name": "c", "datatype": "BYTES", "shape": [1], "data": ["a"]}"#;
        let cases = [
            (
                format!("[{x}, {c}, {x}]"),
                "inputs[2]: a second input named \"x\"",
            ),
            (
                format!(
                    r#"[{x}, {c}, {{"name": "z", "datatype": "FP64", "shape": [1], "data": [1]}}]"#
                ),
                "rows[0]: row 1: unknown column \"z\" (not in the schema)",
            ),
            (
                format!("[{x}]"),
                "rows[0]: row 1, column \"c\": column is missing from the row",
            ),
            (
                format!(
                    r#"[{x}, {{"name": "c", "datatype": "BYTES", "shape": [2], "data": ["a", "b"]}}]"#
                ),
                "inputs[1]: every input must have the same rows",
            ),
            (
                format!(
                    r#"[{x}, {{"name": "c", "datatype": "BYTES", "shape": [1, 2], "data": ["a", "b"]}}]"#
                ),
                "inputs[1]: shape must be [n] or [n, 1] (one value per row)",
            ),
            (
                format!(
                    r#"[{x}, {{"name": "c", "datatype": "BYTES", "shape": [2], "data": [["a", "b", "c"]]}}]"#
                ),
                "inputs[1]: every input must have the same rows",
            ),
            (
                r#"[{"name": "c", "datatype": "BYTES", "shape": [2], "data": [["a"], "b", "c"]}]"#
                    .to_string(),
                "inputs[0]: 3 values for shape [2]",
            ),
            (
                format!(r#"[{x}, {{"name": "c", "datatype": "BYTES", "shape": [1]}}]"#),
                "inputs[1]: give either data or parameters.binary_data_size",
            ),
            (
                format!(
                    r#"[{x}, {{"name": "c", "datatype": "BYTES", "shape": [1], "parameters": {{"binary_data_size": 9}}}}]"#
                ),
                "inputs[1]: binary_data_size past the body",
            ),
        ];
        for (json, expected) in cases {
            let err = Columns::new(inputs(&json), &[], &e).err().expect(&json);
            assert_eq!(message(err), expected, "{json}");
        }
        let bin = |datatype: &str, bytes: &[u8]| {
            let json = format!(
                r#"[{c}, {{"name": "x", "datatype": "{datatype}", "shape": [1],
                          "parameters": {{"binary_data_size": {}}}}}]"#,
                bytes.len()
            );
            message(
                Columns::new(inputs(&json), bytes, &e)
                    .err()
                    .expect(datatype),
            )
        };
        assert_eq!(
            bin("FP64", &[0; 4]),
            "inputs[1]: 4 bytes for 1 FP64 elements"
        );
        assert_eq!(
            bin("BYTES", &[9, 0, 0, 0, b'a']),
            "inputs[1]: a BYTES element is cut short"
        );
        assert_eq!(
            bin("BYTES", &[1, 0, 0, 0, 0xff]),
            "inputs[1]: a BYTES element is not UTF-8"
        );
        assert_eq!(bin("FP16", &[0; 2]), "inputs[1]: unsupported datatype FP16");
        // A shape of 10^15 rows over one short BYTES element: refused, with
        // no room reserved for the shape.
        let json = r#"[{"name": "c", "datatype": "BYTES", "shape": [1000000000000000],
                        "parameters": {"binary_data_size": 5}}]"#;
        let err = Columns::new(inputs(json), &[1, 0, 0, 0, b'a'], &e)
            .err()
            .unwrap();
        assert_eq!(
            message(err),
            "inputs[0]: 1 BYTES elements for shape of 1000000000000000"
        );
        // A binary part longer than the inputs say.
        let json = format!(r#"[{x}, {c}]"#);
        let err = Columns::new(inputs(&json), &[1], &e).err().unwrap();
        assert_eq!(
            message(err),
            "the binary part is longer than the inputs' binary_data_size"
        );
        // An object in the data is one element, refused by the encoder.
        let json = format!(
            r#"[{x}, {{"name": "c", "datatype": "BYTES", "shape": [1], "data": [{{"a": 1}}]}}]"#
        );
        let columns = Columns::new(inputs(&json), &[], &e).unwrap();
        let err = columns.encode_row(&e, 0, &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("expected a number"), "{err}");
    }
}
