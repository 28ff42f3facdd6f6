//! Open Inference Protocol v2 and MLflow-style scoring over real HTTP: the
//! answers must equal `/v1/deployments/{name}/predict`. The binary tensor
//! encoding is written here independently of the server's.

mod common;

use common::{TestServer, expect_status, small_csv};
use reqwest::StatusCode;
use serde_json::{Value, json};

const SCHEMA_MISSING: &str = r#"{
  "label": {"column": "y", "positive": "1", "negative": "0"},
  "columns": [
    {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4, "missing": ["?"]},
    {"name": "c", "type": "categorical", "categories": ["a", "b"]}
  ]
}"#;

/// A deployment `name` of a model trained on the small data; returns the model id.
async fn deploy(s: &TestServer, owner: &str, schema: &str, name: &str) -> String {
    let r = s
        .upload(owner, name, 1000.0, schema, small_csv(300).into_bytes())
        .await;
    let ds = expect_status(r, StatusCode::CREATED).await["dataset"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = s
        .post(
            owner,
            "/v1/jobs",
            &json!({"dataset_id": ds, "epsilon": 1.0, "tau": 5}),
        )
        .await;
    let job = expect_status(r, StatusCode::ACCEPTED).await;
    let job = s.wait_job(owner, job["id"].as_str().unwrap()).await;
    let model = job["model_id"].as_str().unwrap().to_owned();
    let r = s
        .client
        .put(s.at(&format!("/v1/deployments/{name}")))
        .bearer_auth(owner)
        .json(&json!({"model_id": model}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    model
}

fn bytes_tensor(items: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for s in items {
        out.extend_from_slice(&u32::try_from(s.len()).unwrap().to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_inference_protocol_and_invocations() {
    let s = TestServer::start().await;
    let (_, owner) = s.key("owner", "o").await;
    let (_, analyst) = s.key("analyst", "a").await;
    let model = deploy(&s, &owner, SCHEMA_MISSING, "m").await;
    let xs = [3.0, 42.0, 77.0, 99.0];
    let cs = ["a", "b", "b", "a"];
    let rows: Vec<Value> = xs
        .iter()
        .zip(cs)
        .map(|(x, c)| json!({"x": x, "c": c}))
        .collect();
    let r = s
        .post(&owner, "/v1/deployments/m/predict", &json!({"rows": rows}))
        .await;
    let expected = expect_status(r, StatusCode::OK).await["predictions"].clone();
    let col = |k: &str| -> Vec<Value> {
        expected
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[k].clone())
            .collect()
    };

    // Health and server metadata: public.
    for path in ["/v2/health/live", "/v2/health/ready", "/v2"] {
        let r = s.client.get(s.at(path)).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
    }
    // Model metadata and readiness for a key that did not train the model.
    let meta = expect_status(s.get(&analyst, "/v2/models/m").await, StatusCode::OK).await;
    assert_eq!(
        meta["inputs"],
        json!([{"name": "x", "datatype": "FP64", "shape": [-1]},
               {"name": "c", "datatype": "BYTES", "shape": [-1]}])
    );
    let names: Vec<&str> = meta["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["class", "score", "probability"]);
    // The version as its model id and as its number in the deployment.
    assert_eq!(meta["versions"], json!([model, "1"]));
    for path in [
        "/v2/models/m/ready".to_owned(),
        format!("/v2/models/m/versions/{model}"),
        format!("/v2/models/m/versions/{model}/ready"),
    ] {
        assert_eq!(s.get(&analyst, &path).await.status(), 200, "{path}");
    }
    // Errors in the protocol's shape.
    for path in ["/v2/models/nope", "/v2/models/m/versions/not-a-model/ready"] {
        let r = s.get(&analyst, path).await;
        assert_eq!(r.status(), 404, "{path}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"].as_str().unwrap().contains("not found"),
            "{body}"
        );
        assert!(body.get("type").is_none());
    }
    let r = s.client.get(s.at("/v2/models/m")).send().await.unwrap();
    assert_eq!(r.status(), 401);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());

    // JSON infer without Content-Type, versioned, with an outputs selection.
    let request = json!({
        "id": "r1",
        "inputs": [
            {"name": "x", "datatype": "FP64", "shape": [4, 1], "data": xs},
            {"name": "c", "datatype": "BYTES", "shape": [4], "data": cs},
        ],
        "outputs": [{"name": "probability"}, {"name": "class"}],
    });
    let r = s
        .client
        .post(s.at(&format!("/v2/models/m/versions/{model}/infer")))
        .bearer_auth(&analyst)
        .body(request.to_string())
        .send()
        .await
        .unwrap();
    let out = expect_status(r, StatusCode::OK).await;
    assert_eq!(out["id"], "r1");
    assert_eq!(out["outputs"].as_array().unwrap().len(), 2);
    assert_eq!(out["outputs"][0]["name"], "probability");
    assert_eq!(out["outputs"][0]["data"], json!(col("probability")));
    assert_eq!(out["outputs"][1]["data"], json!(col("class")));
    // An unknown output is an error.
    let mut bad = request.clone();
    bad["outputs"] = json!([{"name": "nope"}]);
    let r = s.post(&analyst, "/v2/models/m/infer", &bad).await;
    assert_eq!(r.status(), 400);
    assert!(r.json::<Value>().await.unwrap()["error"].is_string());

    // Binary request and response.
    let mut x_bin = Vec::new();
    for x in xs {
        x_bin.extend_from_slice(&f64::to_le_bytes(x));
    }
    let c_bin = bytes_tensor(&cs);
    let header = json!({
        "inputs": [
            {"name": "x", "datatype": "FP64", "shape": [4], "parameters": {"binary_data_size": x_bin.len()}},
            {"name": "c", "datatype": "BYTES", "shape": [4], "parameters": {"binary_data_size": c_bin.len()}},
        ],
        "parameters": {"binary_data_output": true},
    })
    .to_string();
    let mut body = header.clone().into_bytes();
    body.extend_from_slice(&x_bin);
    body.extend_from_slice(&c_bin);
    let r = s
        .client
        .post(s.at("/v2/models/m/infer"))
        .bearer_auth(&analyst)
        .header("Inference-Header-Content-Length", header.len())
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let json_len: usize = r.headers()["inference-header-content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let bytes = r.bytes().await.unwrap();
    let head: Value = serde_json::from_slice(&bytes[..json_len]).unwrap();
    let mut rest = &bytes[json_len..];
    for o in head["outputs"].as_array().unwrap() {
        let size = o["parameters"]["binary_data_size"].as_u64().unwrap() as usize;
        let (part, tail) = rest.split_at(size);
        rest = tail;
        let name = o["name"].as_str().unwrap();
        let got: Vec<Value> = if o["datatype"] == "BYTES" {
            let mut v = Vec::new();
            let mut p = part;
            while !p.is_empty() {
                let n = u32::from_le_bytes(p[..4].try_into().unwrap()) as usize;
                v.push(json!(std::str::from_utf8(&p[4..4 + n]).unwrap()));
                p = &p[4 + n..];
            }
            v
        } else {
            part.chunks_exact(8)
                .map(|c| json!(f64::from_le_bytes(c.try_into().unwrap())))
                .collect()
        };
        assert_eq!(got, col(name), "{name}");
    }
    assert!(rest.is_empty());

    // Invocations, four body shapes.
    let split = json!({"dataframe_split": {"columns": ["x", "c"], "index": [0, 1, 2, 3],
        "data": xs.iter().zip(cs).map(|(x, c)| json!([x, c])).collect::<Vec<_>>()}});
    let bodies = [
        split.to_string(),
        json!({"dataframe_records": rows}).to_string(),
        json!({"instances": rows}).to_string(),
        json!({"inputs": {"x": xs, "c": cs}}).to_string(),
        // MLflow's `dump_input_data` writes `params` beside the data.
        json!({"dataframe_records": rows, "params": {}}).to_string(),
        json!({"instances": rows, "params": null}).to_string(),
    ];
    for b in bodies {
        let r = s
            .client
            .post(s.at("/v1/deployments/m/invocations"))
            .bearer_auth(&analyst)
            .header("content-type", "application/json")
            .body(b.clone())
            .send()
            .await
            .unwrap();
        let out = expect_status(r, StatusCode::OK).await;
        assert_eq!(out["predictions"], expected, "{b}");
    }
    // A non-empty `params` is refused by its name, not as a wrong body shape.
    let r = s
        .client
        .post(s.at("/v1/deployments/m/invocations"))
        .bearer_auth(&analyst)
        .json(&json!({"dataframe_records": rows, "params": {"threshold": 0.3}}))
        .send()
        .await
        .unwrap();
    let problem = expect_status(r, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        problem.to_string().contains("params") && problem.to_string().contains("threshold"),
        "{problem}"
    );
    // NaN and null map to missing where the column declares it: the same as "?".
    let r = s
        .post(
            &owner,
            "/v1/deployments/m/predict",
            &json!({"rows": [{"x": "?", "c": "a"}]}),
        )
        .await;
    let missing = expect_status(r, StatusCode::OK).await["predictions"][0].clone();
    for b in [
        r#"{"dataframe_split": {"columns": ["x", "c"], "data": [[NaN, "a"]]}}"#,
        r#"{"dataframe_split": {"columns": ["x", "c"], "data": [[null, "a"]]}}"#,
    ] {
        let r = s
            .client
            .post(s.at("/v1/deployments/m/invocations"))
            .bearer_auth(&analyst)
            .body(b)
            .send()
            .await
            .unwrap();
        assert_eq!(
            expect_status(r, StatusCode::OK).await["predictions"][0],
            missing,
            "{b}"
        );
    }
    // ... and are refused where it does not (problem+json on /v1).
    let r = s
        .client
        .post(s.at("/v1/deployments/m/invocations"))
        .bearer_auth(&analyst)
        .body(r#"{"dataframe_split": {"columns": ["x", "c"], "data": [[1, NaN]]}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/problem+json")
    );
    s.stop().await;
}
