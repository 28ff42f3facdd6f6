//! Deployment versions over HTTP (issue 12, item 3): history, rollback,
//! names scoped per key, model metadata for any key that may predict,
//! versioned OIP routes, and concurrent moves that lose no version.

mod common;

use common::{TestServer, expect_status, small_csv};
use reqwest::StatusCode;
use serde_json::{Value, json};

const SCHEMA: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4, "missing": ["?"]},
    {"name": "c", "type": "categorical", "categories": ["a", "b"]}
  ]
}"#;

/// Train `n` models on one new dataset of `key`; returns their ids.
async fn models(s: &TestServer, key: &str, name: &str, n: usize) -> Vec<String> {
    let r = s
        .upload(key, name, 1000.0, SCHEMA, small_csv(300).into_bytes())
        .await;
    let ds = expect_status(r, StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut out = Vec::new();
    for _ in 0..n {
        let r = s
            .post(
                key,
                "/v1/jobs",
                &json!({"dataset_id": ds, "epsilon": 1.0, "tau": 3}),
            )
            .await;
        let job = expect_status(r, StatusCode::ACCEPTED).await;
        let job = s.wait_job(key, job["id"].as_str().unwrap()).await;
        assert_eq!(job["state"], "succeeded", "{job}");
        out.push(job["model_id"].as_str().unwrap().to_owned());
    }
    out
}

async fn put(s: &TestServer, key: &str, name: &str, model: &str) -> reqwest::Response {
    s.client
        .put(s.at(&format!("/v1/deployments/{name}")))
        .bearer_auth(key)
        .json(&json!({"model_id": model}))
        .send()
        .await
        .unwrap()
}

fn rows() -> Value {
    json!({"rows": [{"x": 3, "c": "a"}, {"x": 42, "c": "b"}, {"x": 99, "c": "b"}, {"x": "?", "c": "a"}]})
}

/// The predictions of `model`, as its owner sees them.
async fn predictions_of(s: &TestServer, key: &str, model: &str) -> Value {
    let r = s
        .post(key, &format!("/v1/models/{model}/predict"), &rows())
        .await;
    expect_status(r, StatusCode::OK).await["predictions"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_rollback_scoped_names_and_metadata() {
    let s = TestServer::start().await;
    let (alice_id, alice) = s.key("owner", "alice").await;
    let (bob_id, bob) = s.key("owner", "bob").await;
    // A key that may only predict: no dataset, no grant.
    let (_, reader) = s.key("analyst", "reader").await;
    let a = models(&s, &alice, "a", 2).await;
    let b = models(&s, &bob, "b", 1).await;

    // Version 1, then a move to version 2.
    let d = expect_status(put(&s, &alice, "prod", &a[0]).await, StatusCode::CREATED).await;
    assert_eq!(
        (d["version"].clone(), d["model_id"].clone()),
        (json!(1), json!(a[0]))
    );
    assert_eq!(d["qualified_name"], format!("{alice_id}:prod"));
    let d = expect_status(put(&s, &alice, "prod", &a[1]).await, StatusCode::OK).await;
    assert_eq!(
        (d["version"].clone(), d["model_id"].clone()),
        (json!(2), json!(a[1]))
    );

    // Bob's `prod` is his own: no collision, no takeover.
    let d = expect_status(put(&s, &bob, "prod", &b[0]).await, StatusCode::CREATED).await;
    assert_eq!(d["version"], 1);
    assert_eq!(d["qualified_name"], format!("{bob_id}:prod"));
    let mine = expect_status(s.get(&bob, "/v1/deployments/prod").await, StatusCode::OK).await;
    assert_eq!(mine["model_id"], json!(b[0]));
    // A plain name means the first deployment of that name to other keys;
    // `key_id:name` is exact.
    let plain = expect_status(s.get(&reader, "/v1/deployments/prod").await, StatusCode::OK).await;
    assert_eq!(plain["model_id"], json!(a[1]));
    assert_eq!(plain["created_by"], json!(alice_id));
    let qualified = expect_status(
        s.get(&reader, &format!("/v1/deployments/{bob_id}:prod"))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(qualified["model_id"], json!(b[0]));
    // Moving someone else's deployment by its qualified name: 403.
    expect_status(
        put(&s, &bob, &format!("{alice_id}:prod"), &b[0]).await,
        StatusCode::FORBIDDEN,
    )
    .await;

    // Model metadata for the predict-only key: schema, task, privacy.
    let model = &plain["model"];
    assert_eq!(model["id"], json!(a[1]));
    assert_eq!(model["task"]["kind"], "binary", "{model}");
    assert_eq!(model["schema"]["columns"][0]["name"], "x", "{model}");
    assert!(model["privacy"].is_object(), "{model}");
    // Not the owner: whole seconds.
    assert!(
        !model["created_at"].as_str().unwrap().contains('.'),
        "{model}"
    );
    assert!(model.get("inspection").is_none());

    // Predictions follow the deployment; the plain name serves Alice's.
    let p_a0 = predictions_of(&s, &alice, &a[0]).await;
    let p_a1 = predictions_of(&s, &alice, &a[1]).await;
    let p_b0 = predictions_of(&s, &bob, &b[0]).await;
    let predict = |key: String, name: String| {
        let s = &s;
        async move {
            let r = s
                .post(&key, &format!("/v1/deployments/{name}/predict"), &rows())
                .await;
            expect_status(r, StatusCode::OK).await
        }
    };
    let r = predict(reader.clone(), "prod".into()).await;
    assert_eq!(
        (r["predictions"].clone(), r["version"].clone()),
        (p_a1.clone(), json!(2))
    );
    let r = predict(reader.clone(), format!("{bob_id}:prod")).await;
    assert_eq!(r["predictions"], p_b0);

    // Rollback: only the creator; to the previous version by default.
    let r = s
        .post(&reader, "/v1/deployments/prod/rollback", &json!({}))
        .await;
    expect_status(r, StatusCode::FORBIDDEN).await;
    let r = s
        .client
        .post(s.at("/v1/deployments/prod/rollback"))
        .bearer_auth(&alice)
        .send()
        .await
        .unwrap();
    let d = expect_status(r, StatusCode::OK).await;
    assert_eq!(
        (d["version"].clone(), d["model_id"].clone()),
        (json!(3), json!(a[0]))
    );
    let r = predict(reader.clone(), "prod".into()).await;
    assert_eq!(r["predictions"], p_a0);
    // To a given version.
    let r = s
        .post(
            &alice,
            "/v1/deployments/prod/rollback",
            &json!({"version": 2}),
        )
        .await;
    let d = expect_status(r, StatusCode::OK).await;
    assert_eq!(
        (d["version"].clone(), d["model_id"].clone()),
        (json!(4), json!(a[1]))
    );
    // Unknown version: 404; no previous version: 409; bad body: 422.
    let r = s
        .post(
            &alice,
            "/v1/deployments/prod/rollback",
            &json!({"version": 99}),
        )
        .await;
    let e = expect_status(r, StatusCode::NOT_FOUND).await;
    assert_eq!(e["detail"], "deployment version not found", "{e}");
    let r = s
        .post(&bob, "/v1/deployments/prod/rollback", &json!({}))
        .await;
    let e = expect_status(r, StatusCode::CONFLICT).await;
    assert!(
        e["detail"]
            .as_str()
            .unwrap()
            .contains("no previous version"),
        "{e}"
    );
    let r = s
        .post(
            &alice,
            "/v1/deployments/prod/rollback",
            &json!({"version": 0}),
        )
        .await;
    expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    let r = s
        .post(&alice, "/v1/deployments/prod/rollback", &json!({"to": 1}))
        .await;
    expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    let r = s
        .post(&alice, "/v1/deployments/nope/rollback", &json!({}))
        .await;
    expect_status(r, StatusCode::NOT_FOUND).await;

    // The history, readable by any key.
    let h = expect_status(
        s.get(&reader, "/v1/deployments/prod/versions").await,
        StatusCode::OK,
    )
    .await;
    let items = h["items"].as_array().unwrap();
    let seen: Vec<(i64, &str, &str, Value)> = items
        .iter()
        .map(|v| {
            (
                v["version"].as_i64().unwrap(),
                v["model_id"].as_str().unwrap(),
                v["moved_by"].as_str().unwrap(),
                v["rollback_of"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1, a[0].as_str(), alice_id.as_str(), Value::Null),
            (2, a[1].as_str(), alice_id.as_str(), Value::Null),
            (3, a[0].as_str(), alice_id.as_str(), json!(1)),
            (4, a[1].as_str(), alice_id.as_str(), json!(2)),
        ]
    );
    assert!(items.iter().all(|v| v["created_at"].is_string()));
    let page = expect_status(
        s.get(&reader, "/v1/deployments/prod/versions?page_size=3")
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(page["next_page_token"], "after-3");

    // OIP: a version is a version number or a model id; old versions serve
    // their own model, to any key.
    let meta = expect_status(
        s.get(&reader, "/v2/models/prod/versions/1").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(meta["versions"], json!([a[0], "1"]));
    // By model id: the latest version that served it (a[0]: 1 and 3).
    let meta = expect_status(
        s.get(&reader, &format!("/v2/models/prod/versions/{}", a[0]))
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(meta["versions"], json!([a[0], "3"]));
    let meta = expect_status(s.get(&reader, "/v2/models/prod").await, StatusCode::OK).await;
    assert_eq!(meta["versions"], json!([a[1], "4"]));
    for version in ["1".to_owned(), a[0].clone()] {
        let request = json!({"inputs": [
            {"name": "x", "datatype": "BYTES", "shape": [4], "data": ["3", "42", "99", "?"]},
            {"name": "c", "datatype": "BYTES", "shape": [4], "data": ["a", "b", "b", "a"]},
        ]});
        let r = s
            .post(
                &reader,
                &format!("/v2/models/prod/versions/{version}/infer"),
                &request,
            )
            .await;
        assert_eq!(r.status(), 200, "{version}");
        let out: Value = r.json().await.unwrap();
        let probs = out["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == "probability")
            .unwrap()["data"]
            .clone();
        let expected: Vec<Value> = p_a0
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["probability"].clone())
            .collect();
        assert_eq!(probs, json!(expected), "{version}");
    }
    for path in [
        "/v2/models/prod/versions/99",
        "/v2/models/prod/versions/0/ready",
    ] {
        let r = s.get(&reader, path).await;
        assert_eq!(r.status(), 404, "{path}");
    }
    // Bob's model was never served by Alice's `prod`: not a version of it.
    let r = s
        .get(&reader, &format!("/v2/models/prod/versions/{}", b[0]))
        .await;
    assert_eq!(r.status(), 404);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_moves_lose_no_version() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let m = models(&s, &owner, "d", 2).await;
    expect_status(put(&s, &owner, "hot", &m[0]).await, StatusCode::CREATED).await;
    const MOVES: usize = 24;
    let tasks: Vec<_> = (0..MOVES)
        .map(|i| {
            let client = s.client.clone();
            let url = s.url.clone();
            let owner = owner.clone();
            let model = m[i % 2].clone();
            tokio::spawn(async move {
                let req = if i % 3 == 2 {
                    client
                        .post(format!("{url}/v1/deployments/hot/rollback"))
                        .json(&json!({"version": 1}))
                } else {
                    client
                        .put(format!("{url}/v1/deployments/hot"))
                        .json(&json!({"model_id": model}))
                };
                let r = req.bearer_auth(&owner).send().await.unwrap();
                assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
                r.json::<Value>().await.unwrap()["version"]
                    .as_i64()
                    .unwrap()
            })
        })
        .collect();
    let mut versions = Vec::new();
    for t in tasks {
        versions.push(t.await.unwrap());
    }
    versions.sort_unstable();
    // Each move got its own number: 2..=MOVES+1, none twice, none lost.
    assert_eq!(versions, (2..=MOVES as i64 + 1).collect::<Vec<_>>());
    let h = expect_status(
        s.get(&owner, "/v1/deployments/hot/versions").await,
        StatusCode::OK,
    )
    .await;
    let items = h["items"].as_array().unwrap();
    assert_eq!(items.len(), MOVES + 1);
    let numbers: Vec<i64> = items
        .iter()
        .map(|v| v["version"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, (1..=MOVES as i64 + 1).collect::<Vec<_>>());
    let d = expect_status(s.get(&owner, "/v1/deployments/hot").await, StatusCode::OK).await;
    let last = items.last().unwrap();
    assert_eq!(d["version"], last["version"]);
    assert_eq!(d["model_id"], last["model_id"]);
    s.stop().await;
}
