//! The service's durable invariants, checked on the database itself (the
//! SQLite file opened read-only, or the PostgreSQL database in a read-only
//! repeatable-read transaction) and through the API, after crashes and
//! under load:
//!
//! - every stored dataset is one the test uploaded, complete and intact: its
//!   row count and the SHA-256 of its encoded rows equal what the test
//!   computes from the CSV it sent (no half-written dataset is visible);
//! - every acknowledged upload and job is stored;
//! - every job has exactly one charge, of its own amount, on its own
//!   dataset; a refund only for a job cancelled before it ever started;
//! - a job is `succeeded` exactly when its one model exists; a job seen in a
//!   final state never changes state or model afterwards;
//! - per dataset, what the ledger charges (charges minus refunds, in ledger
//!   order, with each entry's recorded privacy loss) fits within the latest
//!   total under the dataset's accounting (basic, or the zCDP filter), and
//!   the API's budget agrees.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use privboost::data::{Encoder, LabelMode, OnBadRow, ReadOptions, Schema, read_csv_with};
use privboost::privacy::budget_units::{Amount, DeltaUnits, EpsilonUnits, RhoUnits};
use privboost::privacy::filter::{Accounting, Charge, Charged, LossKind};
use sha2::{Digest, Sha256};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Connection, PgConnection, SqliteConnection};

/// Where the service keeps its data.
#[derive(Debug, Clone)]
pub enum Store {
    /// An SQLite file.
    Sqlite(std::path::PathBuf),
    /// A PostgreSQL URL.
    Postgres(String),
}

impl From<&Path> for Store {
    fn from(p: &Path) -> Store {
        Store::Sqlite(p.to_owned())
    }
}

impl From<&std::path::PathBuf> for Store {
    fn from(p: &std::path::PathBuf) -> Store {
        Store::Sqlite(p.clone())
    }
}

impl From<&Store> for Store {
    fn from(s: &Store) -> Store {
        s.clone()
    }
}

/// Run `$body` with `$tx` a read-only transaction on `$store` (one
/// snapshot), and `$pg` whether it is PostgreSQL.
macro_rules! in_snapshot {
    ($store:expr, |$tx:ident, $pg:ident| $body:expr) => {
        match $store {
            Store::Sqlite(path) => {
                let mut conn = open_read_only(&path).await;
                #[allow(unused_mut)]
                let mut $tx = conn.begin().await.unwrap();
                #[allow(unused_variables)]
                let $pg = false;
                let out = $body;
                $tx.rollback().await.unwrap();
                out
            }
            Store::Postgres(url) => {
                let mut conn = PgConnection::connect(&url)
                    .await
                    .expect("connect to PostgreSQL");
                #[allow(unused_mut)]
                let mut $tx = conn
                    .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await
                    .unwrap();
                #[allow(unused_variables)]
                let $pg = true;
                let out = $body;
                $tx.rollback().await.unwrap();
                out
            }
        }
    };
}

/// What the stored rows of an upload must be.
#[derive(Debug, Clone, PartialEq)]
pub struct ExpectedRows {
    pub n_rows: i64,
    pub n_cols: i64,
    /// SHA-256 of the encoded features, then of the labels, hashed together.
    pub digest: [u8; 32],
}

/// Encode `csv` as the server does (all rows valid) and digest the result:
/// each feature column's words, then the label words, little-endian `u64`s.
pub fn expected_rows(schema_json: &str, csv: &[u8]) -> ExpectedRows {
    let schema = Schema::from_json(schema_json).expect("test schema");
    let encoder = Encoder::new(&schema).expect("encoder");
    let options = ReadOptions {
        label: LabelMode::Required,
        on_bad_row: OnBadRow::Refuse,
        max_errors: 1,
    };
    let data = read_csv_with(csv, &encoder, &options)
        .expect("test CSV is valid")
        .dataset;
    let mut features = Vec::new();
    for j in 0..data.features.n_cols() {
        for w in data.features.column(j) {
            features.extend_from_slice(&w.to_le_bytes());
        }
    }
    let labels: Vec<u8> = data
        .labels
        .as_ref()
        .expect("labels")
        .words()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    ExpectedRows {
        n_rows: data.n_rows() as i64,
        n_cols: data.features.n_cols() as i64,
        digest: digest(&features, &labels),
    }
}

