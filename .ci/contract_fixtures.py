"""Set up the resources the contract fuzzing run needs (standard library only).

Usage: contract_fixtures.py BASE_URL ADMIN_KEY

Creates an owner key and an analyst key, uploads a small synthetic dataset,
grants the analyst, trains one model, deploys it, and prints `export NAME=value`
lines for .ci/contract-fuzz (the ids feed .ci/schemathesis.toml). Any
unexpected answer stops with the status and body, so a broken set-up fails
CI with a reason instead of a fuzzing run against nothing.
"""

import json
import sys
import time
import urllib.error
import urllib.request
import uuid

SCHEMA = {
    "label": {"column": "y", "positive": "1", "negative": "0"},
    "columns": [
        {"name": "x", "type": "numeric", "min": 0, "max": 100, "bins": 4},
        {"name": "c", "type": "categorical", "categories": ["a", "b"]},
    ],
}


def small_csv(n):
    lines = ["x,c,y"]
    for i in range(n):
        x = (i * 37) % 100
        c = "a" if i % 3 == 0 else "b"
        lines.append(f"{x},{c},{int(x > 50 or c == 'a')}")
    return ("\n".join(lines) + "\n").encode()


def call(base, key, method, path, body=None, content_type="application/json", expect=(200,)):
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {key}")
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    if status not in expect:
        sys.exit(f"fixture set-up: {method} {path} answered {status}, expected {expect}: {text}")
    return json.loads(text) if text else None


def multipart(fields, file_field, file_name, file_bytes):
    boundary = uuid.uuid4().hex
    out = b""
    for name, value in fields:
        out += f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
    out += (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
        f'filename="{file_name}"\r\nContent-Type: text/csv\r\n\r\n'
    ).encode()
    out += file_bytes + f"\r\n--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def main():
    base, admin = sys.argv[1], sys.argv[2]
    owner = call(base, admin, "POST", "/v1/keys", {"role": "owner", "name": "ci-owner"}, expect=(201,))
    analyst = call(base, admin, "POST", "/v1/keys", {"role": "analyst", "name": "ci-analyst"}, expect=(201,))
    body, ctype = multipart(
        [("name", "ci-small"), ("epsilon", "1000"), ("schema", json.dumps(SCHEMA))],
        "data",
        "small.csv",
        small_csv(300),
    )
    dataset = call(base, owner["key"], "POST", "/v1/datasets", body, content_type=ctype, expect=(201,))
    dataset_id = dataset["dataset"]["id"]
    call(base, owner["key"], "PUT", f"/v1/datasets/{dataset_id}/grants/{analyst['id']}", expect=(204,))
    job = call(
        base, owner["key"], "POST", "/v1/jobs", {"dataset_id": dataset_id, "epsilon": 1.0, "tau": 5}, expect=(202,)
    )
    deadline = time.monotonic() + 120
    while True:
        job = call(base, owner["key"], "GET", f"/v1/jobs/{job['id']}")
        if job["state"] in ("succeeded", "failed", "cancelled"):
            break
        if time.monotonic() > deadline:
            sys.exit(f"fixture set-up: job still {job['state']} after 120 s")
        time.sleep(0.2)
    if job["state"] != "succeeded":
        sys.exit(f"fixture set-up: the job ended {job['state']}: {job}")
    call(base, owner["key"], "PUT", "/v1/deployments/ci-model", {"model_id": job["model_id"]}, expect=(201,))
    exports = {
        "PB_OWNER_KEY": owner["key"],
        "PB_ANALYST_KEY": analyst["key"],
        "PB_ANALYST_ID": analyst["id"],
        "PB_DATASET_ID": dataset_id,
        "PB_JOB_ID": job["id"],
        "PB_MODEL_ID": job["model_id"],
        "PB_DEPLOYMENT": "ci-model",
    }
    for name, value in exports.items():
        print(f"export {name}={value}")


if __name__ == "__main__":
    main()
