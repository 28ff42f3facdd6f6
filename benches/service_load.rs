//! Load benchmark of the prediction endpoint over loopback HTTP.
//!
//! Starts the real server in-process on 127.0.0.1:0 with a temporary
//! SQLite file, uploads the shipped Mushroom data, trains one model (tau
//! 15, epsilon 1), deploys it, then runs a bounded request loop: `CLIENTS`
//! concurrent clients send `REQUESTS` requests in total to
//! `POST /v1/deployments/mushroom/predict`, first with 1 row per request,
//! then with 100. Prints throughput and p50/p90/p99 latency.
//!
//! Run: `cargo bench --bench service_load` (optionally
//! `-- <clients> <requests>`). Client and server share the machine's cores.
//! To load a separately started server instead, set `PRIVBOOST_BENCH_URL`
//! (e.g. `http://127.0.0.1:8080`) and `PRIVBOOST_BENCH_ADMIN_KEY`.

use std::time::{Duration, Instant};

use privboost::api::{self, Config, Server};
use serde_json::{Map, Value, json};

const ADMIN: &str = "pb_bench_admin_key";

fn rows(n: usize) -> Vec<Map<String, Value>> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/data/mushroom/mushroom.csv"
    ))
    .unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .take(n)
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .filter(|(h, _)| **h != "class")
                .map(|(h, v)| (h.to_string(), json!(v)))
                .collect()
        })
        .collect()
}

async fn run_load(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: Value,
    clients: usize,
    requests: usize,
) {
    let body = std::sync::Arc::new(serde_json::to_vec(&body).unwrap());
    let per_client = requests / clients;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let client = client.clone();
        let url = url.to_owned();
        let key = key.to_owned();
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(per_client);
            for _ in 0..per_client {
                let t = Instant::now();
                let r = client
                    .post(&url)
                    .bearer_auth(&key)
                    .header("content-type", "application/json")
                    .body(body.as_ref().clone())
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
                r.bytes().await.unwrap();
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all: Vec<Duration> = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed();
    all.sort();
    let q = |p: f64| {
        all[((all.len() as f64 * p).ceil() as usize)
            .saturating_sub(1)
            .min(all.len() - 1)]
    };
    println!(
        "  {} requests, {clients} clients: {:.0} requests/s; latency p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len(),
        all.len() as f64 / elapsed.as_secs_f64(),
        q(0.50).as_secs_f64() * 1e3,
        q(0.90).as_secs_f64() * 1e3,
        q(0.99).as_secs_f64() * 1e3,
        all.last().unwrap().as_secs_f64() * 1e3,
    );
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let clients: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(16);
    let requests: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        // An external server (e.g. `privboost serve --admin-key ...`), or one
        // started here in-process.
        let external = std::env::var("PRIVBOOST_BENCH_URL").ok();
        let admin = std::env::var("PRIVBOOST_BENCH_ADMIN_KEY").unwrap_or_else(|_| ADMIN.to_owned());
        let dir = tempfile::tempdir().unwrap();
        let (base, stop) = match external {
            Some(url) => (url, None),
            None => {
                let mut config = Config::new(dir.path().join("privboost.db"));
                config.admin_key = Some(ADMIN.into());
                let server = Server::open(config).await.unwrap();
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let base = format!("http://{}", listener.local_addr().unwrap());
                let (tx, rx) = tokio::sync::oneshot::channel::<()>();
                let handle = tokio::spawn(api::serve(listener, server, async {
                    let _ = rx.await;
                }));
                (base, Some((tx, handle)))
            }
        };
        let client = reqwest::Client::new();
        let key: Value = client
            .post(format!("{base}/v1/keys"))
            .bearer_auth(&admin)
            .json(&json!({"role": "owner", "name": "bench"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let owner = key["key"].as_str().unwrap().to_owned();
        let form = reqwest::multipart::Form::new()
            .text("name", "mushroom")
            .text("epsilon", "1")
            .text(
                "schema",
                std::fs::read_to_string(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/data/mushroom/schema.json"
                ))
                .unwrap(),
            )
            .part(
                "data",
                reqwest::multipart::Part::bytes(
                    std::fs::read(concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/data/mushroom/mushroom.csv"
                    ))
                    .unwrap(),
                ),
            );
        let up: Value = client
            .post(format!("{base}/v1/datasets"))
            .bearer_auth(&owner)
            .multipart(form)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let dataset = up["dataset"]["id"].as_str().unwrap();
        let job: Value = client
            .post(format!("{base}/v1/jobs"))
            .bearer_auth(&owner)
            .json(&json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 15}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let job_url = format!("{base}/v1/jobs/{}", job["id"].as_str().unwrap());
        let deadline = Instant::now() + Duration::from_secs(60);
        let model_id = loop {
            let j: Value = client
                .get(&job_url)
                .bearer_auth(&owner)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if j["state"] == "succeeded" {
                break j["model_id"].as_str().unwrap().to_owned();
            }
            assert!(Instant::now() < deadline, "training did not finish: {j}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        client
            .put(format!("{base}/v1/deployments/mushroom"))
            .bearer_auth(&owner)
            .json(&json!({"model_id": model_id}))
            .send()
            .await
            .unwrap();
        let url = format!("{base}/v1/deployments/mushroom/predict");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mode = if stop.is_some() {
            "client and server in one process"
        } else {
            "external server"
        };
        println!("predict load benchmark ({cores} cores, {mode}, loopback HTTP/1.1)");
        // Warm-up.
        run_load(
            &client,
            &url,
            &owner,
            json!({"rows": rows(1)}),
            clients,
            clients * 50,
        )
        .await;
        println!("single-row requests:");
        run_load(
            &client,
            &url,
            &owner,
            json!({"rows": rows(1)}),
            clients,
            requests,
        )
        .await;
        println!("100-row requests:");
        run_load(
            &client,
            &url,
            &owner,
            json!({"rows": rows(100)}),
            clients,
            requests / 4,
        )
        .await;
        if let Some((tx, handle)) = stop {
            let _ = tx.send(());
            handle.await.unwrap().unwrap();
        }
    });
}
