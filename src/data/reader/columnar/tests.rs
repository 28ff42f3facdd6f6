use std::io::Read;
use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, BooleanArray, Float32Array, Float64Array, Int64Array, LargeStringArray, StringArray,
    UInt8Array,
};
use arrow_schema::{Field, Schema as ArrowSchema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::*;
use crate::data::{LabelMode, Schema, read_csv};

const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "+", "negative": "-"},
  "columns": [
    {"name": "age", "type": "numeric", "min": 0, "max": 100, "thresholds": [50]},
    {"name": "id", "type": "ignore"},
    {"name": "work", "type": "categorical", "categories": ["a", "b"], "missing": ["?"]},
    {"name": "flag", "type": "boolean"}
  ]
}"#;

fn encoder() -> Encoder {
    Encoder::new(&Schema::from_json(SCHEMA).unwrap()).unwrap()
}

/// A Parquet file of `columns`, `rows_per_group` rows a row group.
fn parquet(columns: Vec<(&str, ArrayRef)>, rows_per_group: usize) -> File {
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let schema = Arc::new(ArrowSchema::new(fields));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect()).unwrap();
    let mut file = tempfile::tempfile().unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows_per_group))
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut writer = ArrowWriter::try_new(file.try_clone().unwrap(), schema, Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    file
}

fn read(file: File) -> Result<Dataset, DataError> {
    read_parquet_with(
        file,
        &encoder(),
        &ReadOptions::new(LabelMode::Required),
        usize::MAX,
    )
    .map(|r| r.dataset)
}

fn strings(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

/// The four rows of the reference table, as typed columns.
fn table() -> Vec<(&'static str, ArrayRef)> {
    vec![
        (
            "flag",
            Arc::new(BooleanArray::from(vec![true, false, false, true])) as ArrayRef,
        ),
        ("y", strings(&[Some("+"), Some("-"), Some("-"), Some("+")])),
        ("work", strings(&[Some("a"), None, Some("b"), Some("?")])),
        (
            "id",
            Arc::new(Int64Array::from(vec![1, 2, 3, 4])) as ArrayRef,
        ),
        (
            "age",
            Arc::new(Float64Array::from(vec![10.0, 50.0, 99.5, 50.5])) as ArrayRef,
        ),
    ]
}

#[test]
fn typed_columns_encode_like_the_same_csv() {
    let d = read(parquet(table(), 3)).unwrap();
    let csv =
        "flag,y,work,id,age\ntrue,+,a,1,10\nfalse,-,?,2,50\nfalse,-,b,3,99.5\ntrue,+,?,4,50.5\n";
    let c = read_csv(csv.as_bytes(), &encoder(), LabelMode::Required).unwrap();
    assert_eq!(d.n_rows(), 4);
    for r in 0..4 {
        assert_eq!(
            d.features.row_active(r),
            c.features.row_active(r),
            "row {r}"
        );
    }
    // Hand-computed: literals age<=50, age>50, work==a, work==b, work missing, flag.
    assert_eq!(d.features.row_active(0), [0, 2, 5]);
    assert_eq!(d.features.row_active(1), [0, 4]);
    assert_eq!(d.features.row_active(2), [1, 3]);
    assert_eq!(d.features.row_active(3), [1, 4, 5]);
    let y = d.labels.unwrap();
    assert_eq!(
        (0..4).map(|r| y.get(r)).collect::<Vec<_>>(),
        [true, false, false, true]
    );
}

#[test]
fn integers_dictionaries_large_strings_and_float32() {
    let schema = r#"{
      "label": {"column": "y", "positive": "1", "negative": "0"},
      "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 1, "thresholds": [0.1]},
        {"name": "n", "type": "numeric", "min": 0, "max": 100, "thresholds": [7]},
        {"name": "c", "type": "categorical", "categories": ["3", "4"]},
        {"name": "d", "type": "categorical", "categories": ["u", "v"], "missing": ["?"]},
        {"name": "l", "type": "categorical", "categories": ["p", "q"]}
      ]
    }"#;
    let encoder = Encoder::new(&Schema::from_json(schema).unwrap()).unwrap();
    let mut dict = StringDictionaryBuilder::<Int32Type>::new();
    dict.append_value("v");
    dict.append_null();
    dict.append_value("u");
    let columns = vec![
        // A float32 0.1 reads as 0.1 (<= the cut 0.1), not 0.10000000149.
        (
            "x",
            Arc::new(Float32Array::from(vec![0.1f32, 0.2, 0.0])) as ArrayRef,
        ),
        (
            "n",
            Arc::new(UInt8Array::from(vec![7u8, 8, 200])) as ArrayRef,
        ),
        ("c", Arc::new(Int64Array::from(vec![3, 4, 3])) as ArrayRef),
        ("d", Arc::new(dict.finish()) as ArrayRef),
        (
            "l",
            Arc::new(LargeStringArray::from(vec!["q", "p", "q"])) as ArrayRef,
        ),
        ("y", Arc::new(Int64Array::from(vec![1, 0, 0])) as ArrayRef),
    ];
    let d = read_parquet_with(
        parquet(columns, 2),
        &encoder,
        &ReadOptions::new(LabelMode::Required),
        usize::MAX,
    )
    .unwrap()
    .dataset;
    // Literals: x<=0.1 0, x>0.1 1, n<=7 2, n>7 3, c==3 4, c==4 5, d==u 6,
    // d==v 7, d missing 8, l==p 9, l==q 10.
    assert_eq!(d.features.row_active(0), [0, 2, 4, 7, 10]);
    assert_eq!(d.features.row_active(1), [1, 3, 5, 8, 9]);
    assert_eq!(d.features.row_active(2), [0, 3, 4, 6, 10]);
    assert_eq!(d.labels.unwrap().count_ones(), 1);
}

