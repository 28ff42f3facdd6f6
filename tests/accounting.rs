//! Accounting across jobs over HTTP: a dataset chosen to use the zCDP
//! privacy filter shows its budget in rho terms, admits more small jobs
//! than basic composition, records each charge's privacy-loss description,
//! and refuses what it cannot account for before charging.

mod common;

use common::{SMALL_SCHEMA, TestServer, expect_status, small_csv};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// Upload the small synthetic set with a total (1, 1e-6) and `accounting`.
async fn upload(s: &TestServer, key: &str, accounting: Option<&str>) -> reqwest::Response {
    // The same rows under both accountings, side by side: the owner means
    // the copies (a second upload of the same content is refused otherwise).
    let mut extra = vec![("delta", "1e-6"), ("allow_duplicate", "true")];
    if let Some(a) = accounting {
        extra.push(("accounting", a));
    }
    s.upload_form(
        key,
        "small",
        "1",
        SMALL_SCHEMA,
        small_csv(200).into_bytes(),
        &extra,
    )
    .await
}

async fn budget(s: &TestServer, key: &str, dataset: &str, query: &str) -> Value {
    expect_status(
        s.get(key, &format!("/v1/datasets/{dataset}/budget{query}"))
            .await,
        StatusCode::OK,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_dataset_counts_in_rho_and_fits_more_small_jobs() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let body = expect_status(
        upload(&s, &owner, Some("zcdp-filter")).await,
        StatusCode::CREATED,
    )
    .await;
    assert_eq!(body["dataset"]["accounting"], "zcdp-filter");
    let filter = body["dataset"]["id"].as_str().unwrap().to_owned();
    let basic = expect_status(upload(&s, &owner, None).await, StatusCode::CREATED).await;
    assert_eq!(basic["dataset"]["accounting"], "basic");
    let basic = basic["dataset"]["id"].as_str().unwrap().to_owned();

    // How many pure epsilon = 0.01 jobs fit: 349 under the filter (rho 5e-5
    // each against 0.0174689), exactly 100 under basic (issue 15: the
    // amounts are integer units, so 100 x 0.01 is exactly the total 1).
    let b = budget(&s, &owner, &filter, "?job_epsilon=0.01").await;
    assert_eq!(b["accounting"], "zcdp-filter");
    let rho_total = b["filter"]["rho_total"].as_f64().unwrap();
    assert!((rho_total - 0.0174689).abs() < 1e-7, "{b}");
    assert_eq!(b["fits"]["jobs"], 349, "{b}");
    let bb = budget(&s, &owner, &basic, "?job_epsilon=0.01").await;
    assert_eq!(bb["accounting"], "basic");
    assert!(bb.get("filter").is_none(), "{bb}");
    assert_eq!(bb["fits"]["jobs"], 100, "{bb}");

    // A pure job and a zCDP job (dp-linear with delta > 0) are admitted and
    // their loss descriptions land in the ledger.
    for body in [
        json!({"dataset_id": filter, "epsilon": 0.05}),
        json!({"dataset_id": filter, "algorithm": "dp-linear", "epsilon": 0.3, "delta": 1e-7}),
    ] {
        let job = expect_status(
            s.post(&owner, "/v1/jobs", &body).await,
            StatusCode::ACCEPTED,
        )
        .await;
        s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    }
    let ledger = s.ledger(&owner, &filter).await;
    let losses: Vec<&Value> = ledger
        .iter()
        .filter(|e| e["kind"] == "charge")
        .map(|e| &e["loss"])
        .collect();
    assert_eq!(losses[0]["kind"], "pure");
    assert_eq!(losses[0]["epsilon"], 0.05);
    assert_eq!(losses[1]["kind"], "zcdp");
    let rho = losses[1]["rho"].as_f64().unwrap();
    assert!(rho > 0.0);
    assert_eq!(ledger[0]["loss"], Value::Null, "a total has no loss");
    let b = budget(&s, &owner, &filter, "").await;
    let charged = b["filter"]["rho_charged"].as_f64().unwrap();
    assert!(
        (charged - (0.05f64 * 0.05 / 2.0 + rho)).abs() < 1e-12,
        "{b}"
    );
    assert_eq!(b["filter"]["pure_only"], false);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_filter_cannot_account_for_is_refused_before_any_charge() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let bad = expect_status(
        upload(&s, &owner, Some("renyi")).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(bad["errors"][0]["field"], "accounting", "{bad}");
    let body = expect_status(
        upload(&s, &owner, Some("zcdp-filter")).await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let before = s.ledger(&owner, &dataset).await;

    // LazyBB with delta > 0 and enough rounds for advanced composition to
    // beat basic (99 rounds at delta 1e-7: more than 2 ln(1e7) = 32) has no
    // zCDP description.
    let refused = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.5, "delta": 1e-7, "rounds": 99}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(refused["errors"][0]["field"], "delta", "{refused}");
    // More than the filter holds once two pure jobs of 0.6 would exceed
    // both conditions: the first fits (basic: 0.6 <= 1), the second not
    // (basic 1.2 > 1; rho 0.36 > 0.0175): 409 with the filter's figures.
    let first = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.6}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    s.wait_job(&owner, first["id"].as_str().unwrap()).await;
    let after_first = s.ledger(&owner, &dataset).await;
    assert_eq!(after_first.len(), before.len() + 1);
    let over = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.6}),
        )
        .await,
        StatusCode::CONFLICT,
    )
    .await;
    assert_eq!(over["accounting"], "zcdp-filter", "{over}");
    assert!(
        over["filter"]["rho_remaining"].as_f64().unwrap() < 0.0,
        "{over}"
    );
    assert_eq!(
        s.ledger(&owner, &dataset).await,
        after_first,
        "a refusal writes nothing"
    );

    // The budget route's job-size query is checked.
    for q in [
        "?job_epsilon=0",
        "?job_epsilon=0.1&job_rho=0.1",
        "?job_size=1",
    ] {
        let r = s
            .get(&owner, &format!("/v1/datasets/{dataset}/budget{q}"))
            .await;
        assert!(
            r.status() == StatusCode::UNPROCESSABLE_ENTITY || r.status() == StatusCode::BAD_REQUEST,
            "{q}: {}",
            r.status()
        );
    }
    s.stop().await;
}

