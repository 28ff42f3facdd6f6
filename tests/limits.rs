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
    let boundary = "privboost-limits-test";
    let mut head = format!(
        "POST /v1/datasets HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    let mut preamble = String::new();
    for (name, value) in [("name", "huge"), ("epsilon", "1"), ("schema", SMALL_SCHEMA)] {
        preamble.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    preamble.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"data\"; filename=\"d.csv\"\r\n\
         Content-Type: text/csv\r\n\r\nx,c,y\n"
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
        let p = expect_status(
            s.post(&owner, &path, &over).await,
            StatusCode::PAYLOAD_TOO_LARGE,
        )
        .await;
        assert_eq!(p["type"], "/problems/too-large", "{path}: {p}");
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
        assert!(
            head.to_ascii_lowercase()
                .contains("content-type: application/problem+json"),
            "{path}: {head}"
        );
        assert!(
            elapsed < Duration::from_secs(6),
            "{path}: answered after {elapsed:?}"
        );
    }
    s.stop().await;
}
