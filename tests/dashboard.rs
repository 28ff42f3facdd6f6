//! The web dashboard (issue 12, item 5) over HTTP from a real server:
//! log-in and log-out with an API key, every page for the right key, 404
//! for a stranger's dataset, job and model, no row value in any page, and
//! a hostile column name escaped. The browser test is `.ci/dashboard`.

mod common;

use common::{TestServer, expect_status};
use reqwest::{Client, StatusCode, redirect};
use serde_json::json;

/// A value that occurs only in the uploaded rows (not in the schema, whose
/// bins are 0, 25, 50, 75, 100): if a page showed a row, it would show this.
const ROW_VALUE: &str = "61.7391";

/// The small schema of tests/common with one hostile column name.
const HOSTILE: &str = "<script>alert(1)</script>";

fn schema() -> String {
    json!({
        "label": {"column": "y", "positive": "1", "negative": "0"},
        "columns": [
            {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
            {"name": HOSTILE, "type": "categorical", "categories": ["a", "b"]}
        ]
    })
    .to_string()
}

/// 300 deterministic rows; every tenth row has x = ROW_VALUE.
fn csv() -> Vec<u8> {
    let mut s = format!("x,{HOSTILE},y\n");
    for i in 0..300 {
        let x = if i % 10 == 0 {
            ROW_VALUE.to_owned()
        } else {
            ((i * 37) % 100).to_string()
        };
        let c = if i % 3 == 0 { "a" } else { "b" };
        let y = u8::from(i % 10 == 0 || (i * 37) % 100 > 50 || c == "a");
        s.push_str(&format!("{x},{c},{y}\n"));
    }
    s.into_bytes()
}

/// A browser-like client: no redirects followed, so that each step shows.
fn browser() -> Client {
    Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .unwrap()
}

/// Log in with `key`; returns the session cookie (`name=value`).
async fn log_in(s: &TestServer, c: &Client, key: &str) -> String {
    let r = c
        .post(s.at("/dashboard/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("key={key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/dashboard");
    let set = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(set.contains("HttpOnly"), "{set}");
    assert!(set.contains("SameSite=Strict"), "{set}");
    assert!(!set.contains(key), "the key is not in the cookie");
    set.split(';').next().unwrap().to_owned()
}

/// GET a page with a cookie; returns (status, body).
async fn page(s: &TestServer, c: &Client, cookie: &str, path: &str) -> (StatusCode, String) {
    let r = c
        .get(s.at(path))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = r.status();
    if status.is_success() {
        assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
        let csp = r.headers()["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("script-src 'self'"), "{csp}");
    }
    (status, r.text().await.unwrap())
}

/// An owner uploads, grants an analyst, the analyst trains and deploys:
/// then the pages for each key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_show_what_the_key_may_see_and_never_a_row() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let (analyst_id, analyst) = s.key("analyst", "bob").await;
    let (_, stranger) = s.key("owner", "mallory").await;
    let r = s
        .upload(&owner, "clinic-visits", 2.0, &schema(), csv())
        .await;
    let dataset = expect_status(r, StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
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
            &json!({"dataset_id": dataset, "epsilon": 0.5}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job_id = job["id"].as_str().unwrap().to_owned();
    let job = s.wait_job(&analyst, &job_id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    let model_id = job["model_id"].as_str().unwrap().to_owned();
    s.expect(
        StatusCode::CREATED,
        s.client
            .put(s.at("/v1/deployments/triage"))
            .bearer_auth(&analyst)
            .json(&json!({"model_id": model_id})),
    )
    .await;

    let c = browser();
    // No session: every page sends the browser to log in.
    let r = c.get(s.at("/dashboard")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/dashboard/login");
    let (status, form) = page(&s, &c, "", "/dashboard/login").await;
    assert_eq!(status, StatusCode::OK);
    assert!(form.contains(r#"name="key""#));

    // A wrong key: the form again, with a clear message, and no cookie.
    let r = c
        .post(s.at("/dashboard/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("key=pb_not_a_key")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert!(r.headers().get("set-cookie").is_none());
    assert!(r.text().await.unwrap().contains("not valid"));

    // A log-in posted from another site is refused (login CSRF).
    let r = c
        .post(s.at("/dashboard/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", "https://elsewhere.example")
        .body(format!("key={owner}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert!(r.headers().get("set-cookie").is_none());

    // The analyst sees everything along the path.
    let bob = log_in(&s, &c, &analyst).await;
    let mut seen = Vec::new();
    let (status, overview) = page(&s, &c, &bob, "/dashboard").await;
    assert_eq!(status, StatusCode::OK);
    for needle in ["clinic-visits", &job_id, &model_id, "triage", "bob"] {
        assert!(overview.contains(needle), "overview lacks {needle}");
    }
    seen.push(overview);
    let (status, ds) = page(&s, &c, &bob, &format!("/dashboard/datasets/{dataset}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(ds.contains("Burn-down") && ds.contains("<svg"));
    assert!(ds.contains(r#"<dd id="n-rows">300</dd>"#), "n is public");
    // The ledger: the total, then the job's charge; 0.5 of 2 spent.
    assert!(ds.contains("<td>total</td>") && ds.contains("<td>charge</td>"));
    assert!(ds.contains(r#"<dd id="spent">0.5</dd>"#), "spent");
    assert!(ds.contains(r#"<dd id="remaining">1.5</dd>"#), "remaining");
    seen.push(ds);
    let (status, jp) = page(&s, &c, &bob, &format!("/dashboard/jobs/{job_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(jp.contains("succeeded") && jp.contains(&model_id));
    seen.push(jp);
    let (status, mp) = page(&s, &c, &bob, &format!("/dashboard/models/{model_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(mp.contains("Privacy statement") && mp.contains("Vote table"));
    assert!(mp.contains("triage"), "the model page names its deployment");
    seen.push(mp);
    let (status, dp) = page(&s, &c, &bob, "/dashboard/deployments/triage").await;
    assert_eq!(status, StatusCode::OK);
    assert!(dp.contains(r#"id="versions""#) && dp.contains(&model_id));
    seen.push(dp);
    let (status, ex) = page(&s, &c, &bob, "/dashboard/experiments").await;
    assert_eq!(status, StatusCode::OK);
    assert!(ex.contains("mushroom") && ex.contains("adult") && ex.contains("<svg"));
    for html in &seen {
        assert!(!html.contains(ROW_VALUE), "a page shows a row value");
    }
    // The job's live events come through the dashboard with the session.
    let r = c
        .get(s.at(&format!("/dashboard/jobs/{job_id}/events")))
        .header("cookie", &bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    assert!(r.text().await.unwrap().contains("event: done"));

    // A stranger: 404 for the dataset, job and model, and nothing of them
    // in the overview (the deployment is a publication: any key reads it).
    let mallory = log_in(&s, &c, &stranger).await;
    for path in [
        format!("/dashboard/datasets/{dataset}"),
        format!("/dashboard/jobs/{job_id}"),
        format!("/dashboard/models/{model_id}"),
    ] {
        let (status, body) = page(&s, &c, &mallory, &path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(body.contains("Not found") && !body.contains("clinic-visits"));
    }
    let (_, overview) = page(&s, &c, &mallory, "/dashboard").await;
    assert!(!overview.contains("clinic-visits") && !overview.contains(&job_id));
    let r = c
        .get(s.at(&format!("/dashboard/jobs/{job_id}/events")))
        .header("cookie", &mallory)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // Log-out ends the session: the old cookie no longer opens a page.
    let r = c
        .post(s.at("/dashboard/logout"))
        .header("cookie", &bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert!(
        r.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let r = c
        .get(s.at("/dashboard"))
        .header("cookie", &bob)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/dashboard/login");
    s.stop().await;
}

/// The owner's page shows the hostile column name as text, never as markup;
/// a revoked key's session ends at its next page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_column_name_is_escaped_and_a_revoked_key_is_logged_out() {
    let s = TestServer::start().await;
    let (owner_id, owner) = s.key("owner", "alice").await;
    let r = s.upload(&owner, "h", 1.0, &schema(), csv()).await;
    let dataset = expect_status(r, StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let c = browser();
    let cookie = log_in(&s, &c, &owner).await;
    let (status, html) = page(&s, &c, &cookie, &format!("/dashboard/datasets/{dataset}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!html.contains(HOSTILE), "the column name is markup");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!html.contains(ROW_VALUE));

    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .delete(s.at(&format!("/v1/keys/{owner_id}")))
            .bearer_auth(&s.admin),
    )
    .await;
    let r = c
        .get(s.at(&format!("/dashboard/datasets/{dataset}")))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SEE_OTHER);
    assert_eq!(r.headers()["location"], "/dashboard/login");
    s.stop().await;
}

/// A job that has not ended: its page names the event stream (for the
/// script) and refreshes itself without JavaScript; once it ended, neither.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_job_page_follows_the_job_with_or_without_javascript() {
    let s = TestServer::start_with(|c| c.workers = 1).await;
    let (_, owner) = s.key("owner", "alice").await;
    let dataset = s.upload_mushroom(&owner, 2.0).await;
    // 10,000 TopDown rounds on 8124 rows: tens of seconds, so the page
    // below is asked for long before the job could end; it is cancelled.
    let job = expect_status(
        s.post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.5, "rounds": 10000, "weak_learner": "dp-top-down"}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let id = job["id"].as_str().unwrap().to_owned();
    let c = browser();
    let cookie = log_in(&s, &c, &owner).await;
    let (status, html) = page(&s, &c, &cookie, &format!("/dashboard/jobs/{id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        html.contains(&format!(r#"data-events="/dashboard/jobs/{id}/events""#)),
        "{html}"
    );
    assert!(html.contains(r#"<noscript><meta http-equiv="refresh" content="3"></noscript>"#));
    assert!(html.contains(r#"<script src="/dashboard/static/live.js" defer></script>"#));
    let r = c
        .get(s.at("/dashboard/static/live.js"))
        .send()
        .await
        .unwrap();
    assert!(r.text().await.unwrap().contains("new EventSource"));

    // 200 when it was still queued (refunded), 202 when it was running.
    let r = s
        .client
        .post(s.at(&format!("/v1/jobs/{id}/cancel")))
        .bearer_auth(&owner)
        .send()
        .await
        .unwrap();
    assert!([StatusCode::OK, StatusCode::ACCEPTED].contains(&r.status()));
    let ended = s.wait_job(&owner, &id).await;
    assert_eq!(ended["state"], "cancelled");
    let (_, html) = page(&s, &c, &cookie, &format!("/dashboard/jobs/{id}")).await;
    assert!(html.contains("cancelled"));
    assert!(!html.contains("data-events") && !html.contains("<noscript>"));
    s.stop().await;
}

/// A browser pointed at the server's root lands on the log-in page (via
/// the dashboard), and the tab icon is served (issue 29).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_root_sends_a_browser_to_the_dashboard_log_in() {
    let s = TestServer::start().await;
    let c = browser();
    let r = c.get(s.at("/")).send().await.unwrap();
    assert!(r.status().is_redirection(), "{}", r.status());
    assert_eq!(r.headers()["location"], "/dashboard");
    let r = c.get(s.at("/dashboard")).send().await.unwrap();
    assert_eq!(r.headers()["location"], "/dashboard/login");
    let followed = Client::new().get(s.at("/")).send().await.unwrap();
    assert_eq!(followed.status(), StatusCode::OK);
    assert!(followed.url().path().ends_with("/dashboard/login"));
    let login = followed.text().await.unwrap();
    assert!(login.contains("favicon.svg"), "{login}");
    for path in ["/dashboard/static/favicon.svg", "/favicon.ico"] {
        let r = c.get(s.at(path)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{path}");
        assert_eq!(r.headers()["content-type"], "image/svg+xml", "{path}");
        assert!(r.text().await.unwrap().starts_with("<svg"), "{path}");
    }
}

/// A three-class table (issue 27): `x` in [0, 100) decides the class
/// (below 33 "low", below 66 "mid", else "high"), `f` is noise.
fn three_class_csv() -> Vec<u8> {
    let mut s = String::from("x,f,y\n");
    for i in 0..1500usize {
        let x = (i * 37) % 100;
        let y = ["low", "mid", "high"][(x / 34).min(2)];
        s.push_str(&format!("{x},{},{y}\n", ["u", "v"][i % 2]));
    }
    s.into_bytes()
}

/// A k-class model's page shows its terms per class (issue 27): dp-linear's
/// coefficients and LazyBB's rules under one heading and one table per
/// class, DPBoost's trees under one heading per class, DP-EBM's intercepts
/// per class and one shape chart per class.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multiclass_model_page_shows_its_terms_per_class() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "alice").await;
    let schema = json!({
        "label": {"column": "y", "classes": ["low", "mid", "high"]},
        "columns": [
            {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 6},
            {"name": "f", "type": "categorical", "categories": ["u", "v"]}
        ]
    })
    .to_string();
    let body = expect_status(
        s.upload_form(
            &owner,
            "grades",
            "30",
            &schema,
            three_class_csv(),
            &[("delta", "1e-5")],
        )
        .await,
        StatusCode::CREATED,
    )
    .await;
    let dataset = body["dataset"]["id"].as_str().unwrap().to_owned();
    let c = browser();
    let cookie = log_in(&s, &c, &owner).await;
    let classes = ["low", "mid", "high"];
    for (algorithm, per_class_ids, also) in [
        ("dp-linear", "coefficients-", "multinomial"),
        ("lazybb", "vote-table-", "One-vs-rest"),
        ("dp-ebm", "", "Shape functions per class"),
        ("dpboost", "", "One-vs-rest over 3 classes"),
    ] {
        let mut request = json!({"dataset_id": dataset, "epsilon": 4.0, "algorithm": algorithm});
        if algorithm == "dp-ebm" {
            request["delta"] = json!(1e-6);
        }
        let job = s.run_job(&owner, &request).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        let model_id = job["model_id"].as_str().unwrap();
        let (status, html) = page(&s, &c, &cookie, &format!("/dashboard/models/{model_id}")).await;
        assert_eq!(status, StatusCode::OK, "{algorithm}: {html}");
        assert!(html.contains(also), "{algorithm}: {html}");
        for (k, class) in classes.iter().enumerate() {
            if algorithm == "dpboost" {
                assert!(
                    html.contains(&format!("<h3>Class {class}</h3>")),
                    "{algorithm}: {html}"
                );
            } else if per_class_ids.is_empty() {
                assert!(
                    html.contains(&format!("Class {class}")),
                    "{algorithm}: {html}"
                );
                assert!(
                    html.contains(&format!("f ({class})")),
                    "{algorithm}: {html}"
                );
            } else {
                assert!(
                    html.contains(&format!("<h3>Class {class}</h3>")),
                    "{algorithm}: {html}"
                );
                assert!(
                    html.contains(&format!("id=\"{per_class_ids}{k}\"")),
                    "{algorithm}: {html}"
                );
            }
        }
        if algorithm == "dp-ebm" {
            assert!(html.contains("id=\"intercepts\""), "{html}");
        }
    }
}