fn digest(features: &[u8], labels: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(Sha256::digest(features));
    h.update(Sha256::digest(labels));
    h.finalize().into()
}

/// What the test knows it sent.
#[derive(Debug, Default)]
pub struct Expectations {
    /// Upload name (unique per upload) -> expected rows.
    pub uploads: HashMap<String, ExpectedRows>,
    /// Dataset ids whose upload was acknowledged (201).
    pub acked_datasets: HashSet<String>,
    /// Job ids whose submission was acknowledged (202).
    pub acked_jobs: HashSet<String>,
    /// Final states seen by earlier checks: job id -> (state, model id).
    pub final_seen: HashMap<String, (String, Option<String>)>,
}

/// Counts from one check.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    pub datasets: usize,
    pub jobs: usize,
    pub final_jobs: usize,
    pub charges: usize,
    pub refunds: usize,
}

type JobRow = (
    String,         // id
    String,         // dataset_id
    String,         // state
    i64,            // epsilon_units
    i64,            // delta_units
    Option<String>, // started_at
    Option<String>, // model_id
    i64,            // attempts
);

/// Datasets whose API budget is compared while the server is busy.
const API_SAMPLE: usize = 50;

const FINAL: [&str; 3] = ["succeeded", "failed", "cancelled"];

/// Open the file read-only (the server, if running, keeps writing).
pub async fn open_read_only(db: &Path) -> SqliteConnection {
    SqliteConnection::connect_with(
        &SqliteConnectOptions::new()
            .filename(db)
            .read_only(true)
            .busy_timeout(std::time::Duration::from_secs(30)),
    )
    .await
    .expect("open the database read-only")
}

/// The number of runs (`attempts`) of every job.
pub async fn attempts(db: impl Into<Store>) -> HashMap<String, i64> {
    let rows: Vec<(String, i64)> = in_snapshot!(db.into(), |tx, pg| {
        sqlx::query_as("SELECT id, attempts FROM jobs")
            .fetch_all(&mut *tx)
            .await
            .unwrap()
    });
    rows.into_iter().collect()
}

