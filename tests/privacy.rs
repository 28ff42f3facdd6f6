//! Nothing derived from private rows leaves except the model (SPEC §2): no
//! accuracy, margins or row values in any response or log line.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A log sink shared with the test.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Marker values that occur only in the private rows.
const MARKERS: [&str; 3] = ["73.123457", "SECRETCAT", "61.987654"];

const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
    {"name": "c", "type": "categorical", "categories": ["a", "b"], "unknown": "missing", "missing": ["?"]}
  ]
}"#;

fn csv() -> String {
    let mut s = String::from("x,c,y\n");
    for i in 0..300 {
        let x = match i {
            7 => MARKERS[0].to_owned(),
            11 => MARKERS[2].to_owned(),
            _ => ((i * 13) % 100).to_string(),
        };
        let c = if i == 5 {
            MARKERS[1]
        } else if i % 2 == 0 {
            "a"
        } else {
            "b"
        };
        s.push_str(&format!("{x},{c},{}\n", i % 3 == 0));
    }
    s.replace("true", "1").replace("false", "0")
}

fn assert_clean(what: &str, text: &str) {
    for m in MARKERS {
        assert!(
            !text.contains(m),
            "{what} contains the private value {m}: {text}"
        );
    }
    let lower = text.to_lowercase();
    for word in ["accuracy", "margin", "advantage", "training_error", "auc"] {
        assert!(
            !lower.contains(&format!("\"{word}")),
            "{what} reports {word}: {text}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_private_values_in_responses_or_logs() {
    let sink = Sink::default();
    let writer = sink.clone();
    tracing_subscriber::fmt()
        .with_env_filter("trace")
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .init();

    let s = TestServer::start().await;
    let (analyst_id, analyst) = s.key("analyst", "a").await;
    let (_, owner) = s.key("owner", "o").await;
    let up = expect_status(
        s.upload(&owner, "secret", 2.0, SCHEMA, csv().into_bytes())
            .await,
        StatusCode::CREATED,
    )
    .await;
    assert_clean("upload response", &up.to_string());
    let dataset = up["dataset"]["id"].as_str().unwrap().to_owned();
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{dataset}/grants/{analyst_id}")))
            .bearer_auth(&owner),
    )
    .await;
    let job = expect_status(
        s.post(
            &analyst,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 9}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job = s.wait_job(&analyst, job["id"].as_str().unwrap()).await;
    let model_id = job["model_id"].as_str().unwrap().to_owned();

    let mut seen: Vec<(String, Value)> = vec![("job".into(), job)];
    for path in [
        format!("/v1/datasets/{dataset}"),
        format!("/v1/datasets/{dataset}/budget"),
        format!("/v1/datasets/{dataset}/ledger"),
        "/v1/datasets".into(),
        "/v1/jobs".into(),
        "/v1/models".into(),
        format!("/v1/models/{model_id}"),
    ] {
        let body = expect_status(s.get(&analyst, &path).await, StatusCode::OK).await;
        seen.push((path, body));
    }
    let estimate = expect_status(
        s.post(
            &analyst,
            "/v1/jobs/estimate",
            &json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    seen.push(("estimate".into(), estimate));
    for (what, body) in &seen {
        assert_clean(what, &body.to_string());
    }
    let metrics = s
        .client
        .get(s.at("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_clean("metrics", &metrics);
    s.stop().await;

    let logs = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    assert!(logs.contains("job succeeded"), "the sink captured the logs");
    assert_clean("logs", &logs);
}
