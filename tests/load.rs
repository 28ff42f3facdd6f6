//! Concurrency under load, on the real binary over loopback:
//!
//! - many clients mixing predictions, job submissions against budgets that
//!   allow only a few more jobs, and budget/ledger reads: no overspend,
//!   exactly the jobs that fit admitted, no 5xx; latency percentiles per
//!   request kind are printed;
//! - two server processes on one SQLite file submitting against one budget:
//!   no overspend, every job runs exactly once, no 5xx.
//!
//! `cargo test --test load -- --nocapture` prints the figures;
//! `PRIVBOOST_LOAD_REQUESTS=50000 PRIVBOOST_LOAD_CLIENTS=64` runs longer.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::invariants::{self, Expectations};
use common::process::ChildServer;
use common::{ADMIN_KEY, SMALL_SCHEMA, small_csv};
use reqwest::Client;
use serde_json::{Map, Value, json};

/// Each job's charge (exact in binary, so capacities are exact).
const JOB_EPSILON: f64 = 0.125;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).map_or(default, |v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

/// A small client for one server, failing loudly on anything unexpected.
struct Api {
    client: Client,
    url: String,
}

impl Api {
    fn new(server: &ChildServer) -> Api {
        Api {
            client: Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            url: server.url.clone(),
        }
    }

    async fn call(&self, req: reqwest::RequestBuilder, want: u16) -> Value {
        let r = req.send().await.expect("request sent");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        assert_eq!(status, want, "{text}");
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }

    async fn owner_key(&self) -> String {
        common::create_key(&self.client, &self.url, ADMIN_KEY, "owner", "load")
            .await
            .1
    }

    /// Upload and register what must be stored; returns the dataset id.
    async fn upload(
        &self,
        exp: &mut Expectations,
        key: &str,
        name: &str,
        total: f64,
        schema: &str,
        csv: Vec<u8>,
    ) -> String {
        exp.uploads
            .insert(name.to_owned(), invariants::expected_rows(schema, &csv));
        let form = reqwest::multipart::Form::new()
            .text("name", name.to_owned())
            .text("epsilon", total.to_string())
            .text("schema", schema.to_owned())
            // The load mixes several datasets of the same rows on purpose.
            .text("allow_duplicate", "true")
            .part("data", reqwest::multipart::Part::bytes(csv));
        let body = self
            .call(
                self.client
                    .post(format!("{}/v1/datasets", self.url))
                    .bearer_auth(key)
                    .multipart(form),
                201,
            )
            .await;
        let id = body["dataset"]["id"].as_str().unwrap().to_owned();
        exp.acked_datasets.insert(id.clone());
        id
    }

    async fn wait_succeeded(&self, key: &str, job: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let j = self
                .call(
                    self.client
                        .get(format!("{}/v1/jobs/{job}", self.url))
                        .bearer_auth(key),
                    200,
                )
                .await;
            if j["state"] == "succeeded" {
                return j;
            }
            assert!(
                j["state"] == "queued" || j["state"] == "running",
                "job ended without a model: {j}"
            );
            assert!(Instant::now() < deadline, "job still {}", j["state"]);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Wait until no job is queued or running (all processes), reading the file.
async fn wait_all_final(db: &Path) {
    let open = invariants::wait_until_no_job_is_open(db, Duration::from_secs(180)).await;
    assert_eq!(open, 0, "{open} jobs never finished");
}

/// `n` Mushroom rows as predict-request objects (without the label).
fn mushroom_rows(n: usize) -> Vec<Map<String, Value>> {
    let text = std::fs::read_to_string(common::mushroom_csv()).unwrap();
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

/// p50, p90, p99 and max, in milliseconds.
fn percentiles(mut latencies: Vec<Duration>) -> String {
    latencies.sort();
    let q = |p: f64| {
        let i = ((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1);
        latencies[i.min(latencies.len() - 1)].as_secs_f64() * 1e3
    };
    format!(
        "n {}, p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(1.0)
    )
}

/// Why a budget answer is not one consistent snapshot, if it is not:
/// spent and reserved are never negative, never above the total, and with
/// the remaining amount they add up to the total.
fn budget_inconsistency(b: &Value) -> Option<String> {
    let f = |p: &str| b[p]["epsilon"].as_f64().unwrap_or(f64::NAN);
    let (total, spent, reserved, remaining) =
        (f("total"), f("spent"), f("reserved"), f("remaining"));
    let ok = spent >= 0.0
        && reserved >= 0.0
        && remaining >= 0.0
        && spent + reserved <= total
        && (spent + reserved + remaining - total).abs() < 1e-9;
    (!ok).then(|| format!("inconsistent budget: {b}"))
}

/// What the clients saw.
#[derive(Default)]
struct Tally {
    latencies: BTreeMap<&'static str, Vec<Duration>>,
    statuses: BTreeMap<(&'static str, u16), usize>,
    /// Admitted job ids per dataset.
    admitted: BTreeMap<String, Vec<String>>,
    /// 5xx and transport errors.
    failures: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_load_on_nearly_spent_budgets_never_overspends_and_never_fails() {
    let requests = env_number("PRIVBOOST_LOAD_REQUESTS", 3_000);
    let clients = env_number("PRIVBOOST_LOAD_CLIENTS", 32);
    let dir = tempfile::tempdir().unwrap();
    let server = ChildServer::start(
        &dir.path().join("data"),
        &dir.path().join("server.log"),
        &["--workers", "2"],
    );
    let db = dir.path().join("data/privboost.db");
    let api = Api::new(&server);
    let owner = api.owner_key().await;
    let mut exp = Expectations::default();

    // A deployed model to predict with.
    let schema = std::fs::read_to_string(common::mushroom_schema()).unwrap();
    let mushroom = api
        .upload(
            &mut exp,
            &owner,
            "mushroom",
            10.0,
            &schema,
            std::fs::read(common::mushroom_csv()).unwrap(),
        )
        .await;
    let job = api
        .call(
            api.client
                .post(format!("{}/v1/jobs", api.url))
                .bearer_auth(&owner)
                .json(&json!({"dataset_id": mushroom, "epsilon": 1.0, "tau": 15})),
            202,
        )
        .await;
    let job_id = job["id"].as_str().unwrap().to_owned();
    exp.acked_jobs.insert(job_id.clone());
    let model = api.wait_succeeded(&owner, &job_id).await["model_id"]
        .as_str()
        .unwrap()
        .to_owned();
    api.call(
        api.client
            .put(format!("{}/v1/deployments/mushroom", api.url))
            .bearer_auth(&owner)
            .json(&json!({"model_id": model})),
        201,
    )
    .await;

    // Budgets with room for only a few more jobs: (total, jobs already run).
    let mut capacity = BTreeMap::new();
    for (i, (total, spent)) in [(0.5, 2), (0.375, 2), (1.0, 7)].into_iter().enumerate() {
        let id = api
            .upload(
                &mut exp,
                &owner,
                &format!("budget-{i}"),
                total,
                SMALL_SCHEMA,
                small_csv(500).into_bytes(),
            )
            .await;
        for _ in 0..spent {
            let j = api
                .call(
                    api.client
                        .post(format!("{}/v1/jobs", api.url))
                        .bearer_auth(&owner)
                        .json(&json!({"dataset_id": id, "epsilon": JOB_EPSILON, "tau": 5})),
                    202,
                )
                .await;
            exp.acked_jobs.insert(j["id"].as_str().unwrap().to_owned());
        }
        capacity.insert(id, (total / JOB_EPSILON) as usize - spent);
    }
    let budget_ids: Vec<String> = capacity.keys().cloned().collect();

    let predict_body = Arc::new(serde_json::to_vec(&json!({"rows": mushroom_rows(1)})).unwrap());
    let tally = Arc::new(Mutex::new(Tally::default()));
    let per_client = requests.div_ceil(clients);
    let began = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = api.client.clone();
        let url = api.url.clone();
        let owner = owner.clone();
        let budget_ids = budget_ids.clone();
        let predict_body = predict_body.clone();
        let tally = tally.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_client {
                // A fixed mix: 60% predict, 15% submit, 25% reads.
                let slot = (c * 7 + i) % 20;
                let dataset = &budget_ids[(c + i) % budget_ids.len()];
                let (kind, req) = match slot {
                    0..12 => (
                        "predict",
                        client
                            .post(format!("{url}/v1/deployments/mushroom/predict"))
                            .header("content-type", "application/json")
                            .body(predict_body.as_ref().clone()),
                    ),
                    12..15 => (
                        "submit",
                        client.post(format!("{url}/v1/jobs")).json(
                            &json!({"dataset_id": dataset, "epsilon": JOB_EPSILON, "tau": 5}),
                        ),
                    ),
                    15..18 => (
                        "budget",
                        client.get(format!("{url}/v1/datasets/{dataset}/budget")),
                    ),
                    _ => (
                        "ledger",
                        client.get(format!("{url}/v1/datasets/{dataset}/ledger")),
                    ),
                };
                let t = Instant::now();
                let result = async {
                    let r = req.bearer_auth(&owner).send().await?;
                    let status = r.status().as_u16();
                    Ok::<_, reqwest::Error>((status, r.text().await?))
                }
                .await;
                let elapsed = t.elapsed();
                let mut tally = tally.lock().unwrap();
                match result {
                    Err(e) => tally.failures.push(format!("{kind}: {e}")),
                    Ok((status, text)) => {
                        tally.latencies.entry(kind).or_default().push(elapsed);
                        *tally.statuses.entry((kind, status)).or_default() += 1;
                        if status >= 500 {
                            tally.failures.push(format!("{kind} -> {status}: {text}"));
                        }
                        if kind == "budget" && status == 200 {
                            let b: Value = serde_json::from_str(&text).unwrap();
                            if let Some(problem) = budget_inconsistency(&b) {
                                tally.failures.push(problem);
                            }
                        }
                        if kind == "submit" && status == 202 {
                            let job: Value = serde_json::from_str(&text).unwrap();
                            tally
                                .admitted
                                .entry(dataset.clone())
                                .or_default()
                                .push(job["id"].as_str().unwrap().to_owned());
                        }
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = began.elapsed();
    let tally = std::mem::take(&mut *tally.lock().unwrap());
    let total: usize = tally.statuses.values().sum();
    println!(
        "load: {total} requests from {clients} clients in {:.2} s ({:.0} requests/s)",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64()
    );
    for (kind, latencies) in &tally.latencies {
        println!("load: {kind:>7}: {}", percentiles(latencies.clone()));
    }
    println!("load: statuses {:?}", tally.statuses);
    assert!(tally.failures.is_empty(), "{:?}", tally.failures);
    for (kind, status) in tally.statuses.keys() {
        let expected: &[u16] = match *kind {
            // 409: the budget is spent (the point of the test).
            "submit" => &[202, 409],
            _ => &[200],
        };
        assert!(expected.contains(status), "{kind} answered {status}");
    }
    // Exactly the jobs that fit were admitted: none over, none lost.
    for (dataset, room) in &capacity {
        let admitted = tally.admitted.get(dataset).map_or(0, Vec::len);
        assert_eq!(admitted, *room, "dataset {dataset}");
    }
    for ids in tally.admitted.values() {
        exp.acked_jobs.extend(ids.iter().cloned());
    }
    wait_all_final(&db).await;
    let (violations, counts) =
        invariants::check(&db, &mut exp, Some((&api.client, &api.url, &owner)), true).await;
    assert!(violations.is_empty(), "{violations:#?}");
    assert_eq!(counts.final_jobs, counts.jobs);
    println!(
        "load: {} jobs, {} charges, all final; violations 0",
        counts.jobs, counts.charges
    );
    server.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_file_share_one_budget() {
    let submissions = env_number("PRIVBOOST_LOAD_SUBMISSIONS", 64);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let db = data.join("privboost.db");
    let a = ChildServer::start(&data, &dir.path().join("a.log"), &["--workers", "2"]);
    let b = ChildServer::start(&data, &dir.path().join("b.log"), &["--workers", "2"]);
    let (api_a, api_b) = (Api::new(&a), Api::new(&b));
    let owner = api_a.owner_key().await;
    let mut exp = Expectations::default();
    // Room for exactly 8 jobs; tau large enough that jobs overlap.
    let dataset = api_a
        .upload(
            &mut exp,
            &owner,
            "shared",
            1.0,
            SMALL_SCHEMA,
            small_csv(2_000).into_bytes(),
        )
        .await;
    let capacity = 8;
    let mut tasks = Vec::new();
    for i in 0..submissions {
        let api = if i % 2 == 0 { &api_a } else { &api_b };
        let req = api
            .client
            .post(format!("{}/v1/jobs", api.url))
            .bearer_auth(&owner)
            .json(&json!({"dataset_id": dataset, "epsilon": JOB_EPSILON, "tau": 200}));
        tasks.push(tokio::spawn(async move {
            let r = req.send().await.expect("sent");
            let status = r.status().as_u16();
            (status, r.text().await.unwrap())
        }));
    }
    let mut admitted = Vec::new();
    let mut statuses = BTreeMap::new();
    for t in tasks {
        let (status, text) = t.await.unwrap();
        *statuses.entry(status).or_insert(0) += 1;
        match status {
            202 => {
                let j: Value = serde_json::from_str(&text).unwrap();
                admitted.push(j["id"].as_str().unwrap().to_owned());
            }
            409 => {}
            other => panic!("submission answered {other}: {text}"),
        }
    }
    println!("two processes: {submissions} submissions, statuses {statuses:?}");
    assert_eq!(admitted.len(), capacity);
    exp.acked_jobs.extend(admitted.iter().cloned());
    for (i, job) in admitted.iter().enumerate() {
        let api = if i % 2 == 0 { &api_a } else { &api_b };
        api.wait_succeeded(&owner, job).await;
    }
    wait_all_final(&db).await;
    let runs = invariants::attempts(&db).await;
    for job in &admitted {
        assert_eq!(runs[job], 1, "job {job} ran {} times", runs[job]);
    }
    for api in [&api_a, &api_b] {
        let (violations, counts) =
            invariants::check(&db, &mut exp, Some((&api.client, &api.url, &owner)), true).await;
        assert!(violations.is_empty(), "{violations:#?}");
        assert_eq!((counts.jobs, counts.charges), (capacity, capacity));
    }
    // Which process trained what (both usually do; not required).
    let trained = |log: &Path| {
        std::fs::read_to_string(log)
            .unwrap()
            .matches("job succeeded")
            .count()
    };
    println!(
        "two processes: {capacity} jobs admitted, each run once; trained by A {}, by B {}; violations 0",
        trained(&a.log),
        trained(&b.log)
    );
    b.terminate();
    a.terminate();
}
