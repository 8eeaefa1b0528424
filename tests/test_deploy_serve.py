"""The compose configuration path for real, without Docker: ``hindsight
serve`` as the image runs it, with the hindsight-api service's environment resolved from
.env.example, against a fresh PostgreSQL database on loopback; /health, /ready, API keys and
the image's HEALTHCHECK command over real HTTP. (The Qdrant server of compose is replaced by
the embedded shard in a temporary data dir: there is no Qdrant server here.)"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from tests.cli_helpers import cli_env
from tests.test_deploy import (
    ENV_EXAMPLE,
    SERVE_CMD,
    container_env,
    dockerfile,
    env_file,
    exec_form,
    healthcheck_command,
    services,
)

pytestmark = pytest.mark.postgres


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve_env(database_url: str, data_dir: Path) -> dict[str, str]:
    """The hindsight-api container's environment, pointed at this machine."""
    dotenv = env_file(ENV_EXAMPLE)
    env = container_env("hindsight-api", dotenv)
    # compose writes postgresql://...; the same plain scheme, to the test database.
    env["DATABASE_URL"] = database_url.replace("postgresql+psycopg://", "postgresql://", 1)
    env["HINDSIGHT_DATA_DIR"] = str(data_dir)
    assert "VECTOR_DB_URL" not in env  # compose's default: the vectors in PostgreSQL (pgvector)
    return cli_env(None, **env)


def _argv(port: int) -> list[str]:
    """The image's CMD, on loopback and a free port, with this environment's console script."""
    argv = [("127.0.0.1" if a == "0.0.0.0" else str(port) if a == "8710" else a) for a in SERVE_CMD]
    script = Path(sys.executable).parent / "hindsight"
    return [str(script), *argv[1:]] if script.exists() else [sys.executable, "-m", *argv]


@pytest.fixture
def server(
    database_url: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], int, str, Path]]:
    port = _free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            _argv(port),
            env=_serve_env(database_url, tmp_path / "data"),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"hindsight serve exited:\n{log.read_text()[-3000:]}"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"no /health in 90 s:\n{log.read_text()[-3000:]}"
            time.sleep(0.2)
        yield proc, port, database_url, tmp_path / "data"
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def _probe(argv: list[str], port: int) -> int:
    local = [a.replace("8710", str(port)) for a in argv]
    return subprocess.run(local, capture_output=True, timeout=30, check=False).returncode


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_serve_with_the_compose_environment(
    server: tuple[subprocess.Popen[str], int, str, Path],
) -> None:
    proc, port, database_url, data_dir = server
    base = f"http://127.0.0.1:{port}"
    assert httpx.get(f"{base}/health").json() == {"status": "ok"}
    ready = httpx.get(f"{base}/ready", timeout=15)
    assert ready.status_code == 200, ready.text

    # Keys come from HINDSIGHT_API_KEYS of .env.example: acme's key is acme's, nothing else is.
    key = env_file(ENV_EXAMPLE)["HINDSIGHT_API_KEYS"].split(":", 1)[1]
    assert httpx.get(f"{base}/v1/stats").status_code == 401
    assert httpx.get(f"{base}/v1/stats", headers={"X-API-Key": key + "x"}).status_code == 401
    stats = httpx.get(f"{base}/v1/stats", headers={"Authorization": f"Bearer {key}"})
    assert stats.status_code == 200 and stats.json()["tenant_id"] == "acme", stats.text

    # DATABASE_URL was used: the schema is in PostgreSQL, no SQLite file in the data dir.
    engine = sa.create_engine(database_url)
    try:
        with engine.connect() as conn:
            assert {"alembic_version", "experiences"} <= set(sa.inspect(conn).get_table_names())
    finally:
        engine.dispose()
    assert not (data_dir / "hindsight.db").exists()

    # The image's HEALTHCHECK (and compose's, the same command) passes while it serves ...
    health = next(args for word, args in dockerfile() if word == "HEALTHCHECK")
    probe = exec_form(health.split(" CMD ", 1)[1])
    assert healthcheck_command(services()["hindsight-api"]) == probe
    assert _probe(probe, port) == 0
    # ... and fails once it stopped. SIGTERM (docker stop) shuts it down cleanly; uvicorn then
    # re-raises the signal, so the exit status says SIGTERM.
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) in (0, -signal.SIGTERM)
    assert "Application shutdown complete" in (data_dir.parent / "serve.log").read_text()
    assert _probe(probe, port) != 0


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_serve_refuses_to_start_without_keys(database_url: str, tmp_path: Path) -> None:
    env = _serve_env(database_url, tmp_path / "data")
    del env["HINDSIGHT_API_KEYS"]
    done = subprocess.run(
        _argv(_free_port()), env=env, capture_output=True, text=True, timeout=120, check=False
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and "HINDSIGHT_API_KEYS" in lines[0]
