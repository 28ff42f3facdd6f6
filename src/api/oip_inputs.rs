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
use serde_json::Value;

use super::error::{ApiError, FieldError};
use crate::data::{Cell, CellSeed, ColumnError, DataError, Encoder, LiteralRows};

/// One input tensor (the JSON part of the request).
#[derive(Debug, Deserialize)]
pub(super) struct InferInput<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    shape: Shape,
    #[serde(borrow)]
    datatype: Cow<'a, str>,
    #[serde(default, borrow)]
    data: Option<Cells<'a>>,
    #[serde(default)]
    parameters: Option<InputParameters>,
}

/// A tensor's shape, its first two dimensions kept inline: a request's
/// tensors are `[n]` or `[n, 1]`, and a single-row request has one tensor
/// per column, so an allocation per tensor is a cost every prediction pays.
#[derive(Default)]
struct Shape {
    inline: [i64; 2],
    len: usize,
    /// Dimensions past the second (rare: `[n, 1, 1]` is read as `[n]`, and
    /// any other such shape is refused with the shape in the message).
    rest: Vec<i64>,
}

impl Shape {
    fn dims(&self) -> impl Iterator<Item = i64> + '_ {
        self.inline[..self.len.min(2)]
            .iter()
            .chain(&self.rest)
            .copied()
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.dims()).finish()
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Dims;
        impl<'de> serde::de::Visitor<'de> for Dims {
            type Value = Shape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a sequence of integers")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Shape, A::Error> {
                let mut shape = Shape::default();
                while let Some(d) = seq.next_element::<i64>()? {
                    match shape.inline.get_mut(shape.len) {
                        Some(slot) => *slot = d,
                        None => shape.rest.push(d),
                    }
                    shape.len += 1;
                }
                Ok(shape)
            }
        }
        deserializer.deserialize_seq(Dims)
    }
}

/// An input's parameters: only the binary extension's size is read (any
/// other key is ignored; a size that is not a whole number counts as
/// absent), without building a map per input.
#[derive(Debug, Deserialize)]
struct InputParameters {
    #[serde(default)]
    binary_data_size: Option<Value>,
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

/// A fixed-width datatype of the binary extension (little-endian).
#[derive(Debug, Clone, Copy)]
enum Fixed {
    Fp64,
    Fp32,
    Int64,
    Int32,
    Int16,
    Int8,
    Uint64,
    Uint32,
    Uint16,
    Uint8,
    Bool,
}

impl Fixed {
    fn parse(datatype: &str) -> Option<Fixed> {
        Some(match datatype {
            "FP64" => Fixed::Fp64,
            "FP32" => Fixed::Fp32,
            "INT64" => Fixed::Int64,
            "INT32" => Fixed::Int32,
            "INT16" => Fixed::Int16,
            "INT8" => Fixed::Int8,
            "UINT64" => Fixed::Uint64,
            "UINT32" => Fixed::Uint32,
            "UINT16" => Fixed::Uint16,
            "UINT8" => Fixed::Uint8,
            "BOOL" => Fixed::Bool,
            _ => return None,
        })
    }

    fn width(self) -> usize {
        match self {
            Fixed::Fp64 | Fixed::Int64 | Fixed::Uint64 => 8,
            Fixed::Fp32 | Fixed::Int32 | Fixed::Uint32 => 4,
            Fixed::Int16 | Fixed::Uint16 => 2,
            Fixed::Int8 | Fixed::Uint8 | Fixed::Bool => 1,
        }
    }

    /// One element (exactly `width` bytes, little-endian).
    fn scalar(self, b: &[u8]) -> Scalar {
        // Invariant: the caller passes `width` bytes (chunks_exact).
        match self {
            Fixed::Fp64 => Scalar::Float(f64::from_le_bytes(le(b))),
            Fixed::Fp32 => Scalar::Float(f32::from_le_bytes(le(b)).into()),
            Fixed::Int64 => Scalar::Int(i64::from_le_bytes(le(b))),
            Fixed::Int32 => Scalar::Int(i32::from_le_bytes(le(b)).into()),
            Fixed::Int16 => Scalar::Int(i16::from_le_bytes(le(b)).into()),
            Fixed::Int8 => Scalar::Int((b[0] as i8).into()),
            Fixed::Uint64 => Scalar::Uint(u64::from_le_bytes(le(b))),
            Fixed::Uint32 => Scalar::Uint(u32::from_le_bytes(le(b)).into()),
            Fixed::Uint16 => Scalar::Uint(u16::from_le_bytes(le(b)).into()),
            Fixed::Uint8 => Scalar::Uint(b[0].into()),
            Fixed::Bool => Scalar::Bool(b[0] != 0),
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Fixed::Fp64 | Fixed::Fp32)
    }
}

/// One fixed-width element's value.
#[derive(Debug, Clone, Copy)]
enum Scalar {
    Float(f64),
    Int(i64),
    Uint(u64),
    Bool(bool),
}

impl Scalar {
    /// The cell JSON would give: an integer as an integer (matched as its
    /// text by a categorical column), a non-finite float as null.
    fn cell(self) -> Cell<'static> {
        match self {
            Scalar::Float(x) => Cell::from_f64(x),
            Scalar::Int(i) => Cell::Number(i.into()),
            Scalar::Uint(u) => Cell::Number(u.into()),
            Scalar::Bool(b) => Cell::Bool(b),
        }
    }

