"""The real clients against a running server: tritonclient[http] with its
defaults (binary tensors) and with JSON outputs, and pandas MLflow-style
bodies on /invocations; every answer must equal /v1/.../predict exactly.

Then the multiclass acceptance (issue 27): a 7-class dp-linear model
trained over HTTP by the Python client's estimator (privboost, installed in
the same venv) and deployed is served by tritonclient with default
arguments (an [n, 7] probabilities tensor, the class names in the model
metadata), by the MLflow payloads and by the Python client (Client.predict,
the estimator's predict and predict_proba), with identical classes and
probabilities across all of them.

Usage: oip_clients.py BASE_URL ADMIN_KEY  (run in the venv made by .ci/oip-clients)
Prints `N passed, N failed` and exits non-zero on any failure.
"""

import json
import sys
import time
import urllib.request

import numpy as np
import pandas as pd
import tritonclient.http as httpclient

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from contract_fixtures import call, multipart, small_csv  # noqa: E402

SCHEMA = {
    "label": {"column": "y", "positive": "1", "negative": "0"},
    "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4, "missing": ["?"]},
        {"name": "c", "type": "categorical", "categories": ["a", "b"]},
    ],
}
passed, failed = 0, 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what} {detail}")


def setup(base, admin):
    owner = call(base, admin, "POST", "/v1/keys", {"role": "owner", "name": "oip-owner"}, expect=(201,))
    analyst = call(base, admin, "POST", "/v1/keys", {"role": "analyst", "name": "oip-analyst"}, expect=(201,))
    body, ctype = multipart(
        [("name", "oip-small"), ("epsilon", "1000"), ("schema", json.dumps(SCHEMA))], "data", "s.csv", small_csv(300)
    )
    ds = call(base, owner["key"], "POST", "/v1/datasets", body, content_type=ctype, expect=(201,))["dataset"]["id"]
    job = call(base, owner["key"], "POST", "/v1/jobs", {"dataset_id": ds, "epsilon": 1.0, "tau": 5}, expect=(202,))
    deadline = time.monotonic() + 120
    while job["state"] not in ("succeeded", "failed", "cancelled") and time.monotonic() < deadline:
        time.sleep(0.2)
        job = call(base, owner["key"], "GET", f"/v1/jobs/{job['id']}")
    if job["state"] != "succeeded":
        sys.exit(f"set-up: job {job['state']}")
    call(base, owner["key"], "PUT", "/v1/deployments/oip", {"model_id": job["model_id"]}, expect=(201, 200))
    return owner["key"], analyst["key"], job["model_id"]


