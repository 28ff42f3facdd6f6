//! Job progress as server-sent events (`GET /v1/jobs/{id}/events`, issue
//! 12 item 6), read over HTTP from a real server: the events carry the job
//! document of `GET /v1/jobs/{id}`, end with the job, keep non-owners'
//! times coarse, and a late client gets the final state at once.

mod common;

use std::time::Duration;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Read a whole event stream (it must end by itself within the deadline);
/// returns `(event, data)` pairs. Keep-alive comments are skipped.
async fn read_events(s: &TestServer, key: &str, job: &str) -> Vec<(String, Value)> {
    let mut r = s
        .client
        .get(s.at(&format!("/v1/jobs/{job}/events")))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = r.chunk().await.unwrap() {
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    };
    tokio::time::timeout(Duration::from_secs(120), read)
        .await
        .expect("the stream ends when the job ends");
    let mut events = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut name = String::from("message");
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_owned();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            events.push((name, serde_json::from_str(&data).unwrap()));
        }
    }
    events
}

fn whole_seconds(v: &Value) -> bool {
    v.as_str().is_none_or(|t| !t.contains('.'))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_events_follow_the_job_and_end_with_it() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (analyst_id, analyst) = s.key("analyst", "ann").await;
    let (_, stranger) = s.key("analyst", "eve").await;
    let dataset = s.upload_mushroom(&owner, 100.0).await;
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{dataset}/grants/{analyst_id}")))
            .bearer_auth(&owner),
    )
    .await;
    let tau: u32 = 60;
    let r = s
        .post(
            &analyst,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 1.0, "rounds": tau}),
        )
        .await;
    let job = expect_status(r, StatusCode::ACCEPTED).await;
    let id = job["id"].as_str().unwrap().to_owned();

    // The owner and the analyst follow the same job at once.
    let (owned, seen) = tokio::join!(read_events(&s, &owner, &id), read_events(&s, &analyst, &id));
    let fin = expect_status(
        s.get(&owner, &format!("/v1/jobs/{id}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(fin["state"], "succeeded");
    for events in [&owned, &seen] {
        let (last, body) = events.last().unwrap();
        assert_eq!(last, "done", "{events:?}");
        assert_eq!(body["state"], "succeeded");
        assert_eq!(body["model_id"], fin["model_id"]);
        assert_eq!(body["progress"], json!({"rounds_done": tau, "tau": tau}));
        // Only the last event is final; the others are progress, in order.
        let (progress, _) = events.split_at(events.len() - 1);
        assert!(progress.iter().all(|(n, _)| n == "progress"), "{events:?}");
        let rounds: Vec<u64> = events
            .iter()
            .map(|(_, b)| b["rounds_done"].as_u64().unwrap())
            .collect();
        assert!(rounds.windows(2).all(|w| w[0] <= w[1]), "{rounds:?}");
    }
    // The owner sees the final document as GET shows it.
    assert_eq!(owned.last().unwrap().1, fin);
    // The analyst (not the dataset's owner): whole seconds, quarters.
    let step = u64::from(tau).div_ceil(4);
    for (name, body) in &seen {
        for field in ["created_at", "started_at", "finished_at"] {
            assert!(whole_seconds(&body[field]), "{name}: {body}");
        }
        if name == "progress" {
            assert_eq!(body["rounds_done"].as_u64().unwrap() % step, 0, "{body}");
        }
    }

    // After the end: the final state at once, and the stream ends.
    let late = read_events(&s, &analyst, &id).await;
    assert_eq!(late.len(), 1, "{late:?}");
    assert_eq!(late[0].0, "done");
    assert_eq!(late[0].1["state"], "succeeded");
    assert!(whole_seconds(&late[0].1["finished_at"]));

    // Same access as GET /v1/jobs/{id}: others get the same 404.
    for path in [
        format!("/v1/jobs/{id}/events"),
        "/v1/jobs/job_00000000000000000000000000000000/events".to_owned(),
    ] {
        let e = expect_status(s.get(&stranger, &path).await, StatusCode::NOT_FOUND).await;
        assert_eq!(e["type"], "/problems/not-found");
    }
    let r = s
        .client
        .get(s.at(&format!("/v1/jobs/{id}/events")))
        .send()
        .await
        .unwrap();
    expect_status(r, StatusCode::UNAUTHORIZED).await;
    s.stop().await;
}

/// Submit a job of `rounds` rounds as `owner`; its id.
async fn submit(s: &TestServer, owner: &str, dataset: &str, rounds: u32) -> String {
    let body = json!({"dataset_id": dataset, "epsilon": 1.0, "rounds": rounds});
    let r = s.post(owner, "/v1/jobs", &body).await;
    expect_status(r, StatusCode::ACCEPTED).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_job_ends_its_stream_and_shutdown_ends_open_ones() {
    // One worker, busy with a long job, so the next job stays queued until
    // it is cancelled.
    let s = TestServer::start_with(|c| c.workers = 1).await;
    let (_, owner) = s.key("owner", "alice").await;
    let dataset = s.upload_mushroom(&owner, 10.0).await;
    let long = submit(&s, &owner, &dataset, 9999).await;
    let id = submit(&s, &owner, &dataset, 5).await;
    let reader = read_events(&s, &owner, &id);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(600)).await;
        let r = s
            .post(&owner, &format!("/v1/jobs/{id}/cancel"), &json!({}))
            .await;
        assert_eq!(r.status(), StatusCode::OK);
    };
    let (events, ()) = tokio::join!(reader, cancel);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].0, "progress");
    assert_eq!(events[0].1["state"], "queued");
    assert_eq!(events[1].0, "cancelled");
    assert_eq!(events[1].1["state"], "cancelled");

    // A stream still open when the server stops (on the running job) ends,
    // so the stop does not wait for it.
    let mut r = s
        .client
        .get(s.at(&format!("/v1/jobs/{long}/events")))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap();
    let first = r.chunk().await.unwrap().unwrap();
    assert!(
        std::str::from_utf8(&first)
            .unwrap()
            .contains("event: progress")
    );
    let reading = tokio::spawn(async move { while let Ok(Some(_)) = r.chunk().await {} });
    tokio::time::timeout(Duration::from_secs(20), s.stop())
        .await
        .expect("the server stops with an event stream open");
    tokio::time::timeout(Duration::from_secs(5), reading)
        .await
        .expect("the stream ended")
        .unwrap();
}