    /// The value a numeric column reads of that cell (`Number::as_f64`), if
    /// it is a number.
    fn number(self) -> Option<f64> {
        match self {
            Scalar::Float(x) => Some(x),
            Scalar::Int(i) => Some(i as f64),
            Scalar::Uint(u) => Some(u as f64),
            Scalar::Bool(_) => None,
        }
    }
}

/// `N` bytes as an array (the caller's chunk has exactly `N`).
fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    b.try_into().expect("a chunk of the datatype's width")
}

/// The elements of a checked BYTES tensor: each a 4-byte little-endian
/// length, then that many bytes.
#[derive(Debug, Clone)]
struct TextElements<'a>(&'a [u8]);

impl<'a> Iterator for TextElements<'a> {
    type Item = &'a [u8];

    /// The hot loop of a binary batch: the two reads of [`split_element`]
    /// without its error (the tensor was checked by it already); going
    /// through it cost 15% of a 10,000-row request (5.5 -> 4.6 M rows/s).
    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, tail) = self.0.split_first_chunk::<4>()?;
        let (element, rest) = tail.split_at_checked(u32::from_le_bytes(*len) as usize)?;
        self.0 = rest;
        Some(element)
    }
}

/// A BYTES element and the bytes after it.
type Element<'a> = (&'a [u8], &'a [u8]);

/// The first BYTES element of `bytes` and what follows it; `None` at the
/// end, an error when the element is cut short.
fn split_element(bytes: &[u8]) -> Option<Result<Element<'_>, &'static str>> {
    if bytes.is_empty() {
        return None;
    }
    let cut = "a BYTES element is cut short";
    Some(
        bytes
            .split_first_chunk::<4>()
            .and_then(|(len, tail)| tail.split_at_checked(u32::from_le_bytes(*len) as usize))
            .ok_or(cut),
    )
}

/// One tensor's elements, checked against its shape (`count` of them).
enum Decoded<'a> {
    /// JSON `data`.
    Cells(Vec<Cell<'a>>),
    /// Binary BYTES: every element whole and valid UTF-8.
    Texts(TextElements<'a>),
    /// Binary fixed-width elements, `count x width` bytes.
    Fixed(Fixed, &'a [u8]),
}

/// Check `count` binary elements of `datatype`; nothing is copied.
fn decode_binary<'a>(datatype: &str, bytes: &'a [u8], count: usize) -> Result<Decoded<'a>, String> {
    if datatype == "BYTES" {
        // A buffer of ASCII bytes (lengths under 128 and ASCII text, the
        // usual case) holds only valid UTF-8; else each element is checked.
        let ascii = bytes.is_ascii();
        let mut found = 0usize;
        let mut rest = bytes;
        while let Some(next) = split_element(rest) {
            let (s, tail) = next?;
            if !ascii && std::str::from_utf8(s).is_err() {
                return Err("a BYTES element is not UTF-8".into());
            }
            found += 1;
            rest = tail;
        }
        if found != count {
            return Err(format!("{found} BYTES elements for shape of {count}"));
        }
        return Ok(Decoded::Texts(TextElements(bytes)));
    }
    let fixed = Fixed::parse(datatype).ok_or_else(|| format!("unsupported datatype {datatype}"))?;
    if Some(bytes.len()) != count.checked_mul(fixed.width()) {
        return Err(format!(
            "{} bytes for {count} {datatype} elements",
            bytes.len()
        ));
    }
    Ok(Decoded::Fixed(fixed, bytes))
}

