//! Crash safety: the real binary is killed with SIGKILL at random moments
//! (an upload streaming, a training running, job admissions in flight),
//! restarted on the same file, and the store's invariants are checked after
//! every restart (see `common/invariants.rs`); at the end every job must
//! reach a final state.
//!
//! On PostgreSQL (`PRIVBOOST_TEST_POSTGRES_URL`, CI's `.ci/postgres`) the
//! same cycles run against 3 replicas sharing one database: each cycle
//! kills one replica at random while the clients use all three, restarts
//! it, and checks the invariants on the database.
//!
//! Generated uploads go up as CSV or as Parquet (issue 29), at random.
//!
//! `cargo test --test crash` runs 20 cycles. `PRIVBOOST_CRASH_CYCLES=500`
//! runs more; `PRIVBOOST_CRASH_SEED=N` replays the random choices of a run
//! (kill delays, phases, workloads; the server's timing still varies).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::invariants::{self, Expectations, ExpectedRows, Store};
use common::process::ChildServer;
use common::{ADMIN_KEY, SMALL_SCHEMA};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use reqwest::{Client, RequestBuilder};
use serde_json::{Value, json};

const DEFAULT_CYCLES: usize = 20;
/// Short, so that the jobs of a killed process re-run soon after a restart.
const LEASE_SECS: &str = "2";
/// Each job's charge; totals are small multiples, so budgets run out fast.
const JOB_EPSILON: f64 = 0.125;
/// Client tasks sending work during a cycle.
const TASKS: usize = 6;

/// Where a kill is aimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Upload,
    Training,
    Admission,
}

/// Request kinds, for the in-flight counters and the status tally.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Upload,
    Submit,
    Cancel,
    Read,
}

/// The state the client tasks of one run share.
struct Run {
    db: Store,
    mushroom_schema: String,
    mushroom_csv: Vec<u8>,
    mushroom_rows: ExpectedRows,
    owner: Mutex<String>,
    exp: Mutex<Expectations>,
    /// Acknowledged datasets: (id, is mushroom).
    datasets: Mutex<Vec<(String, bool)>>,
    /// Acknowledged jobs, and those among them that train for a while.
    jobs: Mutex<Vec<String>>,
    long_jobs: Mutex<Vec<String>>,
    in_flight: [AtomicUsize; 4],
    /// Set by the poller when a long job is running with rounds done.
    training_seen: AtomicBool,
    statuses: Mutex<BTreeMap<(Kind, u16), usize>>,
    transport_errors: AtomicUsize,
    server_errors: Mutex<Vec<String>>,
    uploads_sent: AtomicUsize,
}

/// What the run counts.
#[derive(Debug, Default)]
struct KillStats {
    by_phase: BTreeMap<Phase, usize>,
    upload_in_flight: usize,
    submit_in_flight: usize,
    cancel_in_flight: usize,
    training: usize,
}

impl Run {
    fn owner(&self) -> String {
        self.owner.lock().unwrap().clone()
    }

