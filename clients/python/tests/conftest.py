"""Fixtures: a real `privboost serve` and keys for each role.

The server is the one at $PRIVBOOST_TEST_URL with admin key
$PRIVBOOST_TEST_ADMIN_KEY (what .ci/python-client starts), else one that
this session starts from $PRIVBOOST_BINARY (default: the repository's
target/debug/privboost) on a free port with a temporary data directory.
The shipped data sets are read from the repository ($PRIVBOOST_REPO, default
three levels above this folder).
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

from privboost import Client

REPO = Path(os.environ.get("PRIVBOOST_REPO") or Path(__file__).resolve().parents[3])
DATA = REPO / "data"


def binary_path() -> str:
    path = os.environ.get("PRIVBOOST_BINARY") or str(REPO / "target" / "debug" / "privboost")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.exit(f"no privboost binary at {path}: run `cargo build` or set PRIVBOOST_BINARY", returncode=2)
    return path


@pytest.fixture(scope="session")
def binary() -> str:
    return binary_path()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server():
    """(base_url, admin_key) of a running server."""
    url, admin = os.environ.get("PRIVBOOST_TEST_URL"), os.environ.get("PRIVBOOST_TEST_ADMIN_KEY")
    if url and admin:
        yield url, admin
        return
    admin = "pb_test_" + secrets.token_hex(32)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="privboost-test-") as data_dir:
        log = open(os.path.join(data_dir, "server.log"), "wb")  # noqa: SIM115
        proc = subprocess.Popen(
            [binary_path(), "serve", "--bind", f"127.0.0.1:{port}", "--data-dir", data_dir, "--workers", "1"],
            env={**os.environ, "PRIVBOOST_ADMIN_KEY": admin},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(url + "/healthz", timeout=1)
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("privboost serve did not start; see its log") from None
                    time.sleep(0.1)
            yield url, admin
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.close()


@pytest.fixture(scope="session")
def admin(server) -> Client:
    url, key = server
    return Client(url, key)


@pytest.fixture(scope="session")
def owner(admin) -> Client:
    created = admin.create_key("owner", f"py-owner-{uuid.uuid4().hex[:8]}")
    client = admin.with_key(created["key"])
    client.key_id = created["id"]
    return client


@pytest.fixture(scope="session")
def analyst(admin) -> Client:
    created = admin.create_key("analyst", f"py-analyst-{uuid.uuid4().hex[:8]}")
    client = admin.with_key(created["key"])
    client.key_id = created["id"]
    return client
