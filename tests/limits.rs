//! Resource limits: rate limiting per key, a huge streamed upload refused
//! early, prediction batches over the limit, slow clients cut by the header
//! and request timeouts, and the memory bound of an accepted upload.

mod common;

use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use common::{SMALL_SCHEMA, TestServer, expect_status};
use privboost::api::RateLimit;
use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_over_its_rate_gets_429_and_other_keys_do_not() {
    let s = TestServer::start_with(|c| {
        c.rate_limit = Some(RateLimit {
            per_second: NonZeroU32::new(1).unwrap(),
            burst: NonZeroU32::new(5).unwrap(),
        });
    })
    .await;
    let (_, a) = s.key("analyst", "a").await;
    let (_, b) = s.key("analyst", "b").await;
    // The burst passes (a sustained 1/s could add one more at most).
    for _ in 0..5 {
        expect_status(s.get(&a, "/v1/me").await, StatusCode::OK).await;
    }
    let mut limited = None;
    for _ in 0..3 {
        let r = s.get(&a, "/v1/me").await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(r);
            break;
        }
    }
    let r = limited.expect("the sixth to eighth request within a second is refused");
    let retry_after: u64 = r
        .headers()
        .get("retry-after")
        .expect("Retry-After header")
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After in whole seconds");
    assert!((1..=2).contains(&retry_after), "Retry-After {retry_after}");
    let p = expect_status(r, StatusCode::TOO_MANY_REQUESTS).await;
    assert_eq!(p["type"], "/problems/rate-limited");
    assert_eq!(p["status"], 429);
    assert_eq!(p["retry_after"], retry_after);
    // Another key has its own bucket.
    expect_status(s.get(&b, "/v1/me").await, StatusCode::OK).await;
    // Unauthenticated probes are not limited by a key's bucket.
    for _ in 0..10 {
        let r = s.client.get(s.at("/healthz")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    // After Retry-After, the key is served again.
    tokio::time::sleep(Duration::from_secs(retry_after)).await;
    expect_status(s.get(&a, "/v1/me").await, StatusCode::OK).await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_can_be_turned_off() {
    let s = TestServer::start_with(|c| c.rate_limit = None).await;
    let (_, a) = s.key("analyst", "a").await;
    for _ in 0..300 {
        expect_status(s.get(&a, "/v1/me").await, StatusCode::OK).await;
    }
    s.stop().await;
}

/// The head of a chunked multipart upload to `/v1/datasets`, up to and
/// including the `data` part's headers; the CSV follows as chunks.
fn upload_head(addr: &str, key: &str) -> (Vec<u8>, String) {
    upload_head_for(addr, key, &Table::SMALL)
}

/// A table to stream: its schema and the CSV header line.
struct Table<'a> {
    schema: &'a str,
    header: &'a str,
}

impl Table<'static> {
    /// [`SMALL_SCHEMA`]: 6 literals.
    const SMALL: Table<'static> = Table {
        schema: SMALL_SCHEMA,
        header: "x,c,y",
    };
}

/// [`upload_head`] for `table`.
fn upload_head_for(addr: &str, key: &str, table: &Table) -> (Vec<u8>, String) {
    let boundary = "privboost-limits-test";
    let mut head = format!(
        "POST /v1/datasets HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    let mut preamble = String::new();
    for (name, value) in [("name", "huge"), ("epsilon", "1"), ("schema", table.schema)] {
        preamble.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    preamble.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"d.csv\"\r\n\
         Content-Type: text/csv\r\n\r\n{}\n",
        table.header
    ));
    head.extend_from_slice(&chunk(preamble.as_bytes()));
    (head, boundary.to_owned())
}

/// One chunk of a chunked body.
fn chunk(data: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    out
}