/// `auto` with a delta is refused on a filter dataset when it would choose
/// among several learners (basic composition of their shares has no zCDP
/// description), but admitted when the candidate rule leaves one zCDP
/// learner alone (then the job is that run and is charged its rho) or
/// LazyBB alone with few rounds (a pure run, charged delta 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_running_dp_ebm_alone_fits_a_filter_dataset() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let job = |dataset: &str, epsilon: f64| json!({"dataset_id": dataset, "algorithm": "auto", "epsilon": epsilon, "delta": 1e-7});

    // 20,000 rows at epsilon 100: 20,000 x 100 / 2 = 1,000,000, so auto
    // selects and two candidates share the budget.
    let large = expect_status(
        s.upload_form(
            &owner,
            "small",
            "1000",
            SMALL_SCHEMA,
            small_csv(20_000).into_bytes(),
            &[("delta", "1e-6"), ("accounting", "zcdp-filter")],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let large = large["dataset"]["id"].as_str().unwrap().to_owned();
    let refused = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": large, "algorithm": "auto", "epsilon": 100.0, "delta": 1e-7}),
        )
        .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(refused["errors"][0]["field"], "delta", "{refused}");

    // Four numeric columns, 200 rows: n x epsilon is far below what
    // selection needs, so auto runs the prior's first learner alone: at
    // epsilon 5 (n x epsilon = 1,000) the one for (binary, numeric, n x
    // epsilon in [464, 1e4), delta > 0), DP-EBM in zCDP; at epsilon 0.5
    // the one for n x epsilon in [21.5, 464), DPBoost, whose pure run is
    // charged as pure.
    let schema = r#"{
      "label": {"column": "y", "positive": "1", "negative": "0"},
      "columns": [
        {"name": "a", "type": "numeric", "min": 0, "max": 100, "bins": 4},
        {"name": "b", "type": "numeric", "min": 0, "max": 100, "bins": 4},
        {"name": "c", "type": "numeric", "min": 0, "max": 100, "bins": 4},
        {"name": "d", "type": "numeric", "min": 0, "max": 100, "bins": 4}
      ]
    }"#;
    let mut csv = String::from("a,b,c,d,y\n");
    for i in 0..200usize {
        let (a, b, c, d) = ((i * 37) % 100, (i * 11) % 100, (i * 7) % 100, i % 100);
        csv.push_str(&format!("{a},{b},{c},{d},{}\n", u8::from(a > 50)));
    }
    let numeric = expect_status(
        s.upload_form(
            &owner,
            "numeric",
            "10",
            schema,
            csv.into_bytes(),
            &[("delta", "1e-6"), ("accounting", "zcdp-filter")],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let numeric = numeric["dataset"]["id"].as_str().unwrap().to_owned();
    let done = s.run_job(&owner, &job(&numeric, 5.0)).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let ledger = s.ledger(&owner, &numeric).await;
    let charge = ledger
        .iter()
        .find(|e| e["kind"] == "charge")
        .expect("one charge");
    assert_eq!(charge["loss"]["kind"], "zcdp", "{charge}");
    assert!(charge["loss"]["rho"].as_f64().unwrap() > 0.0, "{charge}");
    assert!(charge["epsilon"].as_f64().unwrap() <= 5.0, "{charge}");
    let done = s.run_job(&owner, &job(&numeric, 0.5)).await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let ledger = s.ledger(&owner, &numeric).await;
    let charges: Vec<_> = ledger.iter().filter(|e| e["kind"] == "charge").collect();
    assert_eq!(charges.len(), 2, "{ledger:?}");
    let pure = charges
        .iter()
        .find(|e| e["loss"]["kind"] == "pure")
        .expect("DPBoost's pure charge");
    assert_eq!(pure["epsilon"].as_f64(), Some(0.5), "{pure}");
    assert_eq!(pure["delta"].as_f64(), Some(0.0), "{pure}");
    s.stop().await;
}

/// Concurrent admissions on a filter dataset admit exactly as many jobs as
/// the filter's rule allows (computed by the library from public numbers),
/// and the ledger's own rows, summed again here, stay within the total.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_submissions_on_a_filter_dataset_admit_exactly_what_fits() {
    use privboost::privacy::budget_units::{self, EpsilonUnits};
    use privboost::privacy::filter::{Accounting, Charge, Charged, Loss};
    let s = TestServer::start_with(|c| c.max_active_jobs_per_key = 1000).await;
    let (_, owner) = s.key("owner", "o").await;
    // Total (0.02, 1e-6): rho budget 7.24e-6; pure jobs of 0.0005 (rho
    // 1.25e-7): the filter fits 57, basic composition 40.
    let job = Charge::pure(EpsilonUnits::nearest(0.0005).unwrap()).unwrap();
    let total = budget_units::total(0.02, 1e-6).unwrap();
    let k = Charged::new().how_many_more(&job, total, Accounting::ZcdpFilter, 1000) as usize;
    let basic = Charged::new().how_many_more(&job, total, Accounting::Basic, 1000) as usize;
    assert!(k > basic, "{k} vs {basic}");
    let r = s
        .upload_form(
            &owner,
            "small",
            "0.02",
            SMALL_SCHEMA,
            small_csv(100).into_bytes(),
            &[("delta", "1e-6"), ("accounting", "zcdp-filter")],
        )
        .await;
    let body = expect_status(r, StatusCode::CREATED).await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let body = json!({"dataset_id": dataset, "epsilon": 0.0005, "rounds": 5});
    let accepted = s.submit_concurrently(&owner, &body, k + 20).await;
    assert_eq!(accepted, k);
    let ledger = s.ledger(&owner, &dataset).await;
    let charged = ledger
        .iter()
        .filter(|e| e["kind"] != "total")
        .fold(Charged::new(), |c, e| {
            // Each number is the double nearest to its units: read back.
            let loss: Loss = serde_json::from_value(e["loss"].clone()).unwrap();
            let charge = Charge::read(&loss).unwrap();
            assert_eq!(charge, job);
            if e["kind"] == "charge" {
                c.plus(&charge).unwrap()
            } else {
                c.minus(&charge).unwrap()
            }
        });
    assert!(charged.within(total, Accounting::ZcdpFilter));
    assert_eq!(charged.epsilon, job.epsilon.checked_mul(k as u64).unwrap());
    assert_eq!(ledger.iter().filter(|e| e["kind"] == "charge").count(), k);
    s.stop().await;
}

