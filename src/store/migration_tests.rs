//! Migration 0009 (exact amounts) on databases written before it, on both
//! backends: a ledger of totals, charges of each kind, a refund and an entry
//! older than the loss descriptions keeps its budget (charges rounded up,
//! totals read as written or rounded down), the ledger stays append-only,
//! and every old double converts to exactly the units the Rust conversions
//! give (`privacy::budget_units`), which the SQL computes with Dekker's
//! two-product. PostgreSQL runs when `PRIVBOOST_TEST_POSTGRES_URL` is set.

use rand::{RngExt, SeedableRng};

use super::Db;
use super::jobs::{self, NewJob, Submitted};
use super::ledger;
use super::testing::empty_postgres;
use crate::privacy::budget_units::{DeltaUnits, EpsilonUnits, RhoUnits, Units};
use crate::privacy::filter::{Charge, LossKind};

/// The last version before exact amounts.
const BEFORE: i64 = 8;

/// A bound value of an old row.
#[derive(Clone, Copy)]
enum Arg<'a> {
    Text(&'a str),
    Real(f64),
    Null,
}

/// Run one statement with `args` bound to `$1, $2, ...`.
async fn exec(db: &Db, sql: &str, args: &[Arg<'_>]) {
    super::with_db!(db, |pool, pg| {
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
        for a in args {
            q = match *a {
                Arg::Text(t) => q.bind(t.to_owned()),
                Arg::Real(x) => q.bind(x),
                Arg::Null => q.bind(None::<String>),
            };
        }
        q.execute(pool)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    })
}

/// A store at version 8 on SQLite (in `dir`).
async fn sqlite_at_8(dir: &std::path::Path) -> Db {
    Db::Sqlite(super::testing::sqlite_at(dir, BEFORE).await)
}

/// A store at version 8 on PostgreSQL, if one is configured.
async fn postgres_at_8(test: &str) -> Option<Db> {
    let pool = empty_postgres(test, 2).await?;
    sqlx::migrate!("./migrations/postgres")
        .run_to(BEFORE, &pool)
        .await
        .unwrap();
    Some(Db::Postgres(pool))
}

/// Apply the remaining migrations (0009 and any later).
async fn migrate(db: &Db) {
    match db {
        Db::Sqlite(pool) => sqlx::migrate!("./migrations").run(pool).await.unwrap(),
        Db::Postgres(pool) => sqlx::migrate!("./migrations/postgres")
            .run(pool)
            .await
            .unwrap(),
    }
}

const T: Arg = Arg::Text("2026-01-01T00:00:00Z");

/// A key and a dataset (`accounting`) written at version 8.
async fn old_dataset(db: &Db, id: &str, accounting: &str) {
    exec(
        db,
        "INSERT INTO api_keys (id, role, name, key_hash, created_at) VALUES ($1, 'owner', 'o', $2, $3)",
        &[Arg::Text(&format!("key_{id}")), Arg::Text(&format!("hash_{id}")), T],
    )
    .await;
    exec(
        db,
        "INSERT INTO datasets (id, owner_id, name, schema_json, n_rows, n_literals, state, created_at, accounting) VALUES ($1, $2, 'd', '{}', 1, 1, 'ready', $3, $4)",
        &[Arg::Text(id), Arg::Text(&format!("key_{id}")), T, Arg::Text(accounting)],
    )
    .await;
}

/// A ledger entry written at version 8 (doubles, and the loss as JSON).
async fn old_entry(
    db: &Db,
    dataset: &str,
    kind: &str,
    job: Option<&str>,
    (epsilon, delta): (f64, f64),
    loss_json: Option<&str>,
) {
    exec(
        db,
        "INSERT INTO ledger (dataset_id, kind, job_id, epsilon, delta, created_at, created_by, loss_json) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7)",
        &[
            Arg::Text(dataset),
            Arg::Text(kind),
            job.map_or(Arg::Null, Arg::Text),
            Arg::Real(epsilon),
            Arg::Real(delta),
            T,
            loss_json.map_or(Arg::Null, Arg::Text),
        ],
    )
    .await;
}

/// A job written at version 8.
async fn old_job(db: &Db, id: &str, dataset: &str, state: &str, started: bool, (e, d): (f64, f64)) {
    exec(
        db,
        "INSERT INTO jobs (id, dataset_id, submitted_by, state, params_json, tau, epsilon, delta, created_at, started_at) VALUES ($1, $2, $3, $4, '{}', 1, $5, $6, $7, $8)",
        &[
            Arg::Text(id),
            Arg::Text(dataset),
            Arg::Text(&format!("key_{dataset}")),
            Arg::Text(state),
            Arg::Real(e),
            Arg::Real(d),
            T,
            if started { T } else { Arg::Null },
        ],
    )
    .await;
}

fn eps(units: i64) -> EpsilonUnits {
    EpsilonUnits::from_units(units)
}

/// Two old datasets with every kind of entry, migrated: budgets by hand.
async fn an_old_ledger_keeps_its_budget(db: Db) {
    // Basic: total (1, 1e-6), then 0.7; a pure charge of 0.01 (done), an
    // approx (0.3, 1e-7) (done), an entry from before the loss column
    // (0.1, 0) (queued: reserved), a pure 0.2 refunded.
    old_dataset(&db, "ds_basic", "basic").await;
    old_entry(&db, "ds_basic", "total", None, (1.0, 1e-6), None).await;
    for (job, state, started, amount, loss) in [
        (
            "job_1",
            "succeeded",
            true,
            (0.01, 0.0),
            Some(r#"{"kind":"pure","epsilon":0.01}"#),
        ),
        (
            "job_2",
            "succeeded",
            true,
            (0.3, 1e-7),
            Some(r#"{"kind":"approx","epsilon":0.3,"delta":1e-7}"#),
        ),
        ("job_3", "queued", false, (0.1, 0.0), None),
        (
            "job_4",
            "cancelled",
            false,
            (0.2, 0.0),
            Some(r#"{"kind":"pure","epsilon":0.2}"#),
        ),
    ] {
        old_job(&db, job, "ds_basic", state, started, amount).await;
        old_entry(&db, "ds_basic", "charge", Some(job), amount, loss).await;
    }
    old_entry(
        &db,
        "ds_basic",
        "refund",
        Some("job_4"),
        (0.2, 0.0),
        Some(r#"{"kind":"pure","epsilon":0.2}"#),
    )
    .await;
    old_entry(&db, "ds_basic", "total", None, (0.7, 1e-6), None).await;
    // Filter: total (1, 1e-6); a zCDP charge (rho 0.01, charged (0.6,
    // 1e-7)) and a pure evaluation of 0.05.
    old_dataset(&db, "ds_filter", "zcdp-filter").await;
    old_entry(&db, "ds_filter", "total", None, (1.0, 1e-6), None).await;
    old_job(&db, "job_5", "ds_filter", "succeeded", true, (0.6, 1e-7)).await;
    old_entry(
        &db,
        "ds_filter",
        "charge",
        Some("job_5"),
        (0.6, 1e-7),
        Some(r#"{"kind":"zcdp","rho":0.01,"epsilon":0.6,"delta":1e-7}"#),
    )
    .await;
    exec(&db, "INSERT INTO models (id, job_id, dataset_id, model_json, created_at) VALUES ('m_5', 'job_5', 'ds_filter', '{}', $1)", &[T]).await;
    exec(&db, "INSERT INTO evaluations (id, model_id, dataset_id, requested_by, epsilon, state, created_at) VALUES ('eval_1', 'm_5', 'ds_filter', 'key_ds_filter', $1, 'done', $2)", &[Arg::Real(0.05), T]).await;
    exec(&db, "INSERT INTO evaluations (id, model_id, dataset_id, requested_by, epsilon, state, created_at, public) VALUES ('eval_2', 'm_5', 'ds_filter', 'key_ds_filter', 0, 'done', $1, 1)", &[T]).await;
    old_entry(
        &db,
        "ds_filter",
        "charge",
        Some("eval_1"),
        (0.05, 0.0),
        Some(r#"{"kind":"pure","epsilon":0.05}"#),
    )
    .await;
    if let Db::Sqlite(_) = db {
        // A job whose seq was used and then freed: AUTOINCREMENT must not
        // hand 41 out again after the table is rebuilt.
        exec(&db, "INSERT INTO jobs (seq, id, dataset_id, submitted_by, state, params_json, tau, epsilon, delta, created_at) VALUES (41, 'job_gone', 'ds_basic', 'key_ds_basic', 'failed', '{}', 1, 0.5, 0, $1)", &[T]).await;
        exec(&db, "DELETE FROM jobs WHERE id = 'job_gone'", &[]).await;
    }

    migrate(&db).await;

    // Basic. The doubles 0.01, 0.1 and 0.2 are above their decimals (by
    // 2.1e-19, 5.6e-18, 1.1e-17), so those charges gain a unit; 0.3 and
    // 1e-7 are below theirs and convert exactly; the totals 0.7 and 1e-6
    // read back as the decimals the owner wrote.
    let b = ledger::budget(&db, "ds_basic").await.unwrap();
    assert_eq!(b.total.epsilon, eps(700_000_000_000));
    assert_eq!(b.total.delta, DeltaUnits::from_units(1_000_000_000_000));
    assert_eq!(b.reserved.epsilon, eps(100_000_000_001));
    assert_eq!(b.spent.epsilon, eps(10_000_000_001 + 300_000_000_000));
    assert_eq!(b.spent.delta, DeltaUnits::from_units(100_000_000_000));
    // 0.7 - 0.41 = 0.29 in doubles; two units less here, never more.
    assert_eq!(b.remaining.epsilon, eps(289_999_999_998));
    assert!(b.remaining.epsilon.to_f64() <= 0.7 - (0.01 + 0.3 + 0.1));
    let entries = ledger::entries(&db, "ds_basic", 0, 100)
        .await
        .unwrap()
        .items;
    let losses: Vec<Option<LossKind>> = entries.iter().map(|e| e.loss.map(|c| c.kind)).collect();
    use LossKind::{Approx, Pure};
    assert_eq!(
        losses,
        [
            None,
            Some(Pure),
            Some(Approx),
            None,
            Some(Pure),
            Some(Pure),
            None
        ],
        "old entries keep their descriptions; the one from before them has none"
    );
    assert_eq!(
        entries[1].loss.unwrap().rho,
        RhoUnits::of_pure(eps(10_000_000_001))
    );
    assert_eq!(entries[2].loss.unwrap().rho, None);

    // Filter: rho 0.01 (the double, above its decimal: a unit more) plus
    // the pure 0.05's (0.05 + 2.8e-18 rounds up to 50_000_000_001 units,
    // whose square over 2 is 1_250_000_000.05 rounded up).
    let b = ledger::budget(&db, "ds_filter").await.unwrap();
    let f = b.filter.unwrap();
    assert_eq!(
        f.rho_charged,
        Some(RhoUnits::from_units(10_000_000_001 + 1_250_000_001))
    );
    assert!(f.rho_charged.unwrap().to_f64() >= 0.01 + 0.05 * 0.05 / 2.0);
    assert!(!f.pure_only);
    assert_eq!(b.spent.epsilon, eps(600_000_000_000 + 50_000_000_001));
    assert_eq!(b.spent.delta, DeltaUnits::from_units(100_000_000_000));

    // The jobs' and evaluations' copies of the charges, as in the ledger.
    super::with_db!(&db, |pool, pg| {
        let jobs: Vec<(String, i64, i64)> =
            sqlx::query_as("SELECT id, epsilon_units, delta_units FROM jobs ORDER BY id")
                .fetch_all(pool)
                .await
                .unwrap();
        let expected = [
            ("job_1", 10_000_000_001, 0),
            ("job_2", 300_000_000_000, 100_000_000_000),
            ("job_3", 100_000_000_001, 0),
            ("job_4", 200_000_000_001, 0),
            ("job_5", 600_000_000_000, 100_000_000_000),
        ];
        let jobs: Vec<(&str, i64, i64)> =
            jobs.iter().map(|(i, e, d)| (i.as_str(), *e, *d)).collect();
        assert_eq!(jobs, expected);
        let evals: Vec<(String, i64)> =
            sqlx::query_as("SELECT id, epsilon_units FROM evaluations ORDER BY id")
                .fetch_all(pool)
                .await
                .unwrap();
        assert_eq!(
            evals,
            [
                ("eval_1".to_owned(), 50_000_000_001),
                ("eval_2".to_owned(), 0)
            ]
        );
        // Still append-only, in the database.
        for sql in ["UPDATE ledger SET epsilon_units = 0", "DELETE FROM ledger"] {
            let err = sqlx::query(sql).execute(pool).await.unwrap_err();
            assert!(err.to_string().contains("append-only"), "{sql}: {err}");
        }
        // The old columns are gone.
        assert!(
            sqlx::query("SELECT epsilon FROM ledger")
                .execute(pool)
                .await
                .is_err()
        );
        assert!(
            sqlx::query("SELECT loss_json FROM ledger")
                .execute(pool)
                .await
                .is_err()
        );
    });

    // Admission goes on, in units, after the old entries.
    let charge = Charge::pure(EpsilonUnits::nearest(0.25).unwrap()).unwrap();
    let new = NewJob {
        dataset_id: "ds_basic",
        submitted_by: "key_ds_basic",
        params_json: "{}",
        tau: 1,
        charge,
        max_active_per_key: 100,
    };
    let respond = |_: &jobs::JobRecord| super::idempotency::StoredResponse {
        status: 202,
        location: None,
        body: String::new(),
    };
    let Submitted::New(job) = jobs::submit(&db, new, None, respond).await.unwrap() else {
        panic!("0.25 fits in the 0.29 left")
    };
    let entries = ledger::entries(&db, "ds_basic", 0, 100)
        .await
        .unwrap()
        .items;
    assert!(entries[entries.len() - 1].seq > entries[entries.len() - 2].seq);
    assert_eq!(
        entries.last().unwrap().job_id.as_deref(),
        Some(job.id.as_str())
    );
    if let Db::Sqlite(pool) = &db {
        let seq: i64 = sqlx::query_scalar("SELECT seq FROM jobs WHERE id = $1")
            .bind(&job.id)
            .fetch_one(pool)
            .await
            .unwrap();
        assert!(
            seq > 41,
            "the jobs' AUTOINCREMENT counter survived the rebuild: {seq}"
        );
    }
    let b = ledger::budget(&db, "ds_basic").await.unwrap();
    assert_eq!(b.remaining.epsilon, eps(39_999_999_998));
    db.close().await;
}

#[tokio::test]
async fn an_old_sqlite_ledger_keeps_its_budget_within_the_rounding_directions() {
    let dir = tempfile::tempdir().unwrap();
    an_old_ledger_keeps_its_budget(sqlite_at_8(dir.path()).await).await;
}

#[tokio::test]
async fn an_old_postgres_ledger_keeps_its_budget_within_the_rounding_directions() {
    if let Some(db) = postgres_at_8("migration 0009").await {
        an_old_ledger_keeps_its_budget(db).await;
    }
}

/// A random double for an old amount below `max`: a short decimal (what
/// clients sent), or any double (what a learner computed).
fn old_double(rng: &mut rand::rngs::StdRng, max: f64) -> f64 {
    loop {
        let x = if rng.random_bool(0.5) {
            let digits: u32 = rng.random_range(1..=7);
            let mantissa = rng.random_range(0..10u64.pow(digits));
            format!("{mantissa}e-{}", rng.random_range(0..=20))
                .parse::<f64>()
                .unwrap()
        } else {
            let exponent: i32 = rng.random_range(-70..=10);
            rng.random_range(1.0..2.0) * 2f64.powi(exponent)
        };
        if x < max {
            return x;
        }
    }
}

/// The units migration 0009 converted an old total to: the grid decimal
/// nearest to it if that reads back as the double, else rounded down (0
/// when a positive total is below one unit). Not `Units::total` since issue
/// 26: that now takes the *smallest* decimal reading back, which differs
/// for deltas of 2^-7 or more (docs/privacy.md, "Exact amounts"); an
/// applied migration cannot change, so the test pins what it does.
fn total_units<S: crate::privacy::budget_units::Scale>(x: f64) -> i64 {
    let scale: f64 = format!("1e{}", S::DIGITS).parse().unwrap();
    let candidate = (x * scale).round();
    if candidate >= 1.0 && candidate <= S::CAP as f64 && candidate / scale == x {
        return candidate as i64;
    }
    Units::<S>::down(x).unwrap().units()
}

/// Every old amount converts in SQL to exactly what the Rust conversions
/// give: charges (epsilon, delta, a zCDP rho in the loss JSON, a pure
/// charge's rho from its epsilon units) up, totals as read or down.
async fn old_amounts_convert_as_in_rust(db: Db) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(14);
    old_dataset(&db, "ds", "zcdp-filter").await;
    let mut expected = Vec::new();
    for i in 0..400 {
        let epsilon = old_double(&mut rng, 1000.0);
        let delta = old_double(&mut rng, 1.0);
        let (kind, loss_json, e, d, rho) = match i % 4 {
            0 => (
                "total",
                None,
                total_units::<crate::privacy::budget_units::EpsilonScale>(epsilon),
                total_units::<crate::privacy::budget_units::DeltaScale>(delta),
                None,
            ),
            1 => {
                let e = EpsilonUnits::up(epsilon).unwrap();
                let json = serde_json::json!({"kind": "pure", "epsilon": epsilon}).to_string();
                (
                    "charge",
                    Some(json),
                    e.units(),
                    0,
                    RhoUnits::of_pure(e).map(RhoUnits::units),
                )
            }
            2 => {
                let rho = old_double(&mut rng, 1000.0);
                let json = serde_json::json!({"kind": "zcdp", "rho": rho, "epsilon": epsilon, "delta": delta}).to_string();
                (
                    "charge",
                    Some(json),
                    EpsilonUnits::up(epsilon).unwrap().units(),
                    DeltaUnits::up(delta).unwrap().units(),
                    Some(RhoUnits::up(rho).unwrap().units()),
                )
            }
            _ => {
                let json =
                    serde_json::json!({"kind": "approx", "epsilon": epsilon, "delta": delta})
                        .to_string();
                (
                    "charge",
                    Some(json),
                    EpsilonUnits::up(epsilon).unwrap().units(),
                    DeltaUnits::up(delta).unwrap().units(),
                    None,
                )
            }
        };
        let delta = if i % 4 == 1 { 0.0 } else { delta };
        let job = format!("job_{i}");
        old_entry(
            &db,
            "ds",
            kind,
            (kind != "total").then_some(job.as_str()),
            (epsilon, delta),
            loss_json.as_deref(),
        )
        .await;
        expected.push((epsilon, delta, e, d, rho));
    }
    migrate(&db).await;
    super::with_db!(&db, |pool, pg| {
        let rows: Vec<(i64, i64, Option<i64>)> =
            sqlx::query_as("SELECT epsilon_units, delta_units, rho_units FROM ledger ORDER BY seq")
                .fetch_all(pool)
                .await
                .unwrap();
        assert_eq!(rows.len(), expected.len());
        for (row, (epsilon, delta, e, d, rho)) in rows.iter().zip(&expected) {
            assert_eq!(*row, (*e, *d, *rho), "epsilon {epsilon:e}, delta {delta:e}");
        }
    });
    db.close().await;
}

#[tokio::test]
async fn old_sqlite_amounts_convert_exactly_as_the_rust_conversions() {
    let dir = tempfile::tempdir().unwrap();
    old_amounts_convert_as_in_rust(sqlite_at_8(dir.path()).await).await;
}

#[tokio::test]
async fn old_postgres_amounts_convert_exactly_as_the_rust_conversions() {
    if let Some(db) = postgres_at_8("migration 0009 conversions").await {
        old_amounts_convert_as_in_rust(db).await;
    }
}

/// The unit conversion the test expects is the one documented: spot-check
/// the helper against hand values, so a wrong helper cannot hide a wrong
/// migration.
#[test]
fn the_expected_values_are_the_documented_ones() {
    assert_eq!(
        total_units::<crate::privacy::budget_units::EpsilonScale>(0.7),
        700_000_000_000
    );
    assert_eq!(
        total_units::<crate::privacy::budget_units::DeltaScale>(1e-20),
        0
    );
    assert_eq!(EpsilonUnits::up(0.01).unwrap().units(), 10_000_000_001);
}
