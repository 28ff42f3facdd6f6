//! The auth matrix: no key -> 401; another owner's dataset and an
//! ungranted analyst -> 404 (existence not revealed); roles enforced.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_matrix() {
    let s = TestServer::start().await;
    let (_, a) = s.key("owner", "A").await;
    let (_, b) = s.key("owner", "B").await;
    let (granted_id, granted) = s.key("analyst", "granted").await;
    let (_, stranger) = s.key("analyst", "stranger").await;
    let dataset = s.upload_small(&a, 1.0, 100).await;
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .put(s.at(&format!("/v1/datasets/{dataset}/grants/{granted_id}")))
            .bearer_auth(&a),
    )
    .await;
    let job = expect_status(
        s.post(
            &a,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.1, "tau": 5}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job_id = job["id"].as_str().unwrap();
    let done = s.wait_job(&a, job_id).await;
    let model_id = done["model_id"].as_str().unwrap();

    // No key, a bad key: 401 with problem+json.
    for path in [
        "/v1/datasets",
        &format!("/v1/datasets/{dataset}"),
        "/v1/jobs",
        "/v1/models",
    ] {
        expect_status(
            s.client.get(s.at(path)).send().await.unwrap(),
            StatusCode::UNAUTHORIZED,
        )
        .await;
        expect_status(s.get("pb_not_a_key", path).await, StatusCode::UNAUTHORIZED).await;
    }

    // Owner B and the ungranted analyst: everything about A's dataset is 404.
    let paths = [
        format!("/v1/datasets/{dataset}"),
        format!("/v1/datasets/{dataset}/budget"),
        format!("/v1/datasets/{dataset}/ledger"),
        format!("/v1/jobs/{job_id}"),
        format!("/v1/models/{model_id}"),
    ];
    for key in [&b, &stranger] {
        for p in &paths {
            expect_status(s.get(key, p).await, StatusCode::NOT_FOUND).await;
        }
        expect_status(
            s.post(
                key,
                "/v1/jobs",
                &json!({"dataset_id": dataset, "epsilon": 0.1}),
            )
            .await,
            StatusCode::NOT_FOUND,
        )
        .await;
        expect_status(
            s.post(
                key,
                "/v1/jobs/estimate",
                &json!({"dataset_id": dataset, "epsilon": 0.1}),
            )
            .await,
            StatusCode::NOT_FOUND,
        )
        .await;
        expect_status(
            s.post(
                key,
                &format!("/v1/models/{model_id}/predict"),
                &json!({"rows": [{"x": 1, "c": "a"}]}),
            )
            .await,
            StatusCode::NOT_FOUND,
        )
        .await;
        let list = expect_status(s.get(key, "/v1/datasets").await, StatusCode::OK).await;
        assert!(list["items"].as_array().unwrap().is_empty());
        let list = expect_status(s.get(key, "/v1/models").await, StatusCode::OK).await;
        assert!(list["items"].as_array().unwrap().is_empty());
    }
    expect_status(
        s.client
            .delete(s.at(&format!("/v1/datasets/{dataset}")))
            .bearer_auth(&b)
            .send()
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;

    // The granted analyst sees it, but cannot upload, change the budget or delete.
    for p in &paths {
        expect_status(s.get(&granted, p).await, StatusCode::OK).await;
    }
    let r = s
        .upload(
            &granted,
            "x",
            1.0,
            common::SMALL_SCHEMA,
            common::small_csv(10).into_bytes(),
        )
        .await;
    expect_status(r, StatusCode::FORBIDDEN).await;
    expect_status(
        s.client
            .patch(s.at(&format!("/v1/datasets/{dataset}/budget")))
            .bearer_auth(&granted)
            .json(&json!({"epsilon": 100.0}))
            .send()
            .await
            .unwrap(),
        StatusCode::FORBIDDEN,
    )
    .await;
    expect_status(
        s.client
            .delete(s.at(&format!("/v1/datasets/{dataset}")))
            .bearer_auth(&granted)
            .send()
            .await
            .unwrap(),
        StatusCode::FORBIDDEN,
    )
    .await;
    // Only the admin manages keys.
    expect_status(
        s.post(&a, "/v1/keys", &json!({"role": "owner", "name": "sneaky"}))
            .await,
        StatusCode::FORBIDDEN,
    )
    .await;
    // Revoking a grant hides the dataset again.
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .delete(s.at(&format!("/v1/datasets/{dataset}/grants/{granted_id}")))
            .bearer_auth(&a),
    )
    .await;
    expect_status(
        s.get(&granted, &format!("/v1/datasets/{dataset}")).await,
        StatusCode::NOT_FOUND,
    )
    .await;

    // Deleting purges the rows but keeps the ledger as a tombstone.
    s.expect(
        StatusCode::NO_CONTENT,
        s.client
            .delete(s.at(&format!("/v1/datasets/{dataset}")))
            .bearer_auth(&a),
    )
    .await;
    let tomb = expect_status(
        s.get(&a, &format!("/v1/datasets/{dataset}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(tomb["state"], "deleted");
    assert_eq!(s.ledger(&a, &dataset).await.len(), 2);
    expect_status(
        s.post(
            &a,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.1}),
        )
        .await,
        StatusCode::CONFLICT,
    )
    .await;
    s.stop().await;
}

/// Every route that names a resource answers 404 to a key that cannot see
/// it, whatever the method, so that existence is never revealed; lists
/// leave foreign resources out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_resources_are_404_on_every_route() {
    let s = TestServer::start().await;
    let (_, a) = s.key("owner", "A").await;
    let (_, b) = s.key("owner", "B").await;
    let (analyst_id, stranger) = s.key("analyst", "stranger").await;
    let dataset = s.upload_small(&a, 5.0, 100).await;
    let job = expect_status(
        s.post(
            &a,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 0.1, "tau": 3}),
        )
        .await,
        StatusCode::ACCEPTED,
    )
    .await;
    let job_id = job["id"].as_str().unwrap().to_owned();
    let done = s.wait_job(&a, &job_id).await;
    let model_id = done["model_id"].as_str().unwrap().to_owned();

    let d = format!("/v1/datasets/{dataset}");
    let requests = [
        (reqwest::Method::GET, format!("{d}/grants"), None),
        (
            reqwest::Method::PUT,
            format!("{d}/grants/{analyst_id}"),
            None,
        ),
        (
            reqwest::Method::DELETE,
            format!("{d}/grants/{analyst_id}"),
            None,
        ),
        (
            reqwest::Method::PATCH,
            format!("{d}/budget"),
            Some(json!({"epsilon": 100.0})),
        ),
        (reqwest::Method::DELETE, d.clone(), None),
        (
            reqwest::Method::POST,
            format!("/v1/jobs/{job_id}/cancel"),
            None,
        ),
        (
            reqwest::Method::PUT,
            "/v1/deployments/stolen".to_owned(),
            Some(json!({"model_id": model_id})),
        ),
    ];
    for key in [&b, &stranger] {
        for (method, path, body) in &requests {
            let mut req = s
                .client
                .request(method.clone(), s.at(path))
                .bearer_auth(key);
            if let Some(body) = body {
                req = req.json(body);
            }
            let r = req.send().await.unwrap();
            // Changing a budget is for owners: an analyst gets the role's
            // 403 for any id, existing or not (checked below), so it tells
            // nothing either.
            let expected = if key == &stranger && *method == reqwest::Method::PATCH {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::NOT_FOUND
            };
            assert_eq!(r.status(), expected, "{method} {path}");
            expect_status(r, expected).await;
        }
        let jobs = expect_status(s.get(key, "/v1/jobs").await, StatusCode::OK).await;
        assert!(jobs["items"].as_array().unwrap().is_empty(), "{jobs}");
    }
    expect_status(
        s.client
            .patch(s.at("/v1/datasets/ds_00000000000000000000000000000000/budget"))
            .bearer_auth(&stranger)
            .json(&json!({"epsilon": 100.0}))
            .send()
            .await
            .unwrap(),
        StatusCode::FORBIDDEN,
    )
    .await;
    // Unknown ids answer the same 404 as foreign ones (nothing to tell apart).
    for path in [
        "/v1/datasets/ds_00000000000000000000000000000000",
        "/v1/jobs/job_00000000000000000000000000000000",
        "/v1/models/model_00000000000000000000000000000000",
    ] {
        let foreign = expect_status(s.get(&b, path).await, StatusCode::NOT_FOUND).await;
        assert_eq!(foreign["type"], "/problems/not-found");
    }
    // Training on a dataset without a grant: the 404's detail names the
    // missing grant as a possible cause, in the same words as for a dataset
    // that does not exist (no existence leak).
    let mut details = Vec::new();
    for id in [dataset.as_str(), "ds_00000000000000000000000000000000"] {
        let body = json!({"dataset_id": id, "epsilon": 0.5});
        let p = expect_status(
            s.post(&stranger, "/v1/jobs", &body).await,
            StatusCode::NOT_FOUND,
        )
        .await;
        details.push(p["detail"].as_str().unwrap().to_owned());
    }
    assert_eq!(details[0], details[1]);
    assert!(details[0].contains("grant"), "{}", details[0]);
    // Admin: an unknown key id is 404 too.
    expect_status(
        s.client
            .delete(s.at("/v1/keys/key_00000000000000000000000000000000"))
            .bearer_auth(&s.admin)
            .send()
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;
    // Nothing changed for the owner.
    let info = expect_status(s.get(&a, &d).await, StatusCode::OK).await;
    assert_eq!(info["state"], "ready", "{info}");
    expect_status(
        s.get(&a, "/v1/deployments/stolen").await,
        StatusCode::NOT_FOUND,
    )
    .await;
    s.stop().await;
}
