"""``hindsight serve`` and ``hindsight keys`` as processes: refusing to start without keys,
single-tenant mode, graceful SIGTERM (store closed, queued reviews stay queued), the data-dir lock
naming the server (docs/concepts.md#storage), and keys files that hold only hashes
(docs/http.md#api-keys-and-tenants)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from hindsight.store import SqlStore
from tests.server.conftest import REPO, free_port, start_server


def hs(
    *args: str, data_dir: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_API_KEYS")}
    full.pop("DATABASE_URL", None)
    full.update({"HINDSIGHT_DATA_DIR": str(data_dir), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "hindsight", *args],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_serve_refuses_to_start_without_keys(tmp_path: Path) -> None:
    done = hs("serve", "--port", str(free_port()), data_dir=tmp_path)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no API keys configured"), done.stderr
    assert "hindsight keys create" in lines[0] and "--insecure-single-tenant" in lines[0]
    bad = hs("serve", data_dir=tmp_path, env={"HINDSIGHT_API_KEYS": "no-colon-here"})
    assert bad.returncode == 2 and "tenant:key" in bad.stderr


def test_serve_on_a_busy_port_says_so_in_one_line(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = hs(
            "serve",
            "--port",
            str(port),
            data_dir=tmp_path,
            env={"HINDSIGHT_API_KEYS": "acme:key-for-the-busy-port-test"},
        )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"could not serve on 127.0.0.1:{port}" in lines[0], done.stderr
    assert "in use" in lines[0]
    assert not (tmp_path / "hindsight.db").exists()  # failed before opening the store


def test_keys_cli_stores_hashes_only_and_env_keys_work(tmp_path: Path) -> None:
    made = hs("keys", "create", "--tenant", "acme", "--label", "ci", "--json", data_dir=tmp_path)
    assert made.returncode == 0, made.stderr
    doc = json.loads(made.stdout)
    path = Path(doc["file"])
    assert path == tmp_path / "api-keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert doc["key"] not in path.read_text()  # only the hash is stored
    listed = hs("keys", "list", "--json", data_dir=tmp_path)
    assert [k["tenant"] for k in json.loads(listed.stdout)] == ["acme"]
    assert doc["key"] not in listed.stdout
    server = start_server(
        tmp_path / "srv",
        first_tenant=None,
        extra_args=("--keys-file", str(path)),
        env={"HINDSIGHT_API_KEYS": "beta:inline-key-1"},
    )
    try:
        for key, tenant in ((doc["key"], "acme"), ("inline-key-1", "beta")):
            r = httpx.get(server.url + "/v1/stats", headers={"X-API-Key": key})
            assert r.status_code == 200 and r.json()["tenant_id"] == tenant
        revoked = hs("keys", "revoke", doc["id"], data_dir=tmp_path)
        assert revoked.returncode == 0 and "revoked 1" in revoked.stdout
        r = httpx.get(server.url + "/v1/stats", headers={"X-API-Key": doc["key"]})
        assert r.status_code == 401
        again = hs("keys", "revoke", doc["id"], data_dir=tmp_path)
        assert again.returncode == 1 and again.stderr.startswith("error: no key")
    finally:
        server.stop()


def test_a_key_created_after_start_works_without_a_keys_file_at_start(tmp_path: Path) -> None:
    """Review finding: a server started with inline keys only must follow the default
    ``<data dir>/api-keys.json`` even though it did not exist yet (docs/deploy.md: no restart);
    a file that turns invalid later fails closed."""
    server = start_server(
        tmp_path,
        first_tenant=None,
        pass_keys_file=False,
        env={"HINDSIGHT_API_KEYS": "acme:envkey123"},
    )
    try:
        assert not (tmp_path / "api-keys.json").exists()
        made = hs("keys", "create", "--tenant", "globex", data_dir=tmp_path)
        assert made.returncode == 0, made.stderr
        key = made.stdout.strip()
        for raw, tenant in ((key, "globex"), ("envkey123", "acme")):
            r = httpx.get(server.url + "/v1/stats", headers={"Authorization": f"Bearer {raw}"})
            assert r.status_code == 200 and r.json()["tenant_id"] == tenant, r.text
        (tmp_path / "api-keys.json").write_text("{not json", encoding="utf-8")
        r = httpx.get(server.url + "/v1/stats", headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 401
        ready = httpx.get(server.url + "/ready")  # no key: a generic reason (review finding)
        assert ready.status_code == 503 and ready.json()["error"]["type"] == "not_ready"
        assert "api-keys.json" not in ready.text and "server log" in ready.text, ready.text
        for headers in ({"Authorization": f"Bearer {key}"}, {"X-API-Key": "nope"}):
            hidden = httpx.get(server.url + "/ready", headers=headers)  # refused file key, junk
            assert hidden.status_code == 503 and "api-keys.json" not in hidden.text, hidden.text
        ready = httpx.get(server.url + "/ready", headers={"Authorization": "Bearer envkey123"})
        assert ready.status_code == 503 and "api-keys.json" in ready.text, ready.text
        assert "not ready: API keys:" in server.log.read_text()  # the full reason is logged
    finally:
        server.stop()


def test_single_tenant_mode_and_graceful_sigterm(tmp_path: Path) -> None:
    server = start_server(
        tmp_path,
        first_tenant=None,
        extra_args=("--insecure-single-tenant", "solo", "--no-workers-in-process"),
    )
    try:
        with httpx.Client(base_url=server.url) as http:
            r = http.post("/v1/episodes", json={"trajectory": [{"role": "user", "content": "hi"}]})
            assert r.status_code == 201 and r.json()["episodes"][0]["review_queued"], r.text
            stats = http.get("/v1/stats").json()
            assert stats["tenant_id"] == "solo" and stats["review_jobs"]["pending"] == 1
            # While the server runs, a second process is told how to reach it.
            second = hs("stats", data_dir=tmp_path)
            assert second.returncode != 0
            line = second.stderr.strip()
            assert line.startswith("error: ") and "hindsight serve" in line and "/mcp" in line
    finally:
        code = server.stop()
    assert code in (0, -15), server.output()  # uvicorn re-raises SIGTERM after shutting down
    assert "store closed" in server.output()
    store = SqlStore(f"sqlite:///{tmp_path / 'hindsight.db'}")
    try:
        assert store.count_review_jobs(state="pending", tenant_id="solo") == 1  # still queued
    finally:
        store.close()


def test_the_server_package_names_its_extra_and_the_core_needs_none() -> None:
    code = (
        "import sys; sys.modules['fastapi'] = None\n"
        "import hindsight, hindsight.client\n"
        "try:\n    import hindsight.server\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "pip install 'hindsight-memory[server]'" in done.stdout