def main():
    base, admin = sys.argv[1], sys.argv[2]
    owner, analyst, model_id = setup(base, admin)
    xs = [3.0, 42.0, 77.0, float("nan"), 99.0, 51.0]
    cs = ["a", "b", "b", "a", "a", "b"]
    rows = [{"x": (None if np.isnan(x) else x), "c": c} for x, c in zip(xs, cs)]
    expected = call(base, owner, "POST", "/v1/deployments/oip/predict", {"rows": rows})["predictions"]

    # The analyst key did not train the model: it may still read metadata and infer.
    client = httpclient.InferenceServerClient(url=base.removeprefix("http://"))
    auth = {"Authorization": f"Bearer {analyst}"}
    check("is_server_live", client.is_server_live())
    check("is_server_ready", client.is_server_ready())
    check("is_model_ready", client.is_model_ready("oip", headers=auth))
    check("is_model_ready(version)", client.is_model_ready("oip", model_id, headers=auth))
    meta = client.get_model_metadata("oip", headers=auth)
    check(
        "get_model_metadata",
        [(i["name"], i["datatype"]) for i in meta["inputs"]] == [("x", "FP64"), ("c", "BYTES")]
        and [o["name"] for o in meta["outputs"]] == ["class", "score", "probability"],
        meta,
    )
    try:
        client.get_model_metadata("no-such-model", headers=auth)
        check("error decodes", False)
    except Exception as e:  # InferenceServerException with the server's message
        check("error decodes", "not found" in str(e), e)

    x = httpclient.InferInput("x", [len(xs)], "FP64")
    x.set_data_from_numpy(np.array(xs, dtype=np.float64))
    c = httpclient.InferInput("c", [len(cs)], "BYTES")
    c.set_data_from_numpy(np.array([s.encode() for s in cs], dtype=np.object_))
    want_class = [p["class"] for p in expected]
    want_score = [p["score"] for p in expected]
    want_prob = [p["probability"] for p in expected]

    def same(res, how):
        got_class = [v.decode() if isinstance(v, bytes) else v for v in res.as_numpy("class").tolist()]
        check(f"infer {how}: class", got_class == want_class, (got_class, want_class))
        check(f"infer {how}: score", res.as_numpy("score").tolist() == want_score)
        check(f"infer {how}: probability", res.as_numpy("probability").tolist() == want_prob)

    same(client.infer("oip", [x, c], headers=auth), "binary (defaults)")
    outs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("class", "score", "probability")]
    same(client.infer("oip", [x, c], outputs=outs, headers=auth), "JSON outputs")
    xj = httpclient.InferInput("x", [len(xs)], "FP64")
    xj.set_data_from_numpy(np.array(xs, dtype=np.float64), binary_data=False)
    only = client.infer("oip", [x, c], outputs=[httpclient.InferRequestedOutput("score")], headers=auth)
    check("outputs selection", only.as_numpy("class") is None and only.as_numpy("score").tolist() == want_score)
    same(client.infer("oip", [x, c], model_version=model_id, headers=auth), "versioned")

    df = pd.DataFrame({"x": xs, "c": cs})
    for orient, key in (("split", "dataframe_split"), ("records", "dataframe_records")):
        body = ('{"%s": %s}' % (key, df.to_json(orient=orient))).encode()
        req = urllib.request.Request(base + "/v1/deployments/oip/invocations", data=body, method="POST")
        req.add_header("Authorization", f"Bearer {analyst}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            got = json.loads(r.read())["predictions"]
        check(f"invocations {key} (pandas to_json)", got == expected, (got, expected))

    multiclass(base, owner, analyst)

    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


CLASSES7 = [f"k{i}" for i in range(7)]
SCHEMA7 = {
    "label": {"column": "y", "classes": CLASSES7},
    "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 70, "bins": 7, "missing": ["?"]},
        {"name": "c", "type": "categorical", "categories": ["a", "b"]},
    ],
}