    /// Send, tally the status, record any 5xx; `None` on a transport error
    /// (the server was killed).
    async fn send(&self, kind: Kind, req: RequestBuilder) -> Option<(u16, Value)> {
        let counter = &self.in_flight[kind as usize];
        counter.fetch_add(1, Ordering::SeqCst);
        let result = async {
            let r = req.send().await.ok()?;
            let status = r.status().as_u16();
            let text = r.text().await.ok()?;
            Some((status, text))
        }
        .await;
        counter.fetch_sub(1, Ordering::SeqCst);
        let Some((status, text)) = result else {
            self.transport_errors.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        *self
            .statuses
            .lock()
            .unwrap()
            .entry((kind, status))
            .or_default() += 1;
        if status >= 500 {
            self.server_errors
                .lock()
                .unwrap()
                .push(format!("{kind:?} -> {status}: {text}"));
        }
        Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Upload generated rows (or Mushroom), registering the expected rows
    /// first: the dataset may be stored even if the response is lost.
    async fn upload(&self, client: &Client, url: &str, rng: &mut StdRng, big: bool) -> Option<()> {
        let n = self.uploads_sent.fetch_add(1, Ordering::Relaxed);
        let name = format!("upload-{n}");
        let mushroom = rng.random_bool(0.25);
        let (schema, csv, expected) = if mushroom {
            (
                self.mushroom_schema.clone(),
                self.mushroom_csv.clone(),
                self.mushroom_rows.clone(),
            )
        } else {
            let rows = if big {
                rng.random_range(20_000..60_000)
            } else {
                rng.random_range(20..2_000)
            };
            let table = random_rows(rng, rows);
            let csv = csv_of(&table);
            let expected = invariants::expected_rows(SMALL_SCHEMA, csv.as_bytes());
            // Half the generated uploads go up as Parquet (issue 29): the
            // same rows encode to the same literals, so the store must hold
            // exactly the same rows, or nothing, whenever the kill comes.
            let data = if rng.random_bool(0.5) {
                parquet_of(&table)
            } else {
                csv.into_bytes()
            };
            (SMALL_SCHEMA.to_owned(), data, expected)
        };
        self.exp
            .lock()
            .unwrap()
            .uploads
            .insert(name.clone(), expected);
        let total = [0.25, 0.375, 0.5][rng.random_range(0..3)];
        // Half the datasets use the zCDP filter (issue 15): its admission
        // runs in the same transaction and must keep every invariant too.
        let accounting = ["basic", "zcdp-filter"][rng.random_range(0..2)];
        let form = reqwest::multipart::Form::new()
            .text("name", name)
            .text("epsilon", total.to_string())
            .text("delta", "1e-6")
            .text("accounting", accounting)
            // The same Mushroom rows go up many times on purpose.
            .text("allow_duplicate", "true")
            .text("schema", schema)
            .part(
                "data",
                reqwest::multipart::Part::bytes(csv).file_name("data.csv"),
            );
        let req = client
            .post(format!("{url}/v1/datasets"))
            .bearer_auth(self.owner())
            .multipart(form);
        let (status, body) = self.send(Kind::Upload, req).await?;
        if status == 201 {
            let id = body["dataset"]["id"].as_str().unwrap().to_owned();
            self.exp.lock().unwrap().acked_datasets.insert(id.clone());
            self.datasets.lock().unwrap().push((id, mushroom));
        }
        Some(())
    }

    /// Submit a job against a random dataset (most are nearly spent).
    async fn submit(&self, client: &Client, url: &str, rng: &mut StdRng, long: bool) -> Option<()> {
        let target = {
            let all = self.datasets.lock().unwrap();
            let pool: Vec<&(String, bool)> = all.iter().filter(|d| !long || d.1).collect();
            if pool.is_empty() {
                None
            } else {
                Some(pool[rng.random_range(0..pool.len())].0.clone())
            }
        };
        let Some(dataset) = target else {
            // Nothing to train on yet.
            return self.upload(client, url, rng, false).await;
        };
        let tau = if long {
            rng.random_range(1_500..4_000)
        } else {
            rng.random_range(5..40)
        };
        let req = client
            .post(format!("{url}/v1/jobs"))
            .bearer_auth(self.owner())
            .json(&json!({"dataset_id": dataset, "epsilon": JOB_EPSILON, "tau": tau}));
        let (status, body) = self.send(Kind::Submit, req).await?;
        if status == 202 {
            let id = body["id"].as_str().unwrap().to_owned();
            self.exp.lock().unwrap().acked_jobs.insert(id.clone());
            self.jobs.lock().unwrap().push(id.clone());
            if long {
                self.long_jobs.lock().unwrap().push(id);
            }
        }
        Some(())
    }

    async fn cancel(&self, client: &Client, url: &str, rng: &mut StdRng) -> Option<()> {
        let job = {
            let jobs = self.jobs.lock().unwrap();
            if jobs.is_empty() {
                return Some(());
            }
            // Recent jobs: the ones that may still be queued or running.
            jobs[rng.random_range(jobs.len().saturating_sub(10)..jobs.len())].clone()
        };
        let req = client
            .post(format!("{url}/v1/jobs/{job}/cancel"))
            .bearer_auth(self.owner())
            .json(&json!({}));
        self.send(Kind::Cancel, req).await.map(|_| ())
    }

    async fn read_budget(&self, client: &Client, url: &str, rng: &mut StdRng) -> Option<()> {
        let dataset = {
            let all = self.datasets.lock().unwrap();
            if all.is_empty() {
                return Some(());
            }
            all[rng.random_range(0..all.len())].0.clone()
        };
        let req = client
            .get(format!("{url}/v1/datasets/{dataset}/budget"))
            .bearer_auth(self.owner());
        self.send(Kind::Read, req).await.map(|_| ())
    }

    /// One client task: random operations until the server dies or `stop`.
    async fn work(
        self: Arc<Self>,
        client: Client,
        url: String,
        mut rng: StdRng,
        phase: Phase,
        stop: Arc<AtomicBool>,
    ) {
        while !stop.load(Ordering::Relaxed) {
            let roll = rng.random_range(0..100);
            let done = match phase {
                Phase::Upload if roll < 50 => self.upload(&client, &url, &mut rng, true).await,
                _ if roll < 8 => self.upload(&client, &url, &mut rng, false).await,
                Phase::Admission if roll < 80 => self.submit(&client, &url, &mut rng, false).await,
                // Few new jobs while aiming at a training: a long queue
                // would keep the long job from starting.
                Phase::Training if roll < 20 => self.submit(&client, &url, &mut rng, false).await,
                Phase::Training if roll < 60 => self.cancel(&client, &url, &mut rng).await,
                _ if roll < 55 => self.submit(&client, &url, &mut rng, false).await,
                _ if roll < 75 => self.cancel(&client, &url, &mut rng).await,
                _ => self.read_budget(&client, &url, &mut rng).await,
            };
            if done.is_none() {
                return;
            }
            // A little pacing: the kills need concurrency, not volume.
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..8))).await;
        }
    }

    /// Submit a long job and watch the long jobs until one trains.
    async fn train_and_watch(
        self: Arc<Self>,
        client: Client,
        url: String,
        mut rng: StdRng,
        stop: Arc<AtomicBool>,
    ) {
        if self.submit(&client, &url, &mut rng, true).await.is_none() {
            return;
        }
        while !stop.load(Ordering::Relaxed) {
            let jobs = self.long_jobs.lock().unwrap().clone();
            for job in jobs {
                let req = client
                    .get(format!("{url}/v1/jobs/{job}"))
                    .bearer_auth(self.owner());
                let Some((_, j)) = self.send(Kind::Read, req).await else {
                    return;
                };
                if j["state"] == "running" && j["rounds_done"].as_u64().unwrap_or(0) > 0 {
                    self.training_seen.store(true, Ordering::SeqCst);
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// `rows` random rows `(x, c, y)` for [`SMALL_SCHEMA`].
fn random_rows(rng: &mut StdRng, rows: usize) -> Vec<(i64, &'static str, i64)> {
    (0..rows)
        .map(|_| {
            let x: i64 = rng.random_range(0..=100);
            let c = if rng.random_bool(0.5) { "a" } else { "b" };
            let y = i64::from(rng.random_bool(if x > 50 { 0.8 } else { 0.3 }));
            (x, c, y)
        })
        .collect()
}

/// The rows as CSV with a header.
fn csv_of(rows: &[(i64, &str, i64)]) -> String {
    let mut s = String::from("x,c,y\n");
    for (x, c, y) in rows {
        s.push_str(&format!("{x},{c},{y}\n"));
    }
    s
}

/// The rows as a Parquet file (integer `x` and `y`, string `c`), in row
/// groups of 4,096 rows.
fn parquet_of(rows: &[(i64, &str, i64)]) -> Vec<u8> {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "x",
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        ),
        (
            "c",
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ),
        (
            "y",
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
        ),
    ];
    common::parquet::parquet_bytes(columns, Some(4096))
}

fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

/// Start replica `i`: on SQLite the one server of the file in `dir/data`;
/// on PostgreSQL one of several on `database_url`.
fn start(dir: &Path, i: usize, database_url: Option<&str>) -> ChildServer {
    let mut args = vec![
        "--workers",
        "2",
        "--job-lease",
        LEASE_SECS,
        "--max-active-jobs",
        "100",
    ];
    match database_url {
        None => ChildServer::start(&dir.join("data"), &dir.join("server.log"), &args),
        Some(url) => {
            args.extend(["--database-url", url]);
            ChildServer::start(
                &dir.join(format!("data-{i}")),
                &dir.join(format!("server-{i}.log")),
                &args,
            )
        }
    }
}

/// Start every replica that is not running.
fn start_missing(dir: &Path, servers: &mut [Option<ChildServer>], database_url: Option<&str>) {
    for (i, s) in servers.iter_mut().enumerate() {
        if s.is_none() {
            *s = Some(start(dir, i, database_url));
        }
    }
}

/// Wait until `ready` or `limit` passes.
async fn wait_for(limit: Duration, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn check_or_fail(
    run: &Run,
    server: &ChildServer,
    client: &Client,
    quiet: bool,
    when: &str,
    seed: u64,
) -> invariants::Checked {
    let owner = run.owner();
    let mut exp = std::mem::take(&mut *run.exp.lock().unwrap());
    let (violations, counts) = invariants::check(
        &run.db,
        &mut exp,
        Some((client, &server.url, &owner)),
        quiet,
    )
    .await;
    *run.exp.lock().unwrap() = exp;
    let errors = run.server_errors.lock().unwrap().clone();
    assert!(
        violations.is_empty() && errors.is_empty(),
        "{when} (seed {seed}): {} violations:\n{}\n5xx responses: {errors:?}\nserver log: {}",
        violations.len(),
        violations.join("\n"),
        server.log.display()
    );
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_keeps_every_invariant() {
    crash_cycles(None, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_replicas_on_postgres_keeps_every_invariant() {
    let Some(server) = common::postgres::server_url("the PostgreSQL crash test") else {
        return;
    };
    let database_url = common::postgres::fresh_database(&server).await;
    crash_cycles(Some(database_url), 3).await;
}

/// The kill cycles on SQLite (`database_url` `None`, one server) or on
/// PostgreSQL with `replicas` servers.
async fn crash_cycles(database_url: Option<String>, replicas: usize) {
    let backend = if database_url.is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    let cycles = env_number("PRIVBOOST_CRASH_CYCLES").map_or(DEFAULT_CYCLES, |c| c as usize);
    let seed = env_number("PRIVBOOST_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    println!(
        "crash test ({backend}, {replicas} replicas): {cycles} cycles, seed {seed} (replay: PRIVBOOST_CRASH_SEED={seed})"
    );
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mushroom_schema = std::fs::read_to_string(common::mushroom_schema()).unwrap();
    let mushroom_csv = std::fs::read(common::mushroom_csv()).unwrap();
    let run = Arc::new(Run {
        db: match &database_url {
            Some(url) => Store::Postgres(url.clone()),
            None => Store::Sqlite(dir.path().join("data/privboost.db")),
        },
        mushroom_rows: invariants::expected_rows(&mushroom_schema, &mushroom_csv),
        mushroom_schema,
        mushroom_csv,
        owner: Mutex::new(String::new()),
        exp: Mutex::new(Expectations::default()),
        datasets: Mutex::new(Vec::new()),
        jobs: Mutex::new(Vec::new()),
        long_jobs: Mutex::new(Vec::new()),
        in_flight: Default::default(),
        training_seen: AtomicBool::new(false),
        statuses: Mutex::new(BTreeMap::new()),
        transport_errors: AtomicUsize::new(0),
        server_errors: Mutex::new(Vec::new()),
        uploads_sent: AtomicUsize::new(0),
    });
    let mut rng = StdRng::seed_from_u64(seed);
    let mut kills = KillStats::default();
    let mut servers: Vec<Option<ChildServer>> = (0..replicas).map(|_| None).collect();
    for cycle in 0..cycles {
        start_missing(dir.path(), &mut servers, database_url.as_deref());
        let urls: Vec<String> = servers.iter().flatten().map(|s| s.url.clone()).collect();
        let server = servers[0].as_ref().expect("started");
        let client = Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        if cycle == 0 {
            let (_, key) =
                common::create_key(&client, &server.url, ADMIN_KEY, "owner", "crash").await;
            *run.owner.lock().unwrap() = key;
        } else {
            let counts = check_or_fail(
                &run,
                server,
                &client,
                false,
                &format!("after restart {cycle}"),
                seed,
            )
            .await;
            if cycle % 50 == 0 {
                println!(
                    "crash test: cycle {cycle}, {:.0} s, {} datasets, {} jobs ({} final), violations 0",
                    began.elapsed().as_secs_f64(),
                    counts.datasets,
                    counts.jobs,
                    counts.final_jobs
                );
            }
        }

        let phase = [Phase::Upload, Phase::Training, Phase::Admission][rng.random_range(0..3)];
        let stop = Arc::new(AtomicBool::new(false));
        run.training_seen.store(false, Ordering::SeqCst);
        let mut tasks = Vec::new();
        for t in 0..TASKS {
            let task_rng = StdRng::seed_from_u64(rng.random());
            tasks.push(tokio::spawn(run.clone().work(
                client.clone(),
                urls[t % urls.len()].clone(),
                task_rng,
                phase,
                stop.clone(),
            )));
            if phase == Phase::Training && t == 0 {
                tasks.push(tokio::spawn(run.clone().train_and_watch(
                    client.clone(),
                    server.url.clone(),
                    StdRng::seed_from_u64(rng.random()),
                    stop.clone(),
                )));
            }
        }
        // Aim: wait for the moment, then a random delay within its window.
        let in_flight = |k: Kind| run.in_flight[k as usize].load(Ordering::SeqCst);
        let delay_ms = match phase {
            Phase::Upload => {
                wait_for(Duration::from_secs(2), || in_flight(Kind::Upload) > 0).await;
                rng.random_range(0..80)
            }
            Phase::Training => {
                wait_for(Duration::from_secs(4), || {
                    run.training_seen.load(Ordering::SeqCst)
                })
                .await;
                rng.random_range(0..300)
            }
            Phase::Admission => {
                wait_for(Duration::from_secs(2), || in_flight(Kind::Submit) > 0).await;
                rng.random_range(0..20)
            }
        };
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        *kills.by_phase.entry(phase).or_default() += 1;
        kills.upload_in_flight += usize::from(in_flight(Kind::Upload) > 0);
        kills.submit_in_flight += usize::from(in_flight(Kind::Submit) > 0);
        kills.cancel_in_flight += usize::from(in_flight(Kind::Cancel) > 0);
        kills.training += usize::from(run.training_seen.load(Ordering::SeqCst));
        // On SQLite the one server; on PostgreSQL a replica at random
        // (the others keep serving their clients until the cycle ends).
        let victim = if replicas > 1 {
            rng.random_range(0..replicas)
        } else {
            0
        };
        servers[victim].take().expect("running").kill();
        stop.store(true, Ordering::SeqCst);
        for t in tasks {
            t.await.unwrap();
        }
    }

    // Last start: everything must settle into final states.
    start_missing(dir.path(), &mut servers, database_url.as_deref());
    let server = servers[0].as_ref().expect("started");
    let client = Client::new();
    check_or_fail(&run, server, &client, false, "after the last restart", seed).await;
    let open = invariants::wait_until_no_job_is_open(&run.db, Duration::from_secs(120)).await;
    assert_eq!(
        open,
        0,
        "{open} jobs still queued or running after 120 s (seed {seed}); log {}",
        server.log.display()
    );
    let counts = check_or_fail(&run, server, &client, true, "at the end", seed).await;
    assert_eq!(
        counts.final_jobs, counts.jobs,
        "every job ends in a final state"
    );
    for s in servers.into_iter().flatten() {
        s.terminate();
    }

    let statuses = run.statuses.lock().unwrap();
    let requests: usize = statuses.values().sum();
    println!(
        "crash test ({backend}): {cycles} cycles in {:.1} s; kills by phase {:?}; kills with an upload in flight {}, a submission in flight {}, a cancel in flight {}, a training running {}",
        began.elapsed().as_secs_f64(),
        kills.by_phase,
        kills.upload_in_flight,
        kills.submit_in_flight,
        kills.cancel_in_flight,
        kills.training
    );
    println!(
        "crash test: {requests} responses {:?}; {} requests cut off by kills; {} uploads sent; stored {} datasets, {} jobs ({} charges, {} refunds), all final; violations 0",
        *statuses,
        run.transport_errors.load(Ordering::Relaxed),
        run.uploads_sent.load(Ordering::Relaxed),
        counts.datasets,
        counts.jobs,
        counts.charges,
        counts.refunds
    );
}
