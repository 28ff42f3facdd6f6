//! One name per parameter (issue 12, item 7): the API takes LazyBB's
//! parameters as `rounds`, `learning_rate` and `density`, like the CLI's
//! flags and the model file; the paper's `tau`, `lambda` and `kappa` stay
//! accepted as deprecated aliases and are never written back.

mod common;

use common::{TestServer, expect_status};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_name_per_parameter_with_the_old_spellings_as_aliases() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let dataset = s.upload_small(&owner, 100.0, 300).await;
    let estimate = |body: serde_json::Value| {
        let s = &s;
        let owner = owner.clone();
        async move { s.post(&owner, "/v1/jobs/estimate", &body).await }
    };

    // Today's names; the answer uses them too.
    let r = estimate(json!({"dataset_id": dataset, "epsilon": 1.0,
                            "rounds": 7, "learning_rate": 0.3, "density": 0.4}))
    .await;
    let e = expect_status(r, StatusCode::OK).await;
    let params = &e["params"];
    assert_eq!(params["rounds"], 7, "{e}");
    assert_eq!(params["learning_rate"], 0.3, "{e}");
    assert_eq!(params["density"], 0.4, "{e}");
    for old in ["tau", "lambda", "kappa"] {
        assert!(params.get(old).is_none(), "{e}");
    }
    // The old spellings give the same plan, written with today's names.
    let r = estimate(json!({"dataset_id": dataset, "epsilon": 1.0,
                            "tau": 7, "lambda": 0.3, "kappa": 0.4}))
    .await;
    let old = expect_status(r, StatusCode::OK).await;
    assert_eq!(old["params"], e["params"]);
    assert_eq!(old["noise"], e["noise"]);
    // Both spellings of one parameter: 422 naming the alias.
    let r = estimate(json!({"dataset_id": dataset, "epsilon": 1.0, "rounds": 7, "tau": 7})).await;
    let p = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(p["errors"][0]["field"], "tau", "{p}");
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("rounds")
    );
    // A bad value names the field as the request spelled it.
    for (field, value) in [("density", 1.5), ("kappa", 1.5), ("rounds", 0.0)] {
        let mut body = json!({"dataset_id": dataset, "epsilon": 1.0});
        body[field] = if field == "rounds" {
            json!(0)
        } else {
            json!(value)
        };
        let p = expect_status(estimate(body).await, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert_eq!(p["errors"][0]["field"], field, "{p}");
    }
    // DP-EBM's learning_rate is the same name; LazyBB's density is not its.
    let r = estimate(json!({"dataset_id": dataset, "epsilon": 1.0, "delta": 1e-6,
                            "algorithm": "dp-ebm", "density": 0.5}))
    .await;
    let p = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert_eq!(p["errors"][0]["field"], "density", "{p}");
    assert!(
        p["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not a parameter of algorithm dp-ebm"),
        "{p}"
    );

    // A job submitted with an old spelling trains, and its model file and
    // job resource use today's names.
    let r = s
        .post(
            &owner,
            "/v1/jobs",
            &json!({"dataset_id": dataset, "epsilon": 1.0, "tau": 5, "kappa": 0.3}),
        )
        .await;
    let job = expect_status(r, StatusCode::ACCEPTED).await;
    assert_eq!(job["params"]["rounds"], 5, "{job}");
    let job = s.wait_job(&owner, job["id"].as_str().unwrap()).await;
    assert_eq!(job["params"]["density"], 0.3, "{job}");
    let model = s.model_of(&owner, &job).await;
    assert_eq!(model["params"]["rounds"], 5, "{model}");
    assert_eq!(model["model"]["params"]["density"], 0.3, "{model}");
    assert!(model["model"]["params"].get("kappa").is_none(), "{model}");
    s.stop().await;
}