def table7(n):
    """x in [0, 70) decides the class (x // 10), one row in ten moved to the next class."""
    xs = [(i * 37) % 70 + 0.5 for i in range(n)]
    cs = ["a" if i % 3 == 0 else "b" for i in range(n)]
    ys = [CLASSES7[(int(x) // 10 + (i % 10 == 0)) % 7] for i, (x) in enumerate(xs)]
    return pd.DataFrame({"x": xs, "c": cs, "y": ys})


def multiclass(base, owner, analyst):
    """A 7-class model trained over HTTP, served by the three clients alike."""
    from privboost import Client, PrivboostClassifier

    train = table7(2100)
    writer = Client(base, owner)
    created = writer.upload_dataset("oip-seven", train, SCHEMA7, 1000.0, 0.0)
    ds = created["dataset"]["id"]
    est = PrivboostClassifier(algorithm="dp-linear", epsilon=20.0, client=writer, dataset=ds).fit()
    check("estimator classes_ (the schema's class list)", list(est.classes_) == CLASSES7, est.classes_)
    call(base, owner, "PUT", "/v1/deployments/oip7", {"model_id": est.model_id_}, expect=(201, 200))

    xs = [5.0, 15.0, 25.0, 35.0, float("nan"), 55.0, 65.0, 0.0, 69.9]
    cs = ["a", "b", "a", "b", "a", "b", "a", "b", "a"]
    frame = pd.DataFrame({"x": xs, "c": cs})
    rows = [{"x": (None if np.isnan(x) else x), "c": c} for x, c in zip(xs, cs)]
    expected = call(base, owner, "POST", "/v1/deployments/oip7/predict", {"rows": rows})["predictions"]
    want_class = [p["class"] for p in expected]
    want_prob = np.array([p["probabilities"] for p in expected], dtype=np.float64)
    check("7 classes answered", want_prob.shape == (len(xs), 7) and set(want_class) <= set(CLASSES7), expected)
    check("most rows predicted right", sum(w == f"k{int(x) // 10}" for w, x in zip(want_class, xs) if x == x) >= 6,
          want_class)

    # tritonclient, default arguments (binary outputs), read-only key.
    client = httpclient.InferenceServerClient(url=base.removeprefix("http://"))
    auth = {"Authorization": f"Bearer {analyst}"}
    meta = client.get_model_metadata("oip7", headers=auth)
    outs = {o["name"]: o for o in meta["outputs"]}
    check("multiclass metadata: outputs", list(outs) == ["class", "probabilities"], meta)
    check("multiclass metadata: probabilities shape [-1, 7]", outs.get("probabilities", {}).get("shape") == [-1, 7],
          meta)
    check("multiclass metadata: class names",
          all(o.get("parameters", {}).get("classes") == CLASSES7 for o in outs.values()), meta)
    x = httpclient.InferInput("x", [len(xs)], "FP64")
    x.set_data_from_numpy(np.array(xs, dtype=np.float64))
    c = httpclient.InferInput("c", [len(cs)], "BYTES")
    c.set_data_from_numpy(np.array([s.encode() for s in cs], dtype=np.object_))
    res = client.infer("oip7", [x, c], headers=auth)
    got_class = [v.decode() if isinstance(v, bytes) else v for v in res.as_numpy("class").tolist()]
    check("tritonclient (defaults): class", got_class == want_class, (got_class, want_class))
    got_prob = res.as_numpy("probabilities")
    check("tritonclient (defaults): probabilities [n, 7]",
          got_prob is not None and got_prob.shape == want_prob.shape and np.array_equal(got_prob, want_prob),
          (got_prob, want_prob))
    json_out = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("class", "probabilities")]
    res = client.infer("oip7", [x, c], outputs=json_out, headers=auth)
    check("tritonclient (JSON outputs): probabilities", np.array_equal(res.as_numpy("probabilities"), want_prob))

    # MLflow-style payloads (pandas to_json), read-only key.
    for orient, key in (("split", "dataframe_split"), ("records", "dataframe_records")):
        body = ('{"%s": %s}' % (key, frame.to_json(orient=orient))).encode()
        req = urllib.request.Request(base + "/v1/deployments/oip7/invocations", data=body, method="POST")
        req.add_header("Authorization", f"Bearer {analyst}")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            got = json.loads(r.read())["predictions"]
        check(f"multiclass invocations {key}", got == expected, (got, expected))

    # The Python client: the deployment, and the estimator that trained the model.
    reader = Client(base, analyst)
    served = reader.predict("oip7", frame)
    check("Client.predict: class", served["class"].tolist() == want_class, served)
    check("Client.predict: probabilities",
          np.array_equal(np.array(served["probabilities"].tolist(), dtype=np.float64), want_prob), served)
    proba = est.predict_proba(frame)
    check("estimator predict_proba (n, 7)", proba.shape == (len(xs), 7) and np.array_equal(proba, want_prob),
          (proba, want_prob))
    check("estimator predict", est.predict(frame).tolist() == want_class)
    check("estimator predict == argmax predict_proba",
          [CLASSES7[i] for i in proba.argmax(axis=1)] == want_class)


if __name__ == "__main__":
    main()