/// One feature column of a request, in the form its codec reads fastest.
enum Column<'a> {
    Cells(Vec<Cell<'a>>),
    /// Floats, or numbers for a column that reads numbers as values.
    Floats(Vec<f64>),
    /// Text elements not yet encoded (a cursor: rows go in order).
    Texts(TextElements<'a>),
}

impl<'a> Column<'a> {
    fn new(decoded: Decoded<'a>, encoder: &Encoder, f: usize) -> Column<'a> {
        match decoded {
            Decoded::Cells(cells) => Column::Cells(cells),
            Decoded::Texts(texts) => Column::Texts(texts),
            Decoded::Fixed(fixed, bytes) => {
                let elements = bytes.chunks_exact(fixed.width());
                if fixed.is_float() || encoder.reads_numbers(f) {
                    // (A BOOL tensor has no numbers: cells below.)
                    if let Some(xs) = elements.clone().map(|b| fixed.scalar(b).number()).collect() {
                        return Column::Floats(xs);
                    }
                }
                Column::Cells(elements.map(|b| fixed.scalar(b).cell()).collect())
            }
        }
    }
}

/// A request's rows as columns: each schema feature's values (one per row),
/// in the encoder's feature order.
pub(super) struct Columns<'a> {
    n: usize,
    /// Rows already encoded ([`Columns::encode_next`] goes in order).
    done: usize,
    features: Vec<Column<'a>>,
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
        let mut features: Vec<Option<Column<'a>>> = Vec::new();
        features.resize_with(names.len(), || None);
        let mut others: Vec<Cow<'a, str>> = Vec::new();
        for (k, input) in inputs.into_iter().enumerate() {
            let field = InputField(k);
            let count = input
                .shape
                .dims()
                .try_fold(1usize, |acc, d| {
                    usize::try_from(d).ok().map(|d| acc.saturating_mul(d))
                })
                .ok_or_else(|| bad(format!("{field}: negative dimension in shape")))?;
            let rows = input.shape.dims().next().unwrap_or(0).max(0) as usize;
            if input.shape.len == 0 || count != rows {
                return Err(bad(format!(
                    "{field}: shape must be [n] or [n, 1] (one value per row)"
                )));
            }
            if *n.get_or_insert(rows) != rows {
                return Err(bad(format!("{field}: every input must have the same rows")));
            }
            // A repeated name: a feature's slot is already filled (it is
            // filled below, before the next input), any other name is in
            // `others` (a few at most: the label and ignored columns).
            let role = encoder.column_role(&input.name);
            let repeated = match role {
                Some(Some(f)) => features[f].is_some(),
                _ => others.contains(&input.name),
            };
            if repeated {
                return Err(bad(format!(
                    "{field}: a second input named {:?}",
                    input.name
                )));
            }
            let size = input
                .parameters
                .as_ref()
                .and_then(|p| p.binary_data_size.as_ref())
                .and_then(Value::as_u64);
            let decoded = match (size, input.data) {
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
                    Decoded::Cells(cells)
                }
                _ => {
                    return Err(bad(format!(
                        "{field}: give either data or parameters.binary_data_size"
                    )));
                }
            };
            match role {
                Some(Some(f)) => features[f] = Some(Column::new(decoded, encoder, f)),
                // An ignored column, or the label: skipped.
                Some(None) => others.push(input.name),
                None if input.name == encoder.schema().label_column() => others.push(input.name),
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
            .map(|(column, name)| {
                column.ok_or_else(|| {
                    unencodable(DataError::cell(1, name, "column is missing from the row"))
                })
            })
            .collect::<Result<Vec<_>, _>>();
        // No rows: refused as "no rows" by the caller, whatever is missing.
        let features = if n == 0 { Vec::new() } else { features? };
        Ok(Columns {
            n,
            done: 0,
            features,
        })
    }

    /// Number of rows.
    pub(super) fn n_rows(&self) -> usize {
        self.n
    }

    /// Encode the next `count` rows into `out` (reset for them), a column
    /// at a time: the literals and the first error (smallest row, then
    /// first column) that encoding each row in turn gives.
    pub(super) fn encode_next(
        &mut self,
        encoder: &Encoder,
        count: usize,
        out: &mut LiteralRows,
    ) -> Result<(), ColumnError> {
        let rows = self.done..self.done + count;
        assert!(rows.end <= self.n, "rows past the request's");
        out.reset(encoder, count);
        let mut first: Option<ColumnError> = None;
        for (f, column) in self.features.iter_mut().enumerate() {
            let result = match column {
                Column::Cells(cells) => {
                    encoder.encode_cells(f, rows.start, &cells[rows.clone()], out)
                }
                Column::Floats(xs) => {
                    encoder.encode_floats(f, rows.start, xs[rows.clone()].iter().copied(), out)
                }
                Column::Texts(texts) => {
                    encoder.encode_texts(f, rows.start, texts.by_ref().take(count), out)
                }
            };
            if let Err(e) = result {
                first = Some(ColumnError::earliest(first, e));
            }
        }
        self.done = rows.end;
        first.map_or(Ok(()), Err)
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

    /// Each row's literals as the encoder's names (rows encoded in two
    /// runs, as a batch larger than one run is).
    fn rows(mut columns: Columns<'_>, e: &Encoder) -> Result<Vec<Vec<String>>, DataError> {
        let n = columns.n_rows();
        let mut out = LiteralRows::default();
        let mut rows = Vec::new();
        for count in [n / 2, n - n / 2] {
            columns
                .encode_next(e, count, &mut out)
                .map_err(|c| c.error)?;
            rows.extend((0..count).map(|i| {
                out.row(i)
                    .iter()
                    .map(|&l| e.literals()[l as usize].name.clone())
                    .collect()
            }));
        }
        Ok(rows)
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
            rows(columns, &e).unwrap(),
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
            rows(columns, &e).unwrap(),
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
            assert_eq!(rows(columns, &e).unwrap()[0][0], expect, "{datatype}");
        }
        let nan = f64::NAN.to_le_bytes();
        let json = r#"[{"name": "c", "datatype": "BYTES", "shape": [1], "data": ["a"]},
                       {"name": "x", "datatype": "FP64", "shape": [1], "parameters": {"binary_data_size": 8}}]"#;
        let columns = Columns::new(inputs(json), &nan, &e).unwrap();
        let err = rows(columns, &e).unwrap_err();
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
        let err = rows(columns, &e).unwrap_err();
        assert!(err.to_string().contains("expected a number"), "{err}");
    }
}
