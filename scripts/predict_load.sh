#!/usr/bin/env bash
# Predict load against a real `privboost serve` with wrk
# (Debian's package: apt-get install wrk), the client on the same machine.
#
#   scripts/predict_load.sh [--oip | --oip-binary] [--rows N] [--rate-limit R] [BINARY] [CONNECTIONS] [SECONDS]
#
# Starts BINARY (default target/release/privboost) on a free loopback port
# with a fresh data directory, INFO logs (the default filter) to a file;
# uploads the shipped Mushroom data, trains LazyBB (tau 15, epsilon 1),
# deploys it as "mushroom", then runs wrk (1 thread, CONNECTIONS keep-alive
# connections, default 16) for SECONDS (default 10) with the owner's key
# against POST /v1/deployments/mushroom/predict, or with --oip against the
# Open Inference Protocol's POST /v2/models/mushroom/infer (one input
# tensor per column; --oip-binary sends the tensors and asks for the
# outputs in the protocol's binary tensor data extension). Each request
# carries N rows (default 1; Mushroom's rows in order, repeated). --rate-limit R runs the server with the per-key
# limiter on at R requests/s and a burst of R (default 0: off; choose R
# above what the server can answer so that nothing is refused, and check
# that wrk prints no "Non-2xx" line). Prints wrk's figures, rows/s, and the
# machine's load.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUTE=predict
ROWS=1
RATE=0
while [ $# -gt 0 ]; do
  case "$1" in
    --oip) ROUTE=oip; shift ;;
    --oip-binary) ROUTE=oip-binary; shift ;;
    --rows) ROWS=$2; shift 2 ;;
    --rate-limit) RATE=$2; shift 2 ;;
    *) break ;;
  esac
done
RATE_FLAGS=(--rate-limit "$RATE")
if [ "$RATE" != 0 ]; then RATE_FLAGS+=(--rate-burst "$RATE"); fi
BIN=${1:-target/release/privboost}
CONNECTIONS=${2:-16}
SECONDS_=${3:-10}
command -v wrk >/dev/null || { echo "predict_load: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE=http://127.0.0.1:$PORT
ADMIN=pb_load_admin_$(python3 -c 'import secrets; print(secrets.token_hex(16))')
"$BIN" serve --bind 127.0.0.1:$PORT --data-dir "$WORK/data" --admin-key "$ADMIN" "${RATE_FLAGS[@]}" \
  >/dev/null 2>"$WORK/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 100); do curl -sf $BASE/healthz >/dev/null && break; sleep 0.1; done
json() { python3 -c "import sys, json; print(json.load(sys.stdin)$1)"; }
OWNER=$(curl -sf -X POST $BASE/v1/keys -H "Authorization: Bearer $ADMIN" \
  -H 'content-type: application/json' -d '{"role":"owner","name":"load"}' | json '["key"]')
DATASET=$(curl -sf -X POST $BASE/v1/datasets -H "Authorization: Bearer $OWNER" -F name=mushroom -F epsilon=1 \
  -F "schema=<data/mushroom/schema.json" -F "data=@data/mushroom/mushroom.csv" | json '["dataset"]["id"]')
JOB=$(curl -sf -X POST $BASE/v1/jobs -H "Authorization: Bearer $OWNER" -H 'content-type: application/json' \
  -d "{\"dataset_id\":\"$DATASET\",\"epsilon\":1.0,\"tau\":15}" | json '["id"]')
MODEL=
for _ in $(seq 300); do
  MODEL=$(curl -sf $BASE/v1/jobs/$JOB -H "Authorization: Bearer $OWNER" | json '.get("model_id") or ""')
  [ -n "$MODEL" ] && break; sleep 0.1
done
[ -n "$MODEL" ] || { echo "predict_load: training did not finish" >&2; exit 1; }
curl -sf -X PUT $BASE/v1/deployments/mushroom -H "Authorization: Bearer $OWNER" \
  -H 'content-type: application/json' -d "{\"model_id\":\"$MODEL\"}" >/dev/null
python3 - "$WORK/body.json" "$ROUTE" "$ROWS" "$WORK/header_length" <<'PY'
import csv, itertools, json, struct, sys
out, route, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open("data/mushroom/mushroom.csv", newline="") as f:
    rows = csv.reader(f)
    header = next(rows)
    data = list(rows)
rows = [{k: v for k, v in zip(header, r) if k != "class"} for r in itertools.islice(itertools.cycle(data), n)]
if route == "oip":
    names = [k for k in header if k != "class"]
    body = {"inputs": [{"name": k, "shape": [n], "datatype": "BYTES", "data": [r[k] for r in rows]} for k in names]}
elif route == "oip-binary":
    names = [k for k in header if k != "class"]
    tensors = [b"".join(struct.pack("<I", len(r[k].encode())) + r[k].encode() for r in rows) for k in names]
    head = json.dumps({"inputs": [{"name": k, "shape": [n], "datatype": "BYTES",
                                   "parameters": {"binary_data_size": len(t)}} for k, t in zip(names, tensors)],
                       "parameters": {"binary_data_output": True}}).encode()
    open(sys.argv[4], "w").write(str(len(head)))
    open(out, "wb").write(head + b"".join(tensors))
    sys.exit(0)
else:
    body = {"rows": rows}
open(out, "w").write(json.dumps(body))
PY
cat > "$WORK/post.lua" <<LUA
local f = io.open("$WORK/body.json", "rb")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $OWNER"
LUA
EXTRA=()
if [ "$ROUTE" = oip-binary ]; then
  EXTRA=(-H "Inference-Header-Content-Length: $(cat "$WORK/header_length")")
  echo "wrk.headers[\"Inference-Header-Content-Length\"] = \"$(cat "$WORK/header_length")\"" >> "$WORK/post.lua"
  echo 'wrk.headers["Content-Type"] = "application/octet-stream"' >> "$WORK/post.lua"
fi
case $ROUTE in
  oip | oip-binary) URL=$BASE/v2/models/mushroom/infer ;;
  *) URL=$BASE/v1/deployments/mushroom/predict ;;
