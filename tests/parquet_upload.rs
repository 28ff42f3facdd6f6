//! `POST /v1/datasets` with Parquet (issue 29): the format sniffed from the
//! first bytes or told by the part's Content-Type, typed columns checked
//! against the schema, the row limit read from the footer, row errors by
//! row (no lines) and never by value.

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, Int64Array, StringArray};
use common::parquet::parquet_bytes;
use common::{SMALL_SCHEMA, TestServer, expect_status};
use reqwest::StatusCode;

/// `n` rows of [`SMALL_SCHEMA`] (as `common::small_csv`) as Parquet, with
/// `c` replaced by `c` if given; row `bad` (1-based) gets category "Zeta".
fn small_parquet(n: usize, c: Option<ArrayRef>, bad: Option<usize>) -> Vec<u8> {
    let x: Vec<i64> = (0..n).map(|i| ((i * 37) % 100) as i64).collect();
    let cat: Vec<&str> = (0..n)
        .map(|i| match bad {
            Some(b) if b == i + 1 => "Zeta",
            _ if i % 3 == 0 => "a",
            _ => "b",
        })
        .collect();
    let y: Vec<i64> = (0..n).map(|i| i64::from(x[i] > 50 || i % 3 == 0)).collect();
    parquet_bytes(
        vec![
            ("x", Arc::new(Int64Array::from(x))),
            ("c", c.unwrap_or_else(|| Arc::new(StringArray::from(cat)))),
            ("y", Arc::new(Int64Array::from(y))),
        ],
        None,
    )
}

async fn upload_typed(
    s: &TestServer,
    key: &str,
    bytes: Vec<u8>,
    content_type: &str,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = reqwest::multipart::Form::new()
        .text("name", "pq")
        .text("epsilon", "1")
        .text("schema", SMALL_SCHEMA);
    for (k, v) in extra {
        form = form.text(k.to_string(), v.to_string());
    }
    let part = reqwest::multipart::Part::bytes(bytes)
        .file_name("data")
        .mime_str(content_type)
        .unwrap();
    s.client
        .post(s.at("/v1/datasets"))
        .bearer_auth(key)
        .multipart(form.part("data", part))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_parquet_upload_is_sniffed_checked_and_stored() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    // Sniffed from `PAR1` (the helper names the part data.csv, no type).
    let r = s
        .upload(
            &owner,
            "pq",
            1.0,
            SMALL_SCHEMA,
            small_parquet(500, None, None),
        )
        .await;
    let body = expect_status(r, StatusCode::CREATED).await;
    assert_eq!(body["accepted_rows"], 500, "{body}");
    assert_eq!(body["dataset"]["n_rows"], 500, "{body}");
    // Told by the Content-Type.
    let r = upload_typed(
        &s,
        &owner,
        small_parquet(300, None, None),
        "application/vnd.apache.parquet",
        &[],
    )
    .await;
    let body = expect_status(r, StatusCode::CREATED).await;
    assert_eq!(body["accepted_rows"], 300, "{body}");
    // CSV bytes declared as Parquet: refused as not Parquet, nothing stored.
    let r = upload_typed(
        &s,
        &owner,
        common::small_csv(10).into_bytes(),
        "application/vnd.apache.parquet",
        &[],
    )
    .await;
    let body = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body.to_string().contains(
            "the Parquet file was refused, nothing was stored: not a readable Parquet file"
        ),
        "{body}"
    );
    // A float column for the categorical `c`: refused, naming the column.
    let floats: ArrayRef = Arc::new(Float64Array::from(vec![1.0; 20]));
    let r = s
        .upload(
            &owner,
            "pq",
            1.0,
            SMALL_SCHEMA,
            small_parquet(20, Some(floats), None),
        )
        .await;
    let body = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body.to_string().contains(
            r#"Parquet columns: column \"c\" is Float64: a categorical column must be a string or an integer"#
        ),
        "{body}"
    );
    // A bad row: refused by row and column, or skipped on request; never
    // the value.
    let r = s
        .upload(
            &owner,
            "pq",
            1.0,
            SMALL_SCHEMA,
            small_parquet(50, None, Some(17)),
        )
        .await;
    let body = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    let text = body.to_string();
    assert!(
        text.contains(r#"row 17, column \"c\": unknown category"#) && !text.contains("Zeta"),
        "{body}"
    );
    let r = upload_typed(
        &s,
        &owner,
        small_parquet(50, None, Some(17)),
        "application/octet-stream",
        &[("skip_bad_rows", "true")],
    )
    .await;
    let body = expect_status(r, StatusCode::CREATED).await;
    assert_eq!(
        (
            body["accepted_rows"].as_u64(),
            body["rejected_rows"].as_u64()
        ),
        (Some(49), Some(1))
    );
    assert_eq!(
        body["rejected"][0],
        r#"row 17, column "c": unknown category (not in the schema)"#
    );
    // Three uploads were stored.
    let list = common::get_json(&s.client, &s.at("/v1/datasets"), &owner).await;
    assert_eq!(list["items"].as_array().map(Vec::len), Some(3), "{list}");
}

#[tokio::test]
async fn the_row_limit_is_read_from_the_footer() {
    let s = TestServer::start_with(|c| c.max_upload_rows = 100).await;
    let (_, owner) = s.key("owner", "o").await;
    let r = s
        .upload(
            &owner,
            "pq",
            1.0,
            SMALL_SCHEMA,
            small_parquet(101, None, None),
        )
        .await;
    let body = expect_status(r, StatusCode::PAYLOAD_TOO_LARGE).await;
    assert!(body.to_string().contains("more than 100 rows"), "{body}");
    let r = s
        .upload(
            &owner,
            "pq",
            1.0,
            SMALL_SCHEMA,
            small_parquet(100, None, None),
        )
        .await;
    expect_status(r, StatusCode::CREATED).await;
}

/// A schema with a privacy unit over Parquet (issue 28): integer
/// identifiers, units of 1..10 rows bounded to 4 at upload as for CSV; the
/// owner is told how many rows the bound dropped.
#[tokio::test]
async fn a_parquet_upload_with_a_privacy_unit_is_bounded_per_unit() {
    const UNIT_SCHEMA: &str = r#"{
      "label": {"column": "y", "positive": "1", "negative": "0"},
      "columns": [{"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4}],
      "privacy_unit": {"column": "patient_id", "max_rows": 4}
    }"#;
    let size = |u: i64| 1 + u % 10;
    let (mut ids, mut xs, mut ys) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..10 {
        for u in 0..60i64 {
            if round < size(u) {
                let x = (u * 37 + round * 11) % 100;
                ids.push(u);
                xs.push(x);
                ys.push(i64::from(x > 50));
            }
        }
    }
    let total = ids.len();
    let kept: i64 = (0..60).map(|u| size(u).min(4)).sum();
    let bytes = parquet_bytes(
        vec![
            ("patient_id", Arc::new(Int64Array::from(ids))),
            ("x", Arc::new(Int64Array::from(xs))),
            ("y", Arc::new(Int64Array::from(ys))),
        ],
        None,
    );

    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let r = s.upload(&owner, "visits", 2.0, UNIT_SCHEMA, bytes).await;
    let body = expect_status(r, StatusCode::CREATED).await;
    assert_eq!(body["accepted_rows"], kept, "{body}");
    assert_eq!(body["unit_dropped_rows"], total as i64 - kept, "{body}");
    assert_eq!(body["dataset"]["n_rows"], kept, "{body}");
}
