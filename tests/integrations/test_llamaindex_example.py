"""examples/llamaindex_agent.py: run 2 receives run 1's lesson through the memory block."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llamaindex_support import REPO, steps

from hindsight import BLOCK_END, BLOCK_START, AsyncMemory, Outcome
from hindsight.testing import FakeEmbedder

EXAMPLE = REPO / "examples" / "llamaindex_agent.py"

RUN_1 = [
    ("user_message", None, None),
    ("model_call", None, "success"),
    ("tool_call", "order_query", None),
    ("tool_result", "order_query", "timeout"),
    ("model_call", None, "success"),
    ("tool_call", "order_query_cached", None),
    ("tool_result", "order_query_cached", "success"),
    ("model_call", None, "success"),
    ("final_answer", None, None),
]
RUN_2 = [
    ("user_message", None, None),
    ("model_call", None, "success"),
    ("tool_call", "order_query_cached", None),
    ("tool_result", "order_query_cached", "success"),
    ("model_call", None, "success"),
    ("final_answer", None, None),
]


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("llamaindex_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_second_run_gets_the_first_runs_lesson_through_the_block(
    tmp_path: Path, database_url: str
) -> None:
    example = _example()
    prompts: list[str] = []  # the system text each model call received

    def recording_llm() -> MockFunctionCallingLLM:
        def decide(messages: Any, **kwargs: Any) -> Any:
            prompts.append(example._system_text(messages))
            return example.decide(messages, **kwargs)

        return MockFunctionCallingLLM(response_generator=decide)

    async def go() -> tuple[Any, Any]:
        async with AsyncMemory(
            data_dir=tmp_path, database_url=database_url, embedder=FakeEmbedder(64)
        ) as memory:
            run1, run2 = await example.demo(memory, recording_llm, say=lambda _: None)
            stored = [
                await memory.get_trajectory(r.trajectory_id, tenant_id=example.TENANT)
                for r in (run1, run2)
            ]
            return (run1, run2), stored

    (run1, run2), (traj1, traj2) = asyncio.run(go())
    # the captured steps of both runs, as stored in SQL
    assert steps(traj1) == RUN_1
    assert steps(traj2) == RUN_2
    assert traj1.outcome is traj2.outcome is Outcome.SUCCESS
    assert traj1.task_type == traj2.task_type == "order_status"
    # run 1 recalled nothing; run 2 recalled lessons learned from run 1
    assert run1.recall is not None and run1.recall.hits == []
    assert run2.recall is not None and run2.recall.hits
    assert all(run1.trajectory_id in h.experience.source_trajectory_ids for h in run2.recall.hits)
    # ... and the model of run 2 saw them at the tail of its system prompt
    assert BLOCK_START not in prompts[0]
    run2_prompt = prompts[3]  # run 1 made three model calls
    assert run2_prompt.index(example.SYSTEM_PROMPT) < run2_prompt.index(BLOCK_START)
    block = run2_prompt.split(BLOCK_START, 1)[1].split(BLOCK_END, 1)[0]
    assert "order_query_cached" in block and re.search(
        r"order_query (?:can time|times|timed) out", block
    )


def test_example_runs_as_a_script(tmp_path: Path) -> None:
    env = {**os.environ, "HINDSIGHT_DATA_DIR": str(tmp_path / "unused")}
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--data-dir", str(tmp_path / "mem")],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "run 1:" in out and "run 2:" in out
    assert "tool_result(order_query: timeout)" in out.split("run 2:")[0]
    run2 = out.split("run 2:")[1]
    assert "tool_call(order_query:" not in run2  # run 2 does not try the slow tool
    assert "recalled" in run2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4o-mini", "--model must look like"),
        ("ollama:llama3", "unknown provider"),
    ],
)
def test_example_refuses_a_bad_model_spec(spec: str, message: str) -> None:
    with pytest.raises(SystemExit, match=message):
        _example().real_llm(spec)


def test_import_without_llama_index_names_the_extra(tmp_path: Path) -> None:
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'llama_index' or name.startswith('llama_index.'):\n"
        "            raise ModuleNotFoundError(name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", "import hindsight_llamaindex"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:")
    assert 'pip install "hindsight-memory[llamaindex]"' in last
