//! Training jobs on a worker pool of several threads (issue 13): each
//! worker trains on its own pool of `threads_per_job` threads. A job on more
//! rows than one super-block of DP-1R's sums (131,072) runs the parallel
//! paths (sums, margin updates, class counts, code building) on that pool
//! and must succeed like any other.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_trains_on_a_pool_of_two_threads() {
    let s = TestServer::start_with(|c| {
        c.workers = 1;
        c.threads_per_job = 2;
    })
    .await;
    let (_, owner) = s.key("owner", "alice").await;
    let dataset = s.upload_small(&owner, 10.0, 140_000).await;
    let body = json!({"dataset_id": dataset, "epsilon": 1.0, "rounds": 5});
    let created = expect_status(
        s.post(&owner, "/v1/jobs", &body).await,
        StatusCode::ACCEPTED,
    )
    .await;
    let id = created["id"].as_str().unwrap().to_owned();
    let job = s.wait_job(&owner, &id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["rounds_done"], 5, "{job}");
    s.stop().await;
}