esac
curl -sf -X POST "$URL" -H "Authorization: Bearer $OWNER" -H 'content-type: application/json' "${EXTRA[@]}" \
  --data-binary "@$WORK/body.json" >/dev/null || { echo "predict_load: the request is refused" >&2; exit 1; }
echo "predict load: $(nproc) cores, wrk 1 thread, $CONNECTIONS connections, ${SECONDS_}s, $ROWS row(s) per request to ${URL#$BASE}, rate limit ${RATE}/s (0: off), INFO logs to a file; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_}s" --latency -s "$WORK/post.lua" "$URL" | tee "$WORK/wrk.txt"
RPS=$(awk '/^Requests\/sec/ {print $2}' "$WORK/wrk.txt")
echo "rows/s: $(python3 -c "print(round($RPS * $ROWS))")"
# Issue 30's serving targets beside the figures: one row per request at
# >= 30k requests/s with p99 < 2 ms; a 10,000-row batch at >= 5 M rows/s.
P99=$(awk '$1 == "99%" {print $2}' "$WORK/wrk.txt")
python3 - "$RPS" "$ROWS" "$P99" <<'PY'
import sys
rps, rows, p99 = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}
ms = next((float(p99[:-len(u)]) * f for u, f in sorted(unit.items(), key=lambda x: -len(x[0]))
           if p99.endswith(u)), float("nan"))
if rows == 1:
    met = rps >= 30000 and ms < 2.0
    print(f"issue 30 target: >= 30000 requests/s with p99 < 2 ms: {rps:.0f} requests/s, "
          f"p99 {ms:.2f} ms: {'met' if met else 'not met'}")
elif rows == 10000:
    print(f"issue 30 target: >= 5 M rows/s for 10,000-row requests: {rps * rows / 1e6:.2f} M rows/s: "
          f"{'met' if rps * rows >= 5e6 else 'not met'}")
PY
echo "log lines written: $(wc -l < "$WORK/serve.log"); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