/// Issue 15 over HTTP: a basic dataset of total 1 admits exactly 100 jobs
/// of epsilon 0.01 (each charged 0.01 exactly, in integer units), refuses
/// the rest with 409, and reports a remaining epsilon of exactly 0. Before
/// the amounts were units, 100 x 0.01 summed in doubles landed above 1 and
/// the 100th job could be refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_total_of_1_admits_exactly_100_jobs_of_epsilon_001() {
    let s = TestServer::start_with(|c| c.max_active_jobs_per_key = 1000).await;
    let (_, owner) = s.key("owner", "o").await;
    let body = expect_status(upload(&s, &owner, None).await, StatusCode::CREATED).await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let job = json!({"dataset_id": dataset, "epsilon": 0.01, "rounds": 2});
    assert_eq!(s.submit_concurrently(&owner, &job, 120).await, 100);
    let b = budget(&s, &owner, &dataset, "").await;
    assert_eq!(b["remaining"]["epsilon"], 0.0, "{b}");
    assert_eq!(b["total"]["epsilon"], 1.0, "{b}");
    let ledger = s.ledger(&owner, &dataset).await;
    let charges: Vec<&Value> = ledger.iter().filter(|e| e["kind"] == "charge").collect();
    assert_eq!(charges.len(), 100);
    for c in charges {
        assert_eq!(c["epsilon"], 0.01, "{c}");
        assert_eq!(c["loss"], json!({"kind": "pure", "epsilon": 0.01}), "{c}");
    }
    s.stop().await;
}