#[test]
fn wrong_types_name_the_column() {
    let mut columns = table();
    columns[4].1 = strings(&[Some("1"), Some("2"), Some("3"), Some("4")]);
    columns[0].1 = Arc::new(Int64Array::from(vec![1, 0, 0, 1]));
    let e = read(parquet(columns, 10)).unwrap_err().to_string();
    assert_eq!(
        e,
        r#"Parquet columns: column "flag" is Int64: a boolean column must be a boolean; column "age" is Utf8: a numeric column must be a float or an integer"#
    );
    // An ignored column may be of any type.
    let mut columns = table();
    columns[3].1 = Arc::new(BooleanArray::from(vec![true, true, false, false]));
    assert_eq!(read(parquet(columns, 10)).unwrap().n_rows(), 4);
}

#[test]
fn nulls_are_missing_or_an_error_naming_column_and_row() {
    // `work` declares a missing token: its null (row 2) is missing (above).
    let mut columns = table();
    columns[4].1 = Arc::new(Float64Array::from(vec![
        Some(1.0),
        Some(2.0),
        None,
        Some(4.0),
    ]));
    let e = read(parquet(columns, 2)).unwrap_err().to_string();
    assert_eq!(
        e,
        r#"row 3, column "age": null value but the column declares no missing tokens"#
    );
    let mut columns = table();
    columns[1].1 = strings(&[Some("+"), Some("-"), Some("-"), None]);
    let e = read(parquet(columns, 2)).unwrap_err().to_string();
    assert_eq!(e, r#"row 4, column "y": empty label"#);
}

#[test]
fn row_errors_across_row_groups_skip_and_never_show_the_value() {
    let n = 20_000;
    let bad = [3usize, 9_000, 19_999];
    let work: Vec<Option<&str>> = (1..=n)
        .map(|r| {
            Some(if bad.contains(&r) {
                "Zeta"
            } else if r % 2 == 0 {
                "a"
            } else {
                "b"
            })
        })
        .collect();
    let columns = vec![
        (
            "age",
            Arc::new(Float64Array::from(
                (1..=n).map(|r| (r % 90) as f64).collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
        (
            "id",
            Arc::new(Int64Array::from((1..=n as i64).collect::<Vec<_>>())) as ArrayRef,
        ),
        ("work", strings(&work)),
        (
            "flag",
            Arc::new(BooleanArray::from(
                (1..=n).map(|r| r % 3 == 0).collect::<Vec<_>>(),
            )) as ArrayRef,
        ),
        (
            "y",
            strings(
                &(1..=n)
                    .map(|r| Some(if r % 7 == 0 { "+" } else { "-" }))
                    .collect::<Vec<_>>(),
            ),
        ),
    ];
    let file = parquet(columns, 3_000);
    let mut options = ReadOptions::new(LabelMode::Required);
    options.on_bad_row = OnBadRow::Skip;
    options.max_errors = 10;
    let report =
        read_parquet_with(file.try_clone().unwrap(), &encoder(), &options, usize::MAX).unwrap();
    assert_eq!(report.dataset.n_rows(), n - 3);
    assert_eq!(report.skipped, 3);
    let errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errors,
        bad.map(|r| format!(r#"row {r}, column "work": unknown category (not in the schema)"#))
    );
    // The kept rows in order: labels and the flag literal (5).
    let kept: Vec<usize> = (1..=n).filter(|r| !bad.contains(r)).collect();
    let labels = report.dataset.labels.as_ref().unwrap();
    for (i, &r) in kept.iter().enumerate() {
        assert_eq!(labels.get(i), r % 7 == 0, "row {r}");
        assert_eq!(
            report.dataset.features.row_active(i).contains(&5),
            r % 3 == 0
        );
    }
    // Refusing: the first two bad rows.
    options.on_bad_row = OnBadRow::Refuse;
    options.max_errors = 2;
    let mut file = file;
    file.seek(SeekFrom::Start(0)).unwrap();
    let e = read_parquet_with(file.try_clone().unwrap(), &encoder(), &options, usize::MAX)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("invalid rows (the first 2): row 3, ") && e.contains("row 9000,"),
        "{e}"
    );
    assert!(!e.contains("Zeta"));
    // The row limit is checked from the footer.
    let e = read_parquet_with(file, &encoder(), &options, n - 1).unwrap_err();
    assert!(
        matches!(e, DataError::TooManyRows { max } if max == n - 1),
        "{e}"
    );
}

#[test]
fn missing_extra_and_duplicate_columns() {
    let mut columns = table();
    columns.remove(3);
    let e = read(parquet(columns, 10)).unwrap_err().to_string();
    assert_eq!(
        e,
        r#"Parquet columns: columns declared in the schema but not in the file: "id""#
    );
    let mut columns = table();
    columns.push((
        "zip",
        Arc::new(Int64Array::from(vec![1, 2, 3, 4])) as ArrayRef,
    ));
    let e = read(parquet(columns, 10)).unwrap_err().to_string();
    assert!(e.contains(r#"columns not in the schema: "zip""#), "{e}");
}

#[test]
fn empty_and_corrupt_files() {
    let columns: Vec<(&str, ArrayRef)> = table()
        .into_iter()
        .map(|(n, a)| (n, a.slice(0, 0)))
        .collect();
    assert!(matches!(read(parquet(columns, 10)), Err(DataError::NoRows)));
    // Not Parquet at all, and an empty file.
    let mut file = tempfile::tempfile().unwrap();
    file.write_all(b"age,id\n1,2\n").unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    let e = read(file).unwrap_err().to_string();
    assert!(e.starts_with("not a readable Parquet file: "), "{e}");
    let e = read(tempfile::tempfile().unwrap()).unwrap_err().to_string();
    assert!(e.starts_with("not a readable Parquet file: "), "{e}");
    // A good file with its pages overwritten: the footer reads, the data
    // does not, and the error says where without quoting the bytes.
    let mut file = parquet(table(), 10);
    let len = file.metadata().unwrap().len();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).unwrap();
    assert_eq!(bytes.len() as u64, len);
    for b in &mut bytes[4..len as usize / 3] {
        *b = 0xAB;
    }
    let mut corrupt = tempfile::tempfile().unwrap();
    corrupt.write_all(&bytes).unwrap();
    corrupt.seek(SeekFrom::Start(0)).unwrap();
    let e = read(corrupt).unwrap_err().to_string();
    assert!(e.starts_with("not a readable Parquet file: "), "{e}");
}

#[test]
fn arrow_ipc_files_and_csv_text() {
    let columns = table();
    let fields: Vec<Field> = columns
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    let schema = Arc::new(ArrowSchema::new(fields));
    let batch =
        RecordBatch::try_new(schema.clone(), columns.into_iter().map(|c| c.1).collect()).unwrap();
    let mut file = tempfile::tempfile().unwrap();
    let mut writer =
        arrow_ipc::writer::FileWriter::try_new(file.try_clone().unwrap(), &schema).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    let mut head = [0u8; 6];
    file.read_exact(&mut head).unwrap();
    assert_eq!(Format::sniff(&head), Format::ArrowIpc);
    file.seek(SeekFrom::Start(0)).unwrap();
    let d = read_arrow_ipc_with(
        file,
        &encoder(),
        &ReadOptions::new(LabelMode::Required),
        usize::MAX,
    )
    .unwrap()
    .dataset;
    assert_eq!(d.features.row_active(3), [1, 4, 5]);
    // The CSV view of the Parquet file, for commands without a schema.
    let mut text = String::new();
    to_csv(parquet(table(), 3), Format::Parquet)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(
        text,
        "flag,y,work,id,age\ntrue,+,a,1,10\nfalse,-,,2,50\nfalse,-,b,3,99.5\ntrue,+,?,4,50.5\n"
    );
}

#[test]
fn formats_from_magic_bytes_media_types_and_names() {
    assert_eq!(Format::sniff(b"PAR1\x15\x04"), Format::Parquet);
    assert_eq!(Format::sniff(b"age,y\n"), Format::Csv);
    assert_eq!(Format::sniff(b""), Format::Csv);
    assert_eq!(
        Format::from_media_type("application/vnd.apache.parquet"),
        Some(Format::Parquet)
    );
    assert_eq!(
        Format::from_media_type("text/csv; charset=utf-8"),
        Some(Format::Csv)
    );
    assert_eq!(Format::from_media_type("application/octet-stream"), None);
    assert_eq!(
        Format::of_path(Path::new("no/such/file.parquet")).unwrap(),
        Format::Parquet
    );
}

/// Training rows of a schema with a privacy unit are bounded per unit as the
/// CSV reader bounds them (`super::bound_units`): units 1..=10 with u rows
/// each keep min(u, 3) whole rows, from string or integer identifiers; a
/// null identifier is a row error that does not show a value; a float
/// identifier column is refused by name. Prediction reads ignore the unit.
#[test]
fn a_schema_with_a_privacy_unit_is_bounded_per_unit() {
    let categories: Vec<String> = (1..=10).map(|u| format!("\"{u}\"")).collect();
    let schema = format!(
        r#"{{
      "label": {{"column": "y", "positive": "+", "negative": "-"}},
      "privacy_unit": {{"column": "person", "max_rows": 3}},
      "columns": [{{"name": "tag", "type": "categorical", "categories": [{}]}}]
    }}"#,
        categories.join(", ")
    );
    let encoder = Encoder::new(&Schema::from_json(&schema).unwrap()).unwrap();
    // Unit u has u rows; its rows carry tag u, so the kept rows per unit can
    // be counted from the literals (tag u is literal u - 1).
    let (mut ids, mut tags, mut ys) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..10 {
        for u in 1..=10i64 {
            if round < u {
                ids.push(u);
                tags.push(u.to_string());
                ys.push(if round == 0 { "+" } else { "-" });
            }
        }
    }
    let tag_array = || Arc::new(StringArray::from(tags.clone())) as ArrayRef;
    let y_array = || Arc::new(StringArray::from(ys.clone())) as ArrayRef;
    let as_text: Vec<String> = ids.iter().map(|u| format!("person {u}")).collect();
    let id_columns: [ArrayRef; 2] = [
        Arc::new(StringArray::from(as_text)),
        Arc::new(Int64Array::from(ids.clone())),
    ];
    let training = ReadOptions::new(LabelMode::Required);
    for id_column in id_columns {
        let file = parquet(
            vec![
                ("person", id_column),
                ("tag", tag_array()),
                ("y", y_array()),
            ],
            16,
        );
        let report = read_parquet_with(file, &encoder, &training, usize::MAX).unwrap();
        let kept: usize = (1..=10).map(|u: usize| u.min(3)).sum();
        assert_eq!(report.dataset.n_rows(), kept);
        assert_eq!(report.unit_dropped, 55 - kept);
        assert_eq!(report.skipped, 0);
        let mut per_unit = [0usize; 10];
        for r in 0..report.dataset.n_rows() {
            let active = report.dataset.features.row_active(r);
            assert_eq!(active.len(), 1);
            per_unit[active[0] as usize] += 1;
        }
        let expected: Vec<usize> = (1..=10).map(|u: usize| u.min(3)).collect();
        assert_eq!(per_unit.to_vec(), expected);
    }
    // A null identifier: a row error naming the column, no value shown.
    let file = parquet(
        vec![
            ("person", strings(&[Some("secret-7"), None])),
            ("tag", strings(&[Some("1"), Some("2")])),
            ("y", strings(&[Some("+"), Some("-")])),
        ],
        2,
    );
    let e = read_parquet_with(file, &encoder, &training, usize::MAX)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("row 2") && e.contains("\"person\"") && e.contains("identifier is empty"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
    // A float identifier column is refused by name before any row is read.
    let file = parquet(
        vec![
            (
                "person",
                Arc::new(Float64Array::from(vec![1.0])) as ArrayRef,
            ),
            ("tag", strings(&[Some("1")])),
            ("y", strings(&[Some("+")])),
        ],
        1,
    );
    let e = read_parquet_with(file, &encoder, &training, usize::MAX)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("\"person\"") && e.contains("unit identifier must be a string or an integer"),
        "{e}"
    );
    // Prediction rows: the unit column may be there, unread.
    let file = parquet(
        vec![
            ("person", strings(&[Some("p1"), Some("p1")])),
            ("tag", strings(&[Some("1"), Some("1")])),
        ],
        2,
    );
    let rows = read_parquet_with(
        file,
        &encoder,
        &ReadOptions::new(LabelMode::Optional),
        usize::MAX,
    )
    .unwrap();
    assert_eq!(rows.dataset.n_rows(), 2);
}
