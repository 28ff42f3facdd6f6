//! Several `privboost serve` replicas on one PostgreSQL database (issue 14):
//! one ledger that is never overspent however the requests are spread, a
//! job of a replica killed with SIGKILL finished by another under its one
//! charge, and no partial dataset left by a replica killed mid-upload.
//!
//! Each test starts real child processes on a fresh database of the server
//! named by `PRIVBOOST_TEST_POSTGRES_URL` (CI: `.ci/postgres`); without it
//! they print a notice and pass.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::invariants::{self, Expectations, Store};
use common::process::ChildServer;
use common::{ADMIN_KEY, SMALL_SCHEMA};
use reqwest::Client;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

/// A fresh database on the test server and a directory for the replicas'
/// logs and (unused) data directories.
struct Cluster {
    db: String,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// `None`, with a notice, when no PostgreSQL server is configured.
    async fn new(test: &str) -> Option<Cluster> {
        let server = common::postgres::server_url(test)?;
        Some(Cluster {
            db: common::postgres::fresh_database(&server).await,
            dir: tempfile::tempdir().unwrap(),
        })
    }

    /// Start replica `i` with the `extra` flags.
    fn replica(&self, i: usize, extra: &[&str]) -> ChildServer {
        let mut args = vec!["--database-url", &self.db];
        args.extend_from_slice(extra);
        ChildServer::start(
            &self.dir.path().join(format!("data-{i}")),
            &self.dir.path().join(format!("replica-{i}.log")),
            &args,
        )
    }

    /// Replicas `0..n`, each with the `extra` flags.
    fn replicas(&self, n: usize, extra: &[&str]) -> Vec<ChildServer> {
        (0..n).map(|i| self.replica(i, extra)).collect()
    }

    /// A connection to the database.
    async fn connect(&self) -> PgConnection {
        pg(&self.db).await
    }
}