/// Issue 26, item 4: a filter dataset's total may change before its first
/// charge, and never after (the filter's parameters come from the total
/// before the first release): raising or lowering it then is a 409
/// problem+json and leaves the ledger as it was. A basic dataset's total
/// still moves after charges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_total_is_fixed_once_anything_is_charged() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let patch = |dataset: &str, epsilon: f64| {
        s.client
            .patch(s.at(&format!("/v1/datasets/{dataset}/budget")))
            .bearer_auth(&owner)
            .json(&json!({"epsilon": epsilon, "delta": 1e-6}))
            .send()
    };
    let created = expect_status(
        upload(&s, &owner, Some("zcdp-filter")).await,
        StatusCode::CREATED,
    )
    .await;
    let filter = created["dataset"]["id"].as_str().unwrap().to_owned();
    let created = expect_status(upload(&s, &owner, None).await, StatusCode::CREATED).await;
    let basic = created["dataset"]["id"].as_str().unwrap().to_owned();
    // Before any charge: allowed.
    expect_status(patch(&filter, 2.0).await.unwrap(), StatusCode::OK).await;
    for dataset in [&filter, &basic] {
        let job = expect_status(
            s.post(
                &owner,
                "/v1/jobs",
                &json!({"dataset_id": dataset, "epsilon": 0.05}),
            )
            .await,
            StatusCode::ACCEPTED,
        )
        .await;
        s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    }
    let before = s.ledger(&owner, &filter).await;
    for epsilon in [3.0, 0.9] {
        let r = patch(&filter, epsilon).await.unwrap();
        assert_eq!(r.headers()["content-type"], "application/problem+json");
        let p = expect_status(r, StatusCode::CONFLICT).await;
        assert!(p["detail"].as_str().unwrap().contains("zCDP filter"), "{p}");
    }
    assert_eq!(s.ledger(&owner, &filter).await, before, "nothing recorded");
    assert_eq!(
        budget(&s, &owner, &filter, "").await["total"]["epsilon"],
        2.0
    );
    // Basic composition keeps its PATCH.
    let b = expect_status(patch(&basic, 3.0).await.unwrap(), StatusCode::OK).await;
    assert_eq!(b["total"]["epsilon"], 3.0, "{b}");
    s.stop().await;
}
