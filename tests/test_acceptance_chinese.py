"""Acceptance: a Chinese trajectory is recalled by a Chinese query with the default
embedder (``hash``) and the default heuristic reviewer, end to end.

Two paths: an OpenAI-format log ingested through the real CLI, and a run recorded with
``Memory.record``. Both stores hold distractors (another Chinese task, an English task) so a
recall that returned everything, or the wrong run, fails.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hindsight import Memory
from tests.cli_helpers import cli_json

CJK = re.compile(r"[\u4e00-\u9fff]")


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": cid,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
    }


def _tool_run(task: str, calls: list[tuple[str, dict[str, Any], str]], answer: str) -> list[Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    for i, (name, args, reply) in enumerate(calls):
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [_call(f"c{i}", name, args)]}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": reply})
    messages.append({"role": "assistant", "content": answer})
    return messages


RECORDS = [
    {
        "id": "zh-pnpm",
        "reward": 1,
        "messages": _tool_run(
            "请帮我安装项目依赖，用户偏好用 pnpm 而不是 npm",
            [
                ("run_shell", {"cmd": "npm install"}, "Error: 这里不允许使用 npm"),
                ("run_shell", {"cmd": "pnpm install"}, "安装完成，共 312 个包"),
            ],
            "已用 pnpm 安装依赖",
        ),
    },
    {
        "id": "zh-order",
        "reward": 0,
        "messages": _tool_run(
            "查询订单 8812 的物流状态",
            [("order_query", {"order_id": "8812"}, "Error: 请求超时 timed out after 5 s")],
            "抱歉，订单系统暂时无法访问",
        ),
    },
    {
        "id": "en-deploy",
        "reward": 0,
        "messages": _tool_run(
            "Deploy project Zephyr to staging",
            [("helm_upgrade", {"release": "zephyr"}, "Error: release zephyr not found")],
            "Deployment failed",
        ),
    },
]


def _write_log(path: Path) -> Path:
    path.write_text(
        "\n".join(json.dumps(r, ensure_ascii=False) for r in RECORDS) + "\n", encoding="utf-8"
    )
    return path


def test_chinese_openai_log_through_the_cli(tmp_path: Path) -> None:
    data = tmp_path / "data"
    log = _write_log(tmp_path / "runs.jsonl")
    added = cli_json("ingest", str(log), "--format", "openai", "--tenant", "zh", data_dir=data)
    assert added["trajectories_added"] == 3 and added["experiences_added"] > 3

    install = cli_json("recall", "给新项目安装依赖", "--tenant", "zh", data_dir=data)
    assert install["hits"], "a Chinese query recalled nothing"
    top = install["hits"][0]["content"]
    assert CJK.search(top) and "pnpm" in top, top
    assert all("order_query" not in h["content"] for h in install["hits"][:2])
    assert all("Zephyr" not in h["content"] for h in install["hits"])
    assert "pnpm" in install["rendered"]

    order = cli_json("recall", "订单物流查询超时了怎么办", "--tenant", "zh", data_dir=data)
    assert order["hits"] and "order_query" in order["hits"][0]["content"]
    assert CJK.search(order["hits"][0]["content"])
    # Chinese lessons stay out of another tenant
    assert cli_json("recall", "给新项目安装依赖", "--tenant", "en", data_dir=data)["hits"] == []


def test_chinese_run_recorded_in_python(tmp_path: Path) -> None:
    with Memory(data_dir=tmp_path / "data") as mem:  # defaults: hash embedder, heuristic review
        assert mem.aio.embedder.name.startswith("hash")
        assert mem.aio.reviewer.name == "heuristic"
        with mem.record("用户偏好用 pnpm 而不是 npm，请安装依赖", tenant_id="zh") as run:
            run.user_message("用户偏好用 pnpm 而不是 npm，请安装依赖")
            first = run.tool_call("run_shell", {"cmd": "npm install"})
            run.tool_result(
                "run_shell", "npm 在此环境被禁用", status="failure", tool_call_id=first.tool_call_id
            )
            second = run.tool_call("run_shell", {"cmd": "pnpm install"})
            run.tool_result("run_shell", "安装完成", tool_call_id=second.tool_call_id)
            run.final_answer("已用 pnpm 安装依赖")
            run.set_outcome("success")
        with mem.record("查询订单 8812 的物流状态", tenant_id="zh") as other:
            other.user_message("查询订单 8812 的物流状态")
            call = other.tool_call("order_query", {"order_id": "8812"})
            other.tool_result(
                "order_query", "请求超时", status="timeout", tool_call_id=call.tool_call_id
            )
            other.set_outcome("failure")
        assert mem.flush(timeout=30)
        stored = mem.list_experiences(tenant_id="zh")
        assert stored and all(CJK.search(e.content) for e in stored)
        mine = [e for e in stored if run.trajectory_id in e.source_trajectory_ids]
        assert any(e.kind.value == "improvement" and "pnpm install" in e.content for e in mine)

        result = mem.recall("这个项目安装依赖该用哪个包管理器", tenant_id="zh")
        assert result.hits
        top = result.hits[0].experience
        assert top.source_trajectory_ids == [run.trajectory_id] and "pnpm" in top.content
        assert "pnpm" in result.render()