async fn upload_small(client: &Client, url: &str, key: &str, epsilon: f64, rows: usize) -> String {
    let form = reqwest::multipart::Form::new()
        .text("name", "small")
        .text("epsilon", epsilon.to_string())
        // Replicas' tests upload the same rows several times on purpose.
        .text("allow_duplicate", "true")
        .text("schema", SMALL_SCHEMA)
        .part(
            "data",
            reqwest::multipart::Part::bytes(common::small_csv(rows).into_bytes())
                .file_name("data.csv"),
        );
    let r = client
        .post(format!("{url}/v1/datasets"))
        .bearer_auth(key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let body = common::expect_status(r, reqwest::StatusCode::CREATED).await;
    body["dataset"]["id"].as_str().unwrap().to_owned()
}

async fn pg(url: &str) -> PgConnection {
    PgConnection::connect(url)
        .await
        .expect("connect to PostgreSQL")
}

/// 1,000 concurrent submissions spread over 3 replicas against a budget
/// with room for exactly 80 (total 10, each job 0.125: sums exact in
/// binary): exactly 80 admitted, 920 refused with 409, no 5xx, and the
/// ledger's rows, summed by PostgreSQL, stay within the total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_admit_exactly_what_fits() {
    let Some(cluster) = Cluster::new("three_replicas_admit_exactly_what_fits").await else {
        return;
    };
    let extra = ["--workers", "1", "--max-active-jobs", "100000"];
    let replicas = cluster.replicas(3, &extra);
    let client = Client::builder()
        .timeout(Duration::from_secs(120))
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let (_, owner) = common::create_key(&client, &replicas[0].url, ADMIN_KEY, "owner", "o").await;
    let dataset = upload_small(&client, &replicas[1].url, &owner, 10.0, 200).await;

    let mut tasks = Vec::new();
    for i in 0..1000 {
        let url = format!("{}/v1/jobs", replicas[i % 3].url);
        let (client, owner, dataset) = (client.clone(), owner.clone(), dataset.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(owner)
                .json(&json!({"dataset_id": dataset, "epsilon": 0.125, "tau": 3}))
                .send()
                .await
                .expect("a response");
            (i % 3, r.status().as_u16())
        }));
    }
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    let mut admitted_by_replica = [0usize; 3];
    for t in tasks {
        let (replica, status) = t.await.unwrap();
        *statuses.entry(status).or_default() += 1;
        if status == 202 {
            admitted_by_replica[replica] += 1;
        }
    }
    println!("statuses {statuses:?}; admitted through each replica {admitted_by_replica:?}");
    assert_eq!(statuses.get(&202), Some(&80), "{statuses:?}");
    assert_eq!(statuses.get(&409), Some(&920), "{statuses:?}");
    assert_eq!(statuses.len(), 2, "only 202 and 409: {statuses:?}");

    // Recomputed from the ledger rows, in SQL: an integer sum of the charges'
    // units (PostgreSQL sums BIGINT as NUMERIC, cast back), so 80 x 0.125 is
    // exactly the total of 10 (1e13 units of 1e-12), compared exactly.
    let mut conn = cluster.connect().await;
    let (charges, charged): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*) FILTER (WHERE kind = 'charge'), \
                CAST(COALESCE(SUM(CASE kind WHEN 'charge' THEN epsilon_units WHEN 'refund' THEN -epsilon_units END), 0) AS BIGINT) \
         FROM ledger WHERE dataset_id = $1",
    )
    .bind(&dataset)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    let total: i64 = sqlx::query_scalar(
        "SELECT epsilon_units FROM ledger WHERE dataset_id = $1 AND kind = 'total' ORDER BY seq DESC LIMIT 1",
    )
    .bind(&dataset)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(charges, 80);
    assert!(charged <= total, "charged {charged} of {total} units");
    assert_eq!(total, 10_000_000_000_000);
    assert_eq!(charged, total);
    let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE dataset_id = $1")
        .bind(&dataset)
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(jobs, 80);
    // Every replica answers the same budget.
    for r in &replicas {
        let b: Value = common::get_json(
            &client,
            &format!("{}/v1/datasets/{dataset}/budget", r.url),
            &owner,
        )
        .await;
        assert_eq!(b["remaining"]["epsilon"], 0.0, "{b}");
    }
    for r in replicas {
        r.terminate();
    }
}

