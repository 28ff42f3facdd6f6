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
        .bearer_auth(&s.admin)
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

/// Whether an RFC 3339 time carries a fraction of a second.
fn has_fraction(v: &serde_json::Value) -> bool {
    v.as_str().is_some_and(|t| t.contains('.'))
}

/// Issue 16: an analyst saw job and model times to the nanosecond and
/// could poll `rounds_done` to time each round. Now a non-owner sees whole
/// seconds and progress in quarters; the dataset's owner keeps precision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analysts_see_coarse_times_and_owners_precise_ones() {
    let s = common::TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let (analyst_id, analyst) = s.key("analyst", "a").await;
    let dataset = s.upload_mushroom(&owner, 5.0).await;
    s.expect(
        reqwest::StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{dataset}/grants/{analyst_id}")))
            .bearer_auth(&owner),
    )
    .await;
    let tau = 15;
    let job = common::expect_status(
        s.post(
            &analyst,
            "/v1/jobs",
            &serde_json::json!({"dataset_id": dataset, "epsilon": 1.0, "tau": tau}),
        )
        .await,
        reqwest::StatusCode::ACCEPTED,
    )
    .await;
    assert!(!has_fraction(&job["created_at"]), "{job}");
    let id = job["id"].as_str().unwrap().to_owned();
    // While it runs, the analyst's progress moves in steps of ceil(tau/4).
    loop {
        let j = common::expect_status(
            s.get(&analyst, &format!("/v1/jobs/{id}")).await,
            reqwest::StatusCode::OK,
        )
        .await;
        if j["state"] != "running" && j["state"] != "queued" {
            break;
        }
        let rounds = j["rounds_done"].as_u64().unwrap();
        assert_eq!(rounds % 4, 0, "{j}");
        assert_eq!(j["progress"]["rounds_done"], rounds);
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let done = s.wait_job(&analyst, &id).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    assert_eq!(done["rounds_done"], tau, "final progress is exact");
    let by_owner = s.wait_job(&owner, &id).await;
    let fields = ["created_at", "started_at", "finished_at"];
    for f in fields {
        assert!(done[f].is_string(), "{f}: {done}");
        assert!(!has_fraction(&done[f]), "analyst sees {f} = {}", done[f]);
        // The same second, truncated.
        let precise = by_owner[f].as_str().unwrap();
        assert!(precise.starts_with(&done[f].as_str().unwrap()[..19]), "{f}");
    }
    assert!(
        fields.iter().any(|f| has_fraction(&by_owner[*f])),
        "the owner keeps precision: {by_owner}"
    );
    let list =
        common::expect_status(s.get(&analyst, "/v1/jobs").await, reqwest::StatusCode::OK).await;
    for j in list["items"].as_array().unwrap() {
        for f in fields {
            assert!(!has_fraction(&j[f]), "list: {j}");
        }
    }

    let model_id = done["model_id"].as_str().unwrap();
    let path = format!("/v1/models/{model_id}");
    let m = common::expect_status(s.get(&analyst, &path).await, reqwest::StatusCode::OK).await;
    assert!(!has_fraction(&m["created_at"]), "{}", m["created_at"]);
    assert!(
        !has_fraction(&m["model"]["created_at"]),
        "{}",
        m["model"]["created_at"]
    );
    let listed =
        common::expect_status(s.get(&analyst, "/v1/models").await, reqwest::StatusCode::OK).await;
    for item in listed["items"].as_array().unwrap() {
        assert!(!has_fraction(&item["created_at"]), "{item}");
    }
    let m = common::expect_status(s.get(&owner, &path).await, reqwest::StatusCode::OK).await;
    assert!(
        has_fraction(&m["created_at"]) || has_fraction(&m["model"]["created_at"]),
        "the owner keeps precision: {}",
        m["created_at"]
    );

    // Issue 26, item 5: a DP evaluation's times too (it reads the rows).
    let evaluation = common::expect_status(
        s.post(
            &analyst,
            &format!("/v1/models/{model_id}/evaluate"),
            &serde_json::json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await,
        reqwest::StatusCode::OK,
    )
    .await;
    let times = ["created_at", "finished_at"];
    for f in times {
        assert!(evaluation[f].is_string(), "{f}: {evaluation}");
        assert!(
            !has_fraction(&evaluation[f]),
            "analyst sees {f}: {evaluation}"
        );
    }
    let path = format!("/v1/evaluations/{}", evaluation["id"].as_str().unwrap());
    let by_analyst =
        common::expect_status(s.get(&analyst, &path).await, reqwest::StatusCode::OK).await;
    let by_owner = common::expect_status(s.get(&owner, &path).await, reqwest::StatusCode::OK).await;
    for f in times {
        assert!(
            !has_fraction(&by_analyst[f]),
            "analyst sees {f}: {by_analyst}"
        );
    }
    assert!(
        times.iter().any(|f| has_fraction(&by_owner[*f])),
        "the owner keeps precision: {by_owner}"
    );
}
