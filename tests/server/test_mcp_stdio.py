"""``hindsight mcp`` over stdio, as MCP hosts run it: a subprocess speaking the protocol on
stdin/stdout (it answers recall_similar from an MCP client over stdio; docs/mcp.md#stdio-set-up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from hindsight import Memory
from tests.server.mcp_support import call

pytestmark = pytest.mark.anyio
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without hindsight settings (so the test's flags decide), plus ``extra``."""
    drop = ("HINDSIGHT_", "DATABASE_URL", "VECTOR_DB_URL", "EMBEDDING_MODEL", "REFLECTION_MODEL")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    return {**env, **extra}


def server_params(data_dir: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "hindsight", "mcp", "--tenant", "t1", "--data-dir", str(data_dir), *args],
        env=clean_env(),
        cwd=str(REPO),
    )


async def test_stdio_stores_a_tau_bench_run_and_answers_recall_similar(
    tmp_path: Path, tau_bench_path: Path
) -> None:
    record = next(r for r in json.loads(tau_bench_path.read_text()) if r["reward"] == 0)
    task = next(m["content"] for m in record["traj"] if m["role"] == "user")
    errlog = (tmp_path / "stderr.txt").open("w")
    try:
        async with (
            stdio_client(server_params(tmp_path / "data"), errlog=errlog) as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"store_episode", "recall_similar", "forget_experience"} <= names
            stored = (
                await call(session, "store_episode", {"trajectory": record, "review": False})
            ).ok()
            assert stored["format"] == "tau-bench" and stored["outcome"] == "failure"
            review = (
                await call(
                    session, "summarize_trajectory", {"trajectory_id": stored["trajectory_id"]}
                )
            ).ok()
            assert review["lessons"], "the heuristic review found nothing in a failed run"
            recall = (await call(session, "recall_similar", {"query": task, "top_k": 10})).ok()
            learned = {x["id"] for x in review["lessons"]}
            assert learned & {h["id"] for h in recall["hits"]}
            assert recall["rendered"].startswith("--- Past experience")
    finally:
        errlog.close()
    # the server exited with its client and released the store: what it wrote is there
    with Memory(data_dir=tmp_path / "data") as mem:
        traj = mem.get_trajectory(stored["trajectory_id"], tenant_id="t1")
        assert traj.tenant_id == "t1" and traj.task_type == "tau-bench"
        assert mem.stats(tenant_id="someone-else")["trajectories"] == 0


def _rpc(msg_id: int | None, method: str, params: dict[str, Any]) -> str:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if msg_id is not None:
        msg["id"] = msg_id
    return json.dumps(msg) + "\n"


def test_stdout_carries_nothing_but_protocol(tmp_path: Path) -> None:
    """Every stdout line is a JSON-RPC message, even with errors and a review going on."""
    requests = [
        _rpc(
            1,
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        ),
        _rpc(None, "notifications/initialized", {}),
        _rpc(2, "tools/list", {}),
        _rpc(
            3,
            "tools/call",
            {
                "name": "store_episode",
                "arguments": {
                    "trajectory": [
                        {"role": "user", "content": "print me"},
                        {"role": "assistant", "content": "printed"},
                    ]
                },
            },
        ),
        _rpc(4, "tools/call", {"name": "forget_experience", "arguments": {"experience_id": "x"}}),
        _rpc(5, "tools/call", {"name": "recall_similar", "arguments": {"query": "print"}}),
    ]
    proc = subprocess.Popen(
        [sys.executable, *server_params(tmp_path / "data").args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd=REPO,
    )
    watchdog = threading.Timer(120, proc.kill)
    watchdog.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(requests))
        proc.stdin.flush()
        messages: list[dict[str, Any]] = []
        while len([m for m in messages if "id" in m]) < 5:
            line = proc.stdout.readline()
            assert line, f"stdout closed early: {proc.stderr.read() if proc.stderr else ''}"
            messages.append(json.loads(line))  # any other output fails here
        rest, err = proc.communicate(timeout=60)  # closes stdin: the server exits cleanly
        messages += [json.loads(line) for line in rest.splitlines() if line.strip()]
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m["id"]: m for m in messages if "id" in m}
    assert set(by_id) == {1, 2, 3, 4, 5}
    assert by_id[3]["result"]["isError"] is False
    assert by_id[4]["result"]["isError"] is True
    assert by_id[4]["result"]["structuredContent"]["error"]["field"] == "experience_id"


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--tenant", ""], {}),
        (["--tenant", "   "], {}),
        ([], {}),
        ([], {"HINDSIGHT_MCP_TENANT": ""}),
    ],
)
def test_hindsight_mcp_refuses_an_empty_tenant(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight", "mcp", "--data-dir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=clean_env(**env),
        cwd=REPO,
    )
    assert proc.returncode == 2, proc
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "tenant" in lines[0] and lines[0].startswith("error:"), proc.stderr
    assert not (tmp_path / "hindsight.db").exists()  # refused before opening anything
