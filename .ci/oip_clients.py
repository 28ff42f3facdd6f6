"""The real clients against a running server: tritonclient[http] with its
defaults (binary tensors) and with JSON outputs, and pandas MLflow-style
bodies on /invocations; every answer must equal /v1/.../predict exactly.

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

    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