/// A long job running on replica A when A is killed with SIGKILL: B (and
/// C), started on the same database, take it over when A's lease expires,
/// and it succeeds under its one charge. Cancellation through one replica
/// reaches a job running on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_a_killed_replica_finishes_on_another_charged_once() {
    let Some(cluster) = Cluster::new("a_job_of_a_killed_replica_finishes").await else {
        return;
    };
    let extra = ["--workers", "1", "--job-lease", "2"];
    let a = cluster.replica(0, &extra);
    let client = Client::new();
    let (_, owner) = common::create_key(&client, &a.url, ADMIN_KEY, "owner", "o").await;
    let schema = std::fs::read_to_string(common::mushroom_schema()).unwrap();
    let form = reqwest::multipart::Form::new()
        .text("name", "m")
        .text("epsilon", "10")
        .text("allow_duplicate", "true")
        .text("schema", schema)
        .part(
            "data",
            reqwest::multipart::Part::bytes(std::fs::read(common::mushroom_csv()).unwrap())
                .file_name("m.csv"),
        );
    let r = client
        .post(format!("{}/v1/datasets", a.url))
        .bearer_auth(&owner)
        .multipart(form)
        .send()
        .await
        .unwrap();
    let dataset = common::expect_status(r, reqwest::StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let submit = |url: String, tau: u32| {
        let (client, owner, dataset) = (client.clone(), owner.clone(), dataset.clone());
        async move {
            let r = client
                .post(format!("{url}/v1/jobs"))
                .bearer_auth(owner)
                .json(&json!({"dataset_id": dataset, "epsilon": 0.5, "tau": tau}))
                .send()
                .await
                .unwrap();
            common::expect_status(r, reqwest::StatusCode::ACCEPTED).await["id"]
                .as_str()
                .unwrap()
                .to_owned()
        }
    };
    // Only A runs yet, so A claims the job.
    let long = submit(a.url.clone(), 1500).await;
    let running = |url: String, job: String| {
        let (client, owner) = (client.clone(), owner.clone());
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                let j: Value =
                    common::get_json(&client, &format!("{url}/v1/jobs/{job}"), &owner).await;
                if j["state"] == "running" && j["progress"]["rounds_done"].as_u64().unwrap_or(0) > 0
                {
                    return;
                }
                assert!(Instant::now() < deadline, "job never ran: {j}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    running(a.url.clone(), long.clone()).await;
    // Kill A while it runs, before B and C start: starting them first left
    // A time to finish the job on a fast machine (attempts 1, not 2).
    a.kill();
    let b = cluster.replica(1, &extra);
    let c = cluster.replica(2, &extra);

    let deadline = Instant::now() + Duration::from_secs(120);
    let done = loop {
        let j: Value =
            common::get_json(&client, &format!("{}/v1/jobs/{long}", b.url), &owner).await;
        if ["succeeded", "failed", "cancelled"].contains(&j["state"].as_str().unwrap()) {
            break j;
        }
        assert!(
            Instant::now() < deadline,
            "the job did not finish elsewhere: {j}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done["state"], "succeeded", "{done}");
    let mut conn = cluster.connect().await;
    let (attempts, charges, refunds): (i64, i64, i64) = sqlx::query_as(
        "SELECT j.attempts, \
                (SELECT COUNT(*) FROM ledger l WHERE l.job_id = j.id AND l.kind = 'charge'), \
                (SELECT COUNT(*) FROM ledger l WHERE l.job_id = j.id AND l.kind = 'refund') \
         FROM jobs j WHERE j.id = $1",
    )
    .bind(&long)
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!((charges, refunds), (1, 0), "one charge, no refund");
    assert_eq!(attempts, 2, "run by A, re-run once by B or C");

    // Cancellation across replicas: a job running on B or C, cancelled
    // through the other one, stops.
    let other = submit(b.url.clone(), 10_000).await;
    running(b.url.clone(), other.clone()).await;
    let r = client
        .post(format!("{}/v1/jobs/{other}/cancel", c.url))
        .bearer_auth(&owner)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let j: Value =
            common::get_json(&client, &format!("{}/v1/jobs/{other}", b.url), &owner).await;
        if j["state"] == "cancelled" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cancel did not reach the job: {j}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    b.terminate();
    c.terminate();
}

/// Replicas killed with SIGKILL while a large upload streams to them or is
/// being written: no partial dataset is ever visible (every stored dataset
/// has exactly the rows sent, no rows or chunks without a record), checked
/// on the database with the crash test's invariants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_upload_leaves_no_partial_dataset() {
    let Some(cluster) = Cluster::new("a_replica_killed_mid_upload").await else {
        return;
    };
    let survivor = cluster.replica(0, &[]);
    let client = Client::new();
    let (_, owner) = common::create_key(&client, &survivor.url, ADMIN_KEY, "owner", "o").await;
    let mut exp = Expectations::default();
    let mut in_flight_at_kill = 0;
    let mut stored = 0;
    // 1,000,000 rows: 10 MB of CSV, and several chunks once encoded.
    let csv = common::small_csv(1_000_000).into_bytes();
    let expected = invariants::expected_rows(SMALL_SCHEMA, &csv);
    let form = |name: String| {
        reqwest::multipart::Form::new()
            .text("name", name)
            .text("epsilon", "1")
            .text("allow_duplicate", "true")
            .text("schema", SMALL_SCHEMA)
            .part(
                "data",
                reqwest::multipart::Part::bytes(csv.clone()).file_name("d.csv"),
            )
    };
    // How long one upload takes here, end to end: the kills are spread
    // over that window, from mid-stream to the database write.
    exp.uploads.insert("timed".into(), expected.clone());
    let began = Instant::now();
    let r = client
        .post(format!("{}/v1/datasets", survivor.url))
        .bearer_auth(&owner)
        .multipart(form("timed".into()))
        .send()
        .await
        .unwrap();
    let window = began.elapsed();
    let body = common::expect_status(r, reqwest::StatusCode::CREATED).await;
    exp.acked_datasets
        .insert(body["dataset"]["id"].as_str().unwrap().to_owned());
    const ROUNDS: u32 = 8;
    for round in 0..ROUNDS {
        let victim = cluster.replica(1, &[]);
        let name = format!("big-{round}");
        exp.uploads.insert(name.clone(), expected.clone());
        let send = client
            .post(format!("{}/v1/datasets", victim.url))
            .bearer_auth(&owner)
            .multipart(form(name))
            .send();
        let upload = tokio::spawn(send);
        tokio::time::sleep(window * (round + 1) / (ROUNDS + 1)).await;
        if !upload.is_finished() {
            in_flight_at_kill += 1;
        }
        victim.kill();
        match upload.await.unwrap() {
            Ok(r) if r.status() == reqwest::StatusCode::CREATED => {
                let body: Value = r.json().await.unwrap();
                exp.acked_datasets
                    .insert(body["dataset"]["id"].as_str().unwrap().to_owned());
            }
            Ok(r) => panic!("upload answered {}", r.status()),
            Err(_) => {}
        }
        let (violations, counts) = invariants::check(
            Store::Postgres(cluster.db.clone()),
            &mut exp,
            Some((&client, &survivor.url, &owner)),
            true,
        )
        .await;
        assert!(violations.is_empty(), "round {round}: {violations:#?}");
        stored = counts.datasets;
    }
    println!(
        "mid-upload kills: {ROUNDS} over an upload window of {window:?}, with the upload still in flight {in_flight_at_kill}; datasets stored whole {stored} (1 uploaded without a kill), partial 0"
    );
    assert!(in_flight_at_kill > 0, "no kill hit an upload in flight");
    survivor.terminate();
}

/// The same POST with one `Idempotency-Key`, sent 30 times at once through
/// 3 replicas: one job, one charge, and every answer is that job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_retry_through_another_replica_replays() {
    let Some(cluster) = Cluster::new("an_idempotent_retry_through_another_replica").await else {
        return;
    };
    let extra = ["--workers", "1"];
    let replicas = cluster.replicas(3, &extra);
    let client = Client::new();
    let (_, owner) = common::create_key(&client, &replicas[0].url, ADMIN_KEY, "owner", "o").await;
    let dataset = upload_small(&client, &replicas[0].url, &owner, 10.0, 200).await;
    let mut tasks = Vec::new();
    for i in 0..30 {
        let url = format!("{}/v1/jobs", replicas[i % 3].url);
        let (client, owner, dataset) = (client.clone(), owner.clone(), dataset.clone());
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(url)
                .bearer_auth(owner)
                .header("Idempotency-Key", "one-job")
                .json(&json!({"dataset_id": dataset, "epsilon": 0.5, "tau": 3}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap();
            (status, body["id"].as_str().map(str::to_owned))
        }));
    }
    let mut ids = std::collections::BTreeSet::new();
    for t in tasks {
        let (status, id) = t.await.unwrap();
        assert_eq!(status, 202);
        ids.insert(id.expect("a job id"));
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    let mut conn = cluster.connect().await;
    let charges: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM ledger WHERE dataset_id = $1 AND kind = 'charge'")
            .bind(&dataset)
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(charges, 1);
    for r in replicas {
        r.terminate();
    }
}
