#!/usr/bin/env bash
# Single-row predict load against a real `privboost serve` with wrk
# (Debian's package: apt-get install wrk), the client on the same machine.
#
#   scripts/predict_load.sh [BINARY] [CONNECTIONS] [SECONDS]
#
# Starts BINARY (default target/release/privboost) on a free loopback port
# with a fresh data directory, INFO logs (the default filter) to a file and
# no rate limit; uploads the shipped Mushroom data, trains LazyBB (tau 15,
# epsilon 1), deploys it as "mushroom", then runs wrk (1 thread,
# CONNECTIONS keep-alive connections, default 16) for SECONDS (default 10)
# against POST /v1/deployments/mushroom/predict with one 22-column row and
# the owner's key. Prints wrk's figures and the machine's load.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/privboost}
CONNECTIONS=${2:-16}
SECONDS_=${3:-10}
command -v wrk >/dev/null || { echo "predict_load: wrk is not installed (apt-get install wrk)" >&2; exit 1; }
WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE=http://127.0.0.1:$PORT
ADMIN=pb_load_admin_$(python3 -c 'import secrets; print(secrets.token_hex(16))')
"$BIN" serve --bind 127.0.0.1:$PORT --data-dir "$WORK/data" --admin-key "$ADMIN" --rate-limit 0 \
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
python3 - "$WORK/body.json" <<'PY'
import csv, json, sys
with open("data/mushroom/mushroom.csv", newline="") as f:
    rows = csv.reader(f)
    header = next(rows)
    row = next(rows)
body = {"rows": [{k: v for k, v in zip(header, row) if k != "class"}]}
open(sys.argv[1], "w").write(json.dumps(body))
PY
cat > "$WORK/post.lua" <<LUA
local f = io.open("$WORK/body.json", "r")
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $OWNER"
LUA
echo "predict load: $(nproc) cores, wrk 1 thread, $CONNECTIONS connections, ${SECONDS_}s, INFO logs to a file"
wrk -t1 -c"$CONNECTIONS" -d"${SECONDS_}s" --latency -s "$WORK/post.lua" $BASE/v1/deployments/mushroom/predict
echo "log lines written: $(wc -l < "$WORK/serve.log"); load average: $(cut -d' ' -f1-3 /proc/loadavg)"
