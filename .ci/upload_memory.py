"""Peak memory of `privboost serve` while it accepts one large streamed upload.

Usage: python3 .ci/upload_memory.py BINARY BYTES [--warm-up BYTES]

Starts BINARY (`target/debug/privboost` or a release build) on a free port
with a temp data directory, creates an owner key, and uploads BYTES of CSV
made by cycling the rows of data/mushroom/mushroom.csv, generated while
sending (chunked transfer: neither side holds the file). Prints one JSON
line: bytes sent, rows, HTTP status, seconds, the server's VmHWM (peak
resident set, from /proc/PID/status) before and after the upload, and for an
accepted upload the literals d and the growth over the bit matrix's size. Linux
only. The server is stopped at the end.

With --warm-up W, the server first accepts an upload of W bytes (not
measured): the baseline then includes what the first upload pays once (the
parsing pool's threads and their allocator arenas, SQLite's caches), and
the growth is that of an upload to a server in service.
"""

import argparse
import http.client
import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def vm(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def upload(port, owner, schema, header, block, rows_per_block, total, name):
    """Stream `total` bytes of rows as one upload; returns (status, body, bytes, rows, seconds)."""
    boundary = "privboost-memory"
    pre = "".join(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
        for k, v in [("name", name), ("epsilon", "1"), ("schema", schema)]
    ).encode()
    pre += (f'--{boundary}\r\nContent-Disposition: form-data; name="data"; filename="big.csv"\r\n'
            f"Content-Type: text/csv\r\n\r\n").encode() + header
    post = f"\r\n--{boundary}--\r\n".encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    conn.putrequest("POST", "/v1/datasets")
    conn.putheader("Authorization", f"Bearer {owner}")
    conn.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
    conn.putheader("Transfer-Encoding", "chunked")
    conn.endheaders()

    def send(data):
        conn.send(b"%x\r\n%s\r\n" % (len(data), data))

    started = time.monotonic()
    sent, n_rows = 0, 0
    try:
        send(pre)
        while sent + len(block) <= total:
            send(block)
            sent += len(block)
            n_rows += rows_per_block
        send(post)
        conn.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        # Refused while streaming (a limit): the answer is waiting.
        pass
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, body, sent, n_rows, time.monotonic() - started


def main():
    parser = argparse.ArgumentParser(description="Peak memory of one large streamed upload.")
    parser.add_argument("binary")
    parser.add_argument("bytes", type=int)
    parser.add_argument("--warm-up", type=int, default=0, metavar="BYTES",
                        help="upload this many bytes first, unmeasured")
    args = parser.parse_args()
    binary, total = args.binary, args.bytes
    with open(os.path.join(ROOT, "data/mushroom/mushroom.csv"), "rb") as f:
        header, *rows = f.read().splitlines(keepends=True)
    with open(os.path.join(ROOT, "data/mushroom/schema.json")) as f:
        schema = f.read()
    block = b"".join(rows)  # ~370 KB of rows, repeated
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    admin = "pb_mem_" + secrets.token_hex(32)
    with tempfile.TemporaryDirectory() as data_dir:
        server = subprocess.Popen(
            [binary, "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", data_dir, "--workers", "1",
             "--max-upload-bytes", str(max(total, args.warm_up) + (1 << 20)), "--request-timeout", "3600"],
            env={**os.environ, "PRIVBOOST_ADMIN_KEY": admin},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(200):
                try:
                    urllib.request.urlopen(base + "/healthz", timeout=1)
                    break
                except OSError:
                    time.sleep(0.05)
            req = urllib.request.Request(base + "/v1/keys", method="POST",
                                         data=json.dumps({"role": "owner", "name": "mem"}).encode(),
                                         headers={"Authorization": f"Bearer {admin}",
                                                  "Content-Type": "application/json"})
            owner = json.load(urllib.request.urlopen(req))["key"]
            if args.warm_up:
                status, body, *_ = upload(port, owner, schema, header, block, len(rows), args.warm_up, "warm-up")
                if status != 201:
                    sys.exit(f"the warm-up upload was answered {status}: {body[:300]!r}")
            baseline = vm(server.pid, "VmHWM")
            status, body, sent, n_rows, seconds = upload(
                port, owner, schema, header, block, len(rows), total, "memory")
            peak = vm(server.pid, "VmHWM")
            out = {
                "csv_bytes": sent,
                "rows": n_rows,
                "status": status,
                "seconds": round(seconds, 1),
                "warm_up_bytes": args.warm_up,
                "vmhwm_before_upload_mib": round(baseline / 2**20, 1),
                "vmhwm_after_upload_mib": round(peak / 2**20, 1),
                "peak_growth_mib": round((peak - baseline) / 2**20, 1),
            }
            if status == 201:
                dataset = json.loads(body)["dataset"]
                out["literals"] = dataset["n_literals"]
                bits = dataset["n_rows"] * (dataset["n_literals"] + 1) / 8
                out["growth_over_bits"] = round((peak - baseline) / bits, 2)
            else:
                out["body"] = body.decode(errors="replace")[:300]
            print(json.dumps(out))
        finally:
            server.terminate()
            server.wait(timeout=60)


if __name__ == "__main__":
    main()
