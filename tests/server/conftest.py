"""A real ``hindsight serve``: a subprocess on a free loopback port, over SQLite + Qdrant Edge in
a tmp dir or a fresh PostgreSQL database. Killed in teardown, also on failure.

``served`` (session, both backends) and ``served_sqlite`` (session, SQLite only) give a
:class:`Served`: ``url``, ``key(tenant)`` (creates a key in the server's keys file; the running
server picks it up), ``client(tenant)`` and ``stop()``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from hindsight.client import HindsightClient
from hindsight.service._keys import create_key
from tests.conftest import fresh_pg_database

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT = 90.0
"""Seconds a server may take to answer /health (first start applies SQL migrations)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running ``hindsight serve`` subprocess."""

    url: str
    data_dir: Path
    keys_file: Path
    log: Path
    proc: subprocess.Popen[bytes]
    database_url: str | None = None
    keys: dict[str, str] = field(default_factory=dict)

    def key(self, tenant: str) -> str:
        """An API key of ``tenant`` (created on first use; the server reloads its keys)."""
        if tenant not in self.keys:
            self.keys[tenant] = create_key(self.keys_file, tenant)[0]
        return self.keys[tenant]

    def client(self, tenant: str, **kw: Any) -> HindsightClient:
        return HindsightClient(self.url, self.key(tenant), **kw)

    def http(self, tenant: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.key(tenant)}"} if tenant else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then SIGKILL after ``timeout`` s; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return int(self.proc.returncode)


def start_server(
    data_dir: Path,
    *,
    database_url: str | None = None,
    extra_args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    first_tenant: str | None = "bootstrap",
    pass_keys_file: bool = True,
) -> Served:
    """Start ``python -m hindsight serve`` and wait for /health (fails with its log).

    ``pass_keys_file=False`` leaves ``--keys-file`` out: the server then follows
    ``<data_dir>/api-keys.json`` (``Served.keys_file`` points there)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    keys_file = data_dir / ("keys.json" if pass_keys_file else "api-keys.json")
    if first_tenant:
        create_key(keys_file, first_tenant)  # a server without keys refuses to start
    port = free_port()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_KEYS")}
    full_env.update(
        {
            "HINDSIGHT_DATA_DIR": str(data_dir),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONUNBUFFERED": "1",
        }
    )
    full_env.pop("DATABASE_URL", None)
    full_env.pop("HINDSIGHT_DATABASE_URL", None)
    if database_url:
        full_env["DATABASE_URL"] = database_url
    full_env.update(env or {})
    log = data_dir / "serve.log"
    args = [sys.executable, "-m", "hindsight", "serve", "--port", str(port)]
    if pass_keys_file:
        args += ["--keys-file", str(keys_file)]
    args += ["--log-level", "warning", *extra_args]
    with log.open("wb") as out:
        proc = subprocess.Popen(args, cwd=REPO, env=full_env, stdout=out, stderr=out)
    served = Served(f"http://127.0.0.1:{port}", data_dir, keys_file, log, proc, database_url)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(
                f"hindsight serve exited with {proc.returncode}:\n{served.output()}"
            )
        try:
            if httpx.get(served.url + "/health", timeout=2.0).status_code == 200:
                return served
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    served.stop()
    raise AssertionError(f"hindsight serve did not answer in {START_TIMEOUT} s:\n{served.output()}")


def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database (skipped without HINDSIGHT_TEST_DATABASE_URL, failed
    under CI), dropped afterwards."""
    yield from fresh_pg_database()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """``hindsight serve`` over SQLite + Qdrant Edge, and over PostgreSQL + Qdrant Edge."""
    data_dir = tmp_path_factory.mktemp(f"serve-{request.param}")
    if request.param == "sqlite":
        server = start_server(data_dir)
        try:
            yield server
        finally:
            server.stop()
        return
    for url in postgres_url():
        server = start_server(data_dir, database_url=url)
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def served_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One ``hindsight serve`` over SQLite + Qdrant Edge (for tests that need one backend)."""
    server = start_server(tmp_path_factory.mktemp("serve-sqlite-only"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tenant_pair(request: pytest.FixtureRequest) -> tuple[str, str]:
    """Two tenant names unique to the test (the session server is shared)."""
    base = request.node.name.replace("[", "-").replace("]", "")[:60]
    return f"a-{base}", f"b-{base}"
