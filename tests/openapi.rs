//! `openapi.yaml` describes exactly the routes the router serves, and the
//! server serves the document.

mod common;

use std::collections::BTreeSet;

use common::TestServer;
use openapiv3::{OpenAPI, ReferenceOr};

fn document() -> OpenAPI {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml")).unwrap();
    yaml_serde::from_str(&text).expect("openapi.yaml parses as OpenAPI 3.0")
}

#[test]
fn router_and_document_agree() {
    let doc = document();
    let mut documented = BTreeSet::new();
    for (path, item) in &doc.paths.paths {
        let ReferenceOr::Item(item) = item else {
            panic!("{path}: path references are not used");
        };
        for (method, _) in item.iter() {
            documented.insert(format!("{} {path}", method.to_uppercase()));
        }
    }
    let routed: BTreeSet<String> = privboost::api::route_list()
        .into_iter()
        .map(|(m, p)| format!("{m} {p}"))
        .collect();
    let missing: Vec<_> = routed.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&routed).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "routes not in openapi.yaml: {missing:?}; documented but not routed: {extra:?}"
    );
}

#[test]
fn every_operation_documents_its_errors() {
    let doc = document();
    for (path, item) in &doc.paths.paths {
        let ReferenceOr::Item(item) = item else {
            continue;
        };
        for (method, op) in item.iter() {
            let codes: Vec<String> = op
                .responses
                .responses
                .keys()
                .map(|c| c.to_string())
                .collect();
            let public = [
                "/healthz",
                "/readyz",
                "/openapi.yaml",
                "/v2",
                "/v2/health/live",
                "/v2/health/ready",
                "/favicon.ico",
            ]
            .contains(&path.as_str());
            // The request timeout layer wraps every route.
            assert!(
                codes.iter().any(|c| c == "408"),
                "{method} {path} lacks 408"
            );
            // The dashboard's HTML pages answer a missing session with a
            // redirect to its log-in page and errors with pages, not with
            // the API's 401 and problem documents.
            if path.starts_with("/dashboard") {
                continue;
            }
            if !public {
                // Authenticated, hence rate limited.
                for code in ["401", "429"] {
                    assert!(
                        codes.iter().any(|c| c == code),
                        "{method} {path} lacks {code}"
                    );
                }
            }
            if op.request_body.is_some() && !path.starts_with("/v1/datasets") {
                for code in ["415", "422"] {
                    assert!(
                        codes.iter().any(|c| c == code),
                        "{method} {path} lacks {code}"
                    );
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_serves_the_document() {
    let s = TestServer::start().await;
    let r = s.client.get(s.at("/openapi.yaml")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let served = r.text().await.unwrap();
    let file =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml")).unwrap();
    assert_eq!(served, file);
    for path in ["/healthz", "/readyz"] {
        assert_eq!(
            s.client.get(s.at(path)).send().await.unwrap().status(),
            200,
            "{path}"
        );
    }
    // Issue 16: /metrics on the main port needs the admin key.
    let metrics = s.client.get(s.at("/metrics"));
    assert_eq!(metrics.send().await.unwrap().status(), 401);
    let (_, analyst) = s.key("analyst", "a").await;
    let r = s.client.get(s.at("/metrics")).bearer_auth(&analyst);
    assert_eq!(r.send().await.unwrap().status(), 403);
    let r = s.client.get(s.at("/metrics")).bearer_auth(&s.admin);
    let r = r.send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.text()
            .await
            .unwrap()
            .contains("privboost_http_requests_total")
    );
    s.stop().await;
}

/// `serve --metrics-bind ADDR` serves `/metrics` without a key on its own
/// listener (only `/metrics`), while the main port still asks for the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_bind_serves_metrics_without_a_key_on_its_own_listener() {
    let dir = tempfile::tempdir().unwrap();
    // A free loopback port (the small race with another process is harmless
    // in a test: the start would fail loudly).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let metrics_at = format!("127.0.0.1:{port}");
    let server = common::process::ChildServer::start(
        dir.path(),
        &dir.path().join("log.jsonl"),
        &["--metrics-bind", &metrics_at],
    );
    let client = reqwest::Client::new();
    let main = client
        .get(format!("{}/metrics", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(main.status(), 401);
    let open = client
        .get(format!("http://{metrics_at}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(open.status(), 200);
    assert!(open.text().await.unwrap().contains("privboost_jobs"));
    let other = client
        .get(format!("http://{metrics_at}/v1/jobs"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 404, "only /metrics on the metrics listener");
    server.terminate();
}