/// Read a response head (status and headers) from `stream`, waiting at
/// most `limit`; `None` if the connection closed or nothing came.
async fn read_head(stream: &mut tokio::net::tcp::OwnedReadHalf, limit: Duration) -> Option<String> {
    let mut buf = Vec::new();
    let deadline = Instant::now() + limit;
    let mut byte = [0u8; 1024];
    while Instant::now() < deadline {
        let left = deadline - Instant::now();
        match tokio::time::timeout(left, stream.read(&mut byte)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => buf.extend_from_slice(&byte[..n]),
        }
        if buf.windows(4).any(|w| w == b"\r\n\r\n") {
            return Some(String::from_utf8_lossy(&buf).into_owned());
        }
    }
    (!buf.is_empty()).then(|| String::from_utf8_lossy(&buf).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_streamed_upload_is_refused_early_and_stores_nothing() {
    const LIMIT: usize = 1 << 20;
    const OFFERED: u64 = 1 << 30;
    let s = TestServer::start_with(|c| c.max_upload_bytes = LIMIT).await;
    let (_, owner) = s.key("owner", "o").await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let (head, _) = upload_head(&addr, &owner);
    // 1 GiB of valid rows, generated chunk by chunk: nothing is built in
    // memory beyond one 64 KiB chunk, on either side.
    let writer = tokio::spawn(async move {
        let line = b"42,a,1\n";
        let rows: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * 9362)
            .collect();
        let piece = chunk(&rows);
        let mut sent: u64 = 0;
        if write.write_all(&head).await.is_err() {
            return sent;
        }
        while sent < OFFERED {
            if write.write_all(&piece).await.is_err() {
                break;
            }
            sent += rows.len() as u64;
        }
        sent
    });
    let started = Instant::now();
    let response = read_head(&mut read, Duration::from_secs(30))
        .await
        .expect("a response before the body ends");
    let elapsed = started.elapsed();
    assert!(
        response.starts_with("HTTP/1.1 413"),
        "expected 413, got: {response}"
    );
    assert!(
        response
            .to_ascii_lowercase()
            .contains("content-type: application/problem+json"),
        "{response}"
    );
    // The server answers and hangs up; the writer stops on the broken pipe.
    drop(read);
    let sent = tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .expect("the server stops reading the body")
        .unwrap();
    eprintln!("huge upload: refused after {elapsed:?}, {sent} bytes of CSV written by the client");
    assert!(
        sent < 64 << 20,
        "the server read {sent} bytes of a {OFFERED}-byte body with a {LIMIT}-byte limit"
    );
    assert!(
        elapsed < Duration::from_secs(10),
        "refused after {elapsed:?}"
    );
    let list = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert!(list["items"].as_array().unwrap().is_empty(), "{list}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prediction_batches_over_the_limit_are_refused_on_every_route() {
    let s = TestServer::start_with(|c| c.max_predict_rows = 20).await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_small(&owner, 10.0, 200).await;
    let job = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 3}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let done = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let model = done["model_id"].as_str().unwrap();
    expect_status(
        s.client
            .put(s.at("/v1/deployments/lim"))
            .bearer_auth(&owner)
            .json(&json!({"model_id": model}))
            .send()
            .await
            .unwrap(),
        StatusCode::CREATED,
    )
    .await;
    let rows = |n: usize| -> Vec<serde_json::Value> {
        (0..n).map(|i| json!({"x": i % 100, "c": "a"})).collect()
    };
    let infer = |n: usize| {
        json!({"inputs": [
            {"name": "x", "shape": [n], "datatype": "FP64", "data": (0..n).map(|i| i % 100).collect::<Vec<_>>()},
            {"name": "c", "shape": [n], "datatype": "BYTES", "data": vec!["a"; n]},
        ]})
    };
    for (path, over, at) in [
        (
            format!("/v1/models/{model}/predict"),
            json!({"rows": rows(21)}),
            json!({"rows": rows(20)}),
        ),
        (
            "/v1/deployments/lim/predict".to_owned(),
            json!({"rows": rows(21)}),
            json!({"rows": rows(20)}),
        ),
        ("/v2/models/lim/infer".to_owned(), infer(21), infer(20)),
    ] {
        let r = s.post(&owner, &path, &over).await;
        assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE, "{path}");
        let p: serde_json::Value = r.json().await.unwrap();
        if path.starts_with("/v2") {
            // The Open Inference Protocol's error shape.
            assert!(
                p["error"].as_str().unwrap().contains("at most 20 rows"),
                "{path}: {p}"
            );
        } else {
            assert_eq!(p["type"], "/problems/too-large", "{path}: {p}");
        }
        expect_status(s.post(&owner, &path, &at).await, StatusCode::OK).await;
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_headers_is_disconnected() {
    let s = TestServer::start_with(|c| c.header_read_timeout = Duration::from_secs(1)).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let stream = TcpStream::connect(&addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let started = Instant::now();
    // One header byte every 100 ms, for up to 20 s: without a header read
    // timeout this would hold the connection all that time.
    let writer = tokio::spawn(async move {
        if write.write_all(b"GET /healthz HTTP/1.1\r\n").await.is_err() {
            return;
        }
        for _ in 0..200 {
            if write.write_all(b"x").await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    // The server closes the connection (possibly after a 408 head).
    let mut buf = [0u8; 512];
    let closed = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the connection stayed open for 10 s");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(5),
        "closed after {elapsed:?}"
    );
    writer.abort();
    // The server still serves others.
    let r = s.client.get(s.at("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    s.stop().await;
}

/// Send the head of a request whose body then trickles one byte a second;
/// returns the response head.
async fn slow_body(addr: &str, key: &str, path: &str, content_type: &str) -> String {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: {content_type}\r\nTransfer-Encoding: chunked\r\n\r\n"
    );
    let writer = tokio::spawn(async move {
        if write.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        for _ in 0..60 {
            if write.write_all(&chunk(b" ")).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    let response = read_head(&mut read, Duration::from_secs(15))
        .await
        .unwrap_or_default();
    writer.abort();
    response
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_trickling_its_body_is_cut_by_the_request_timeout_on_every_body_route() {
    let s = TestServer::start_with(|c| c.request_timeout = Duration::from_secs(2)).await;
    let (_, owner) = s.key("owner", "o").await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let json_routes = [
        "/v1/keys",
        "/v1/jobs",
        "/v1/jobs/estimate",
        "/v1/models/m/predict",
        "/v1/deployments/d/predict",
        "/v2/models/d/infer",
    ];
    let mut checks = Vec::new();
    for path in json_routes {
        checks.push((path, "application/json"));
    }
    checks.push(("/v1/datasets", "multipart/form-data; boundary=b"));
    let mut tasks = Vec::new();
    for (path, ct) in checks {
        let addr = addr.clone();
        let owner = owner.clone();
        tasks.push(tokio::spawn(async move {
            let started = Instant::now();
            let head = slow_body(&addr, &owner, path, ct).await;
            (path, head, started.elapsed())
        }));
    }
    for t in tasks {
        let (path, head, elapsed) = t.await.unwrap();
        assert!(head.starts_with("HTTP/1.1 408"), "{path}: {head:?}");
        // Problem documents on /v1, the protocol's `{"error"}` JSON on /v2.
        let ct = if path.starts_with("/v2") {
            "content-type: application/json"
        } else {
            "content-type: application/problem+json"
        };
        assert!(head.to_ascii_lowercase().contains(ct), "{path}: {head}");
        assert!(
            elapsed < Duration::from_secs(6),
            "{path}: answered after {elapsed:?}"
        );
    }
    s.stop().await;
}

/// Stream `rows` copies of `line` as the CSV of a chunked upload to
/// `addr`; returns the response head and the CSV bytes the client managed
/// to write before the server answered.
async fn stream_rows(addr: &str, key: &str, line: &'static [u8], rows: u64) -> (String, u64) {
    stream_table_rows(addr, key, &Table::SMALL, line, rows).await
}

/// [`stream_rows`] for `table`.
async fn stream_table_rows(
    addr: &str,
    key: &str,
    table: &Table<'_>,
    line: &'static [u8],
    rows: u64,
) -> (String, u64) {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let (head, boundary) = upload_head_for(addr, key, table);
    let writer = tokio::spawn(async move {
        let per_chunk = 8192u64;
        let piece: Vec<u8> = line
            .iter()
            .copied()
            .cycle()
            .take(line.len() * per_chunk as usize)
            .collect();
        let mut sent = 0u64;
        if write.write_all(&head).await.is_err() {
            return (sent, write);
        }
        let mut left = rows;
        while left > 0 {
            let n = left.min(per_chunk);
            let data = &piece[..line.len() * n as usize];
            if write.write_all(&chunk(data)).await.is_err() {
                return (sent, write);
            }
            sent += data.len() as u64;
            left -= n;
        }
        let tail = format!("\r\n--{boundary}--\r\n");
        let _ = write.write_all(&chunk(tail.as_bytes())).await;
        let _ = write.write_all(b"0\r\n\r\n").await;
        // Keep the write half open: a half-closed connection makes hyper
        // drop the request in flight.
        (sent, write)
    });
    let response = read_head(&mut read, Duration::from_secs(60))
        .await
        .unwrap_or_default();
    drop(read);
    let (sent, _write) = tokio::time::timeout(Duration::from_secs(30), writer)
        .await
        .expect("the writer ends")
        .unwrap();
    (response, sent)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_row_limit_stops_an_upload_while_it_streams() {
    let s = TestServer::start_with(|c| c.max_upload_rows = 1000).await;
    let (_, owner) = s.key("owner", "o").await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    // Exactly the limit is accepted.
    let (head, _) = stream_rows(&addr, &owner, b"42,a,1\n", 1000).await;
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
    // 150 million rows (1 GiB) offered under the default 1 GiB byte limit:
    // refused as soon as the line count passes the row limit, long before
    // the bytes run out (memory grows with rows, so rows must stop it).
    let started = Instant::now();
    let (head, sent) = stream_rows(&addr, &owner, b"42,a,1\n", 150_000_000).await;
    eprintln!(
        "row limit: refused after {:?}, {sent} bytes written by the client",
        started.elapsed()
    );
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(sent < 64 << 20, "{sent} bytes were read");
    let list = expect_status(s.get(&owner, "/v1/datasets").await, StatusCode::OK).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    s.stop().await;
}

/// Peak resident memory of a process (Linux), in bytes.
fn vm_hwm(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status");
    kb * 1024
}

/// 16 categorical columns of 8 categories: 128 literals, so that the bit
/// matrix, not the reader's fixed buffers, is most of an upload's memory.
const WIDE_SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "c0", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c1", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c2", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c3", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c4", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c5", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c6", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c7", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c8", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c9", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c10", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c11", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c12", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c13", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c14", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]},
    {"name": "c15", "type": "categorical", "categories": ["a","b","c","d","e","f","g","h"]}
  ]
}"#;

/// The memory bound of an accepted upload (issue 13: at most 2 x the bit
/// matrix), scaled down: the server process (the real binary, so that its
/// peak memory is its own) accepts 1.5 million rows of 128 literals (51 MB
/// of CSV, 24 MB of bits) streamed in chunks, and its peak resident memory
/// grows by at most 2 copies of the bit matrix (n x (d + 1) bits) plus
/// 16 MiB for the reader's buffers and the allocator. Storing the rows as
/// one blob (before migration 0010) grew by about 4.4 copies and fails
/// this. `.ci/upload_memory.py` measures the same for 200 MB to 900 MB
/// uploads (docs/reliability.md).
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_upload_stays_within_its_memory_bound() {
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_privboost"))
        .args(["serve", "--bind", &addr, "--workers", "1"])
        .arg("--data-dir")
        .arg(dir.path())
        .env("PRIVBOOST_ADMIN_KEY", common::ADMIN_KEY)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while client
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, owner) = common::create_key(
        &client,
        &format!("http://{addr}"),
        common::ADMIN_KEY,
        "owner",
        "m",
    )
    .await;
    let before = vm_hwm(child.id());
    const ROWS: u64 = 1_500_000;
    let wide = Table {
        schema: WIDE_SCHEMA,
        header: "c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,c10,c11,c12,c13,c14,c15,y",
    };
    let line = b"a,b,c,d,e,f,g,h,a,b,c,d,e,f,g,h,1\n";
    let (head, sent) = stream_table_rows(&addr, &owner, &wide, line, ROWS).await;
    let after = vm_hwm(child.id());
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
    let list: serde_json::Value = client
        .get(format!("http://{addr}/v1/datasets"))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let d = list["items"][0]["n_literals"].as_u64().unwrap();
    assert_eq!(list["items"][0]["n_rows"].as_u64().unwrap(), ROWS);
    let bits = ROWS * (d + 1) / 8;
    let growth = after.saturating_sub(before);
    eprintln!(
        "accepted upload: {sent} bytes of CSV, {ROWS} rows x {d} literals = {bits} bytes of bits; \
         peak RSS grew {growth} bytes ({:.1} x the bits, {:.2} x the text)",
        growth as f64 / bits as f64,
        growth as f64 / sent as f64
    );
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        growth <= 2 * bits + (16 << 20),
        "peak memory grew by {growth} bytes for {bits} bytes of bits"
    );
}