/// Check every invariant; returns the violations (empty when all hold) and
/// the counts. `api` is `(client, base url, owner key)` of a live server
/// whose budget answers are compared with the ledger; with `quiet` (no
/// request or job in progress) they must match it exactly.
pub async fn check(
    db: impl Into<Store>,
    exp: &mut Expectations,
    api: Option<(&reqwest::Client, &str, &str)>,
    quiet: bool,
) -> (Vec<String>, Checked) {
    let mut v = Vec::new();
    let mut counts = Checked::default();
    // One read transaction: a consistent snapshot of the whole database.
    in_snapshot!(db.into(), |tx, pg| {
        // Datasets and their rows.
        let datasets: Vec<(String, String, i64, i64, String)> =
            sqlx::query_as("SELECT id, name, n_rows, n_literals, state FROM datasets ORDER BY seq")
                .fetch_all(&mut *tx)
                .await
                .unwrap();
        // The bytes are in chunks on both backends (laid end to end here,
        // in order).
        let headers: Vec<(String, i64, i64)> =
            sqlx::query_as("SELECT dataset_id, n_rows, n_cols FROM dataset_rows")
                .fetch_all(&mut *tx)
                .await
                .unwrap();
        let chunks: Vec<(String, String, Vec<u8>)> = sqlx::query_as(
            "SELECT dataset_id, part, bytes FROM dataset_row_chunks ORDER BY dataset_id, part, idx",
        )
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        let mut parts: HashMap<(String, String), Vec<u8>> = HashMap::new();
        for (id, part, bytes) in chunks {
            parts.entry((id, part)).or_default().extend(bytes);
        }
        let mut rows: HashMap<String, (i64, i64, [u8; 32])> = HashMap::new();
        for (id, n, c) in headers {
            let mut part = |p: &str| {
                parts
                    .remove(&(id.clone(), p.to_string()))
                    .unwrap_or_default()
            };
            let (f, l) = (part("features"), part("labels"));
            rows.insert(id, (n, c, digest(&f, &l)));
        }
        for (id, part) in parts.keys() {
            v.push(format!("chunks of {part} of {id} without a rows header"));
        }
        let mut names = HashSet::new();
        let ids: HashSet<&str> = datasets.iter().map(|d| d.0.as_str()).collect();
        for (id, name, n_rows, n_literals, state) in &datasets {
            counts.datasets += 1;
            if !names.insert(name.clone()) {
                v.push(format!("upload {name} stored twice"));
            }
            let Some(want) = exp.uploads.get(name) else {
                v.push(format!("dataset {id} ({name}) was never uploaded"));
                continue;
            };
            if state != "ready" {
                v.push(format!("dataset {id} is {state}; the test deletes nothing"));
            }
            match rows.get(id) {
                None => v.push(format!("dataset {id} ({name}) has no rows")),
                Some((n, c, d)) => {
                    if (*n, *c, *d) != (want.n_rows, want.n_cols, want.digest)
                        || (*n_rows, *n_literals) != (want.n_rows, want.n_cols)
                    {
                        v.push(format!(
                        "dataset {id} ({name}) is not what was uploaded: {n_rows} rows in the record, {n} stored, {} sent",
                        want.n_rows
                    ));
                    }
                }
            }
        }
        for id in rows.keys() {
            if !ids.contains(id.as_str()) {
                v.push(format!("rows of {id} without a dataset record"));
            }
        }
        for id in &exp.acked_datasets {
            if !ids.contains(id.as_str()) {
                v.push(format!("acknowledged dataset {id} is missing"));
            }
        }

        // Jobs, the ledger and models.
        let jobs: Vec<JobRow> = sqlx::query_as(
        "SELECT id, dataset_id, state, epsilon_units, delta_units, started_at, model_id, attempts FROM jobs ORDER BY seq",
    )
    .fetch_all(&mut *tx)
    .await
    .unwrap();
        let ledger: Vec<(String, String, Option<String>, i64, i64)> = sqlx::query_as(
            "SELECT dataset_id, kind, job_id, epsilon_units, delta_units FROM ledger ORDER BY seq",
        )
        .fetch_all(&mut *tx)
        .await
        .unwrap();
        // Each entry's privacy-loss kind and rho (in ledger order, like
        // `ledger`) and each dataset's accounting, for the filter's rule.
        let losses: Vec<(Option<String>, Option<i64>)> =
            sqlx::query_as("SELECT loss_kind, rho_units FROM ledger ORDER BY seq")
                .fetch_all(&mut *tx)
                .await
                .unwrap();
        let accounting: HashMap<String, String> =
            sqlx::query_as::<_, (String, String)>("SELECT id, accounting FROM datasets")
                .fetch_all(&mut *tx)
                .await
                .unwrap()
                .into_iter()
                .collect();
        let models: Vec<(String, String)> = sqlx::query_as("SELECT id, job_id FROM models")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        let models: HashMap<&str, &str> = models
            .iter()
            .map(|(m, j)| (j.as_str(), m.as_str()))
            .collect();
        let mut entries: HashMap<&str, Vec<(&str, &str, i64, i64)>> = HashMap::new();
        for (dataset, kind, job, e, d) in &ledger {
            if let Some(job) = job {
                entries.entry(job.as_str()).or_default().push((
                    kind.as_str(),
                    dataset.as_str(),
                    *e,
                    *d,
                ));
            }
        }
        let job_ids: HashSet<&str> = jobs.iter().map(|j| j.0.as_str()).collect();
        for job in entries.keys() {
            if !job_ids.contains(job) {
                v.push(format!(
                    "ledger entries for a job that does not exist: {job}"
                ));
            }
        }
        for id in &exp.acked_jobs {
            if !job_ids.contains(id.as_str()) {
                v.push(format!("acknowledged job {id} is missing"));
            }
        }
        for (id, dataset, state, epsilon, delta, started_at, model_id, attempts) in &jobs {
            counts.jobs += 1;
            let mine = entries.get(id.as_str()).cloned().unwrap_or_default();
            let charges: Vec<_> = mine.iter().filter(|e| e.0 == "charge").collect();
            let refunds: Vec<_> = mine.iter().filter(|e| e.0 == "refund").collect();
            counts.charges += charges.len();
            counts.refunds += refunds.len();
            if charges.len() != 1 {
                v.push(format!("job {id} has {} charges", charges.len()));
            }
            for c in charges.iter().chain(&refunds) {
                if (c.1, c.2, c.3) != (dataset.as_str(), *epsilon, *delta) {
                    v.push(format!("job {id}: ledger entry {c:?} is not its charge"));
                }
            }
            if refunds.len() > 1 {
                v.push(format!("job {id} has {} refunds", refunds.len()));
            }
            if !refunds.is_empty() && (state != "cancelled" || started_at.is_some()) {
                v.push(format!(
                    "job {id} was refunded but is {state}, started {started_at:?}"
                ));
            }
            if started_at.is_none() && *attempts > 0 {
                v.push(format!("job {id} ran without a start time"));
            }
            let model = models.get(id.as_str()).copied();
            match (state.as_str(), model, model_id.as_deref()) {
                ("succeeded", Some(m), Some(mid)) if m == mid => {}
                ("succeeded", ..) => v.push(format!(
                    "succeeded job {id}: model {model_id:?}, stored {model:?}"
                )),
                (_, None, None) => {}
                _ => v.push(format!(
                    "job {id} is {state} with model {model_id:?}, stored {model:?}"
                )),
            }
            if let Some((was, was_model)) = exp.final_seen.get(id) {
                if (was, was_model) != (state, model_id) {
                    v.push(format!(
                        "job {id} was {was} ({was_model:?}), is now {state} ({model_id:?})"
                    ));
                }
            } else if FINAL.contains(&state.as_str()) {
                exp.final_seen
                    .insert(id.clone(), (state.clone(), model_id.clone()));
            }
            if FINAL.contains(&state.as_str()) {
                counts.final_jobs += 1;
            }
        }

        // Budgets: integer sums of the ledger's units, and the filter's rule
        // from the library. The API is asked about every dataset when quiet,
        // else about the latest ones (the ones in use), to keep a long run's
        // checks short.
        let api_from = if quiet {
            0
        } else {
            datasets.len().saturating_sub(API_SAMPLE)
        };
        for (i, (id, ..)) in datasets.iter().enumerate() {
            let mut total = None;
            let (mut e, mut d) = (0i64, 0i64);
            let mut sums = Some(Charged::new());
            for ((dataset, kind, _, ke, kd), (loss_kind, rho)) in ledger.iter().zip(&losses) {
                if dataset != id {
                    continue;
                }
                let amount = Amount {
                    epsilon: EpsilonUnits::from_units(*ke),
                    delta: DeltaUnits::from_units(*kd),
                };
                let charge = match loss_kind {
                    Some(k) => Charge {
                        kind: LossKind::parse(k).expect("a known loss kind"),
                        epsilon: amount.epsilon,
                        delta: amount.delta,
                        rho: rho.map(RhoUnits::from_units),
                    },
                    None => Charge::legacy(amount).expect("an old entry counts as it did"),
                };
                match kind.as_str() {
                    "total" => total = Some((*ke, *kd)),
                    "charge" => {
                        (e, d) = (e + ke, d + kd);
                        sums = sums.and_then(|s| s.plus(&charge));
                    }
                    "refund" => {
                        (e, d) = (e - ke, d - kd);
                        sums = sums.and_then(|s| s.minus(&charge));
                    }
                    other => v.push(format!("ledger kind {other}")),
                }
            }
            let Some((te, td)) = total else {
                v.push(format!("dataset {id} has no total"));
                continue;
            };
            let rule = match accounting.get(id).map(String::as_str) {
                Some("zcdp-filter") => Accounting::ZcdpFilter,
                _ => Accounting::Basic,
            };
            let total_amount = Amount {
                epsilon: EpsilonUnits::from_units(te),
                delta: DeltaUnits::from_units(td),
            };
            if !sums.is_some_and(|s| s.within(total_amount, rule)) {
                v.push(format!(
                    "dataset {id} overspent under {}: charged ({e}, {d} units, {sums:?}) of ({te}, {td})",
                    rule.as_str(),
                ));
            }
            if rule == Accounting::Basic && (e > te || d > td) {
                v.push(format!(
                    "dataset {id} overspent: charged ({e}, {d}) units of ({te}, {td})"
                ));
            }
            let reserved: i64 = jobs
                .iter()
                .filter(|j| &j.1 == id && j.2 == "queued" && j.5.is_none())
                .map(|j| j.3)
                .sum();
            if let Some((client, url, key)) = api.filter(|_| i >= api_from) {
                let b: serde_json::Value = client
                    .get(format!("{url}/v1/datasets/{id}/budget"))
                    .bearer_auth(key)
                    .send()
                    .await
                    .expect("budget request")
                    .json()
                    .await
                    .expect("budget JSON");
                // The API shows each amount as the double nearest to its
                // units, so the nearest units read it back exactly.
                let f = |p: &str, c: &str| {
                    b[p][c]
                        .as_f64()
                        .and_then(|x| {
                            let units = i128::from(EpsilonUnits::nearest(x.abs()).ok()?.units());
                            Some(if x < 0.0 { -units } else { units })
                        })
                        // A missing or unreadable amount matches nothing.
                        .unwrap_or(i128::MIN / 4)
                };
                let (e, te, reserved) = (i128::from(e), i128::from(te), i128::from(reserved));
                // The server may have admitted or finished jobs since the
                // snapshot, so only relations that always hold are compared.
                let charged_api = f("spent", "epsilon") + f("reserved", "epsilon");
                // Under the filter, basic sums may exceed the total (the rho
                // condition admitted them); its own rule was checked above.
                let basic = rule == Accounting::Basic;
                if f("total", "epsilon") != te
                    || b["accounting"].as_str() != Some(rule.as_str())
                    || (basic && charged_api > te)
                    || (basic && f("spent", "epsilon") > te)
                    || (basic && f("remaining", "epsilon") < 0)
                    || f("total", "epsilon") - charged_api != f("remaining", "epsilon")
                    || (quiet && (charged_api != e || f("reserved", "epsilon") != reserved))
                {
                    v.push(format!(
                    "dataset {id}: API budget {b} vs ledger charged {e} of {te} (reserved {reserved})"
                ));
                }
            }
        }
    });
    (v, counts)
}

/// Poll the file until no job is queued or running (whichever process owns
/// them), for at most `within`; returns how many are still open (0 = all
/// final).
pub async fn wait_until_no_job_is_open(db: impl Into<Store>, within: std::time::Duration) -> i64 {
    let store = db.into();
    let deadline = std::time::Instant::now() + within;
    loop {
        let open: i64 = in_snapshot!(store.clone(), |tx, pg| {
            sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running')")
                .fetch_one(&mut *tx)
                .await
                .unwrap()
        });
        if open == 0 || std::time::Instant::now() >= deadline {
            return open;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
