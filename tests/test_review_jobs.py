"""Review through the engine and its durable jobs (docs/review.md#review-jobs;
docs/review.md#replies-that-are-not-clean-json).

The LLM reviewer talks HTTP to ``openai/test-model`` at a loopback URL that respx answers
(``using="httpx"``: litellm's async transport is an httpx transport). Everything else is real:
the engine, its background worker, the SQL store, the vector index, the heuristic reviewer.
The clock is a ManualClock, so a job retried "later" runs only when the test moves time on.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map

import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from hindsight import ExperienceKind, Memory, UsageError
from hindsight.embedders import HashEmbedder
from hindsight.review import (
    PROMPT_VERSION,
    CombinedReviewer,
    HeuristicReviewer,
    LLMReviewer,
    ReportParseError,
    ReviewTimeoutError,
    make_reviewer,
)
from hindsight.review.episodes import summarize_episode
from hindsight.store import JobState
from hindsight.testing import FakeEmbedder, ManualClock
from tests.helpers import make_memory
from tests.test_llm_reviewer import BASE, MODEL, URL, airline_run, pnpm_run
from tests.test_review_parse import (
    CN_REPORT,
    EMPTY,
    EPISODE_TEXT,
    EXPECTED,
    REPLIES,
    REPORT,
    TRUNCATED,
    UNREPAIRABLE,
    WRONG_SHAPE,
    completion,
)

REVIEWER_NAME = f"llm:{MODEL}"


def ok(reply: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=reply)


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(using="httpx", assert_all_called=False) as router:
        yield router


def llm(**kw: Any) -> LLMReviewer:
    kw.setdefault("api_base", BASE)
    kw.setdefault("backoff", 0.0)
    kw.setdefault("timeout", 10.0)
    return LLMReviewer(MODEL, **kw)


def memory(tmp_path: Path, reviewer: Any, **kw: Any) -> Memory:
    kw.setdefault("embedder", FakeEmbedder(64))
    return make_memory(tmp_path, f"sqlite:///{tmp_path / 'hindsight.db'}", reviewer=reviewer, **kw)


def lessons_of(mem: Memory, tenant: str = "acme") -> list[Any]:
    exps = mem.list_experiences(tenant_id=tenant, limit=1000)
    return [e for e in exps if e.kind is not ExperienceKind.EPISODE]


def episodes_of(mem: Memory, tenant: str = "acme") -> list[Any]:
    exps = mem.list_experiences(tenant_id=tenant, limit=1000)
    return [e for e in exps if e.kind is ExperienceKind.EPISODE]


def only_job(mem: Memory) -> Any:
    [job] = mem.aio.store.list_review_jobs()
    return job


# -- malformed replies, through the engine and its job -----------------------------------------


@pytest.mark.parametrize(
    "kind", ["good", "fenced", "prose_after", "surrogate", "single_quotes", "truncated"]
)
def test_malformed_reply_is_repaired_and_stored_with_its_prompt_version(
    tmp_path: Path, api: respx.MockRouter, kind: str
) -> None:
    reply = TRUNCATED if kind == "truncated" else REPLIES[kind]
    route = api.post(URL).mock(return_value=ok(reply))
    expected = EXPECTED[:-1] if kind == "truncated" else EXPECTED  # the cut rule is dropped
    with memory(tmp_path, llm()) as mem:
        traj = airline_run()
        assert mem.store_episode(traj)["review_queued"]
        assert mem.flush(timeout=60)
        job = only_job(mem)
        assert (job.state, job.attempts, job.last_error) == (JobState.SUCCEEDED, 0, None)
        assert route.call_count == 1
        stored = lessons_of(mem)
        assert sorted((e.kind, e.content) for e in stored) == sorted(
            (k, c) for k, c, _, _ in expected
        )
        for exp in stored:
            assert exp.source_trajectory_ids == [traj.id]
            assert exp.reviewer == REVIEWER_NAME
            assert exp.metadata["prompt_version"] == PROMPT_VERSION
            assert exp.metadata["model"] == MODEL
            exp.content.encode("utf-8")  # no lone surrogate reached the store
            assert exp.content.lower() not in ("none", "null", "")
        # the reply had no episode summary: the deterministic one, with the answers that
        # restate the run (outcome, cause, task class) folded in, is the run's episode
        [episode] = episodes_of(mem)
        assert episode.source_trajectory_ids == [traj.id]
        assert episode.metadata["summary_source"] == REVIEWER_NAME
        assert episode.content == f"{summarize_episode(traj)} {EPISODE_TEXT}".strip()


def test_unusable_reply_is_retried_once_then_the_job_fails_visibly(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    route = api.post(URL).mock(side_effect=[ok(UNREPAIRABLE), ok(UNREPAIRABLE)])
    with memory(tmp_path, llm()) as mem:
        traj = airline_run()
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        job = only_job(mem)
        # one re-ask that showed the model its error, then failed at once: no backoff retries
        assert route.call_count == 2
        assert (
            "Your reply could not be used"
            in json.loads(route.calls[1].request.content)["messages"][-1]["content"]
        )
        assert job.state is JobState.FAILED and job.attempts == 1
        assert job.last_error.startswith("ReportParseError: ")
        assert "the reply holds no JSON object" in job.last_error
        assert "also after a retry" in job.last_error
        assert mem.aio.store.list_review_jobs(state="failed")[0].id == job.id
        # nothing was dropped: the trajectory is stored, nothing half-made was written
        assert mem.get_trajectory(traj.id, tenant_id="acme").events
        assert mem.list_experiences(tenant_id="acme") == []

        # `hindsight jobs retry` -> the model answers properly this time
        route.side_effect = [ok(REPLIES["fenced"])]
        [retried] = mem.retry_review_jobs([job.id])
        assert (retried.state, retried.attempts) == (JobState.PENDING, 0)
        assert retried.last_error == job.last_error  # kept until the next attempt
        assert mem.flush(timeout=60)
        done = only_job(mem)
        assert (done.state, done.attempts, done.last_error) == (JobState.SUCCEEDED, 0, None)
        assert len(lessons_of(mem)) == len(EXPECTED)


def test_schema_error_is_shown_to_the_model_and_the_second_reply_stored(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    route = api.post(URL).mock(side_effect=[ok(WRONG_SHAPE), ok(REPLIES["single_quotes"])])
    with memory(tmp_path, llm()) as mem:
        mem.store_episode(airline_run())
        assert mem.flush(timeout=60)
        assert only_job(mem).state is JobState.SUCCEEDED
        correction = json.loads(route.calls[1].request.content)["messages"][-1]["content"]
        assert "outcome.result" in correction
        assert len(lessons_of(mem)) == len(EXPECTED)


@pytest.mark.parametrize("wrap", ["plain", "fenced", "single_quotes", "prose_after"])
def test_chinese_run_gives_chinese_lessons_a_chinese_query_finds(
    tmp_path: Path, api: respx.MockRouter, wrap: str
) -> None:
    text = json.dumps(CN_REPORT, ensure_ascii=False)
    body = {
        "plain": text,
        "fenced": f"以下是复盘结果：\n```json\n{text}\n```",
        "single_quotes": repr(CN_REPORT),
        "prose_after": text + "\n\n说明：以上为本次运行的复盘。",
    }[wrap]
    api.post(URL).mock(return_value=ok(completion(body)))
    with memory(tmp_path, llm(), embedder=HashEmbedder()) as mem:
        traj = pnpm_run()
        assert "用户偏好用 pnpm 而不是 npm" in traj.events[0].content
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        assert only_job(mem).state is JobState.SUCCEEDED
        stored = lessons_of(mem)
        cjk = re.compile(r"[\u4e00-\u9fff]")
        assert {e.content for e in stored} == {
            CN_REPORT["do_differently"]["text"].strip(),  # stored exactly: "，" stays "，"
            CN_REPORT["rules"][0]["text"].strip(),
        }
        assert all(cjk.search(e.content) for e in stored)
        [episode] = episodes_of(mem)
        assert episode.content.startswith("目标：")  # the summary is Chinese too
        # ... and so are the labels of the answers folded into it
        assert "结果：" + CN_REPORT["outcome"]["text"] in episode.content
        assert "关键步骤：" + CN_REPORT["cause"]["text"] in episode.content

        result = mem.recall("安装依赖时用 pnpm 还是 npm？", tenant_id="acme")
        assert result.hits, result.excluded
        assert {h.experience.source_trajectory_ids[0] for h in result.hits} == {traj.id}
        assert any("pnpm" in h.experience.content for h in result.hits[:2])
        assert all(h.experience.kind is not ExperienceKind.EPISODE for h in result.hits)


# -- wherever the JSON is -------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["tool_call", "reasoning", "think_tags"])
def test_json_is_found_wherever_the_provider_put_it(
    tmp_path: Path, api: respx.MockRouter, kind: str
) -> None:
    route = api.post(URL).mock(return_value=ok(REPLIES[kind]))
    with memory(tmp_path, llm()) as mem:
        mem.store_episode(airline_run())
        assert mem.flush(timeout=60)
        assert only_job(mem).state is JobState.SUCCEEDED
        assert route.call_count == 1
        contents = {e.content for e in lessons_of(mem)}
        assert contents == {c for _, c, _, _ in EXPECTED}
        assert not any("Draft" in c or "wrong" in c for c in contents)  # reasoning never stored


def test_empty_content_is_re_asked_and_the_answer_in_tool_calls_stored(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    route = api.post(URL).mock(side_effect=[ok(EMPTY), ok(REPLIES["tool_call"])])
    with memory(tmp_path, llm()) as mem:
        mem.store_episode(airline_run())
        assert mem.flush(timeout=60)
        assert only_job(mem).state is JobState.SUCCEEDED
        assert route.call_count == 2
        assert len(lessons_of(mem)) == len(EXPECTED)


def test_none_answers_are_never_stored_and_all_none_fails_the_job(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    partly = copy.deepcopy(REPORT)
    partly["cause"]["text"] = "None"
    partly["repeated_attempts"]["text"] = "N/A"
    partly["rules"] = [{"text": "None", "confidence": 0.9}, REPORT["rules"][0]]
    nothing = {
        "outcome": {"result": "unknown", "text": "None", "confidence": 0.1},
        "cause": "None",
        "failing_tools": {"tools": ["None"], "text": "null", "confidence": 0.1},
        "repeated_attempts": None,
        "do_differently": {"text": "n/a", "confidence": 0.1},
        "task_class": None,
        "rules": [],
        "episode": "A summary alone is not a review.",
    }
    api.post(URL).mock(
        side_effect=[
            ok(completion(json.dumps(partly))),
            ok(completion(None, tool_arguments=json.dumps(nothing))),
            ok(completion(json.dumps(nothing))),
        ]
    )
    with memory(tmp_path, llm()) as mem:
        first, second = airline_run(), airline_run()
        mem.store_episode(first)
        assert mem.flush(timeout=60)
        mem.store_episode(second)
        assert mem.flush(timeout=60)
        contents = [e.content for e in mem.list_experiences(tenant_id="acme", limit=1000)]
        assert not [c for c in contents if c.strip(" .").lower() in ("none", "n/a", "null")]
        assert REPORT["rules"][0]["text"] in contents
        failed = mem.aio.store.list_review_jobs(state="failed")
        assert [j.trajectory_id for j in failed] == [second.id]
        assert "no general lesson" in failed[0].last_error
        stored_second = [
            e
            for e in mem.list_experiences(tenant_id="acme")
            if second.id in e.source_trajectory_ids
        ]
        assert stored_second == []


# -- episodes from the model ----------------------------------------------------------------------


def test_the_models_episode_summary_is_stored_as_the_runs_episode(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    report = copy.deepcopy(REPORT)
    report["episode"] = (
        "Goal: move reservation ZFA04Y to HAT999. Steps: get_reservation_details, then "
        "update_reservation_flights failed three times, then search_direct_flight. Outcome: "
        "failure. Turning point: HAT999 was never in the search results."
    )
    api.post(URL).mock(return_value=ok(completion(json.dumps(report))))
    with memory(tmp_path, llm()) as mem:
        traj = airline_run()
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        [episode] = episodes_of(mem)
        # the answers that restate the run are folded into the model's own summary
        assert episode.content == f"{report['episode']} {EPISODE_TEXT}"
        assert episode.reviewer == REVIEWER_NAME
        assert episode.metadata["prompt_version"] == PROMPT_VERSION
        assert episode.metadata["outcome"] == "failure"
        assert episode.source_trajectory_ids == [traj.id]
        assert len(lessons_of(mem)) == len(EXPECTED)  # the summary is not also a lesson
        # review_now returns lessons and the episode, and writes nothing twice
        again = mem.review_now(traj.id, tenant_id="acme")
        assert [e.kind for e in again][-1] is ExperienceKind.EPISODE
        assert len(again) == len(EXPECTED) + 1
        assert len(mem.list_experiences(tenant_id="acme", limit=1000)) == len(EXPECTED) + 1


# -- timeouts and transport errors: retried later, then failed ----------------------------------


def test_timeouts_put_the_job_back_with_backoff_then_fail_it(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    route = api.post(URL).mock(side_effect=httpx.ReadTimeout("timed out"))
    clock = ManualClock()
    with memory(
        tmp_path, llm(timeout=0.5, num_retries=0), clock=clock, review_retry_base=10.0
    ) as mem:
        traj = airline_run()
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        job = only_job(mem)
        assert (job.state, job.attempts) == (JobState.PENDING, 1)
        assert job.last_error.startswith("ReviewTimeoutError: ") and "timed out" in job.last_error
        assert (job.run_after - clock.now()).total_seconds() == pytest.approx(10.0)
        assert route.call_count == 1  # nothing runs before run_after
        clock.advance(seconds=11)
        assert mem.flush(timeout=60)
        job = only_job(mem)
        assert (job.state, job.attempts) == (JobState.PENDING, 2)
        assert (job.run_after - clock.now()).total_seconds() == pytest.approx(20.0)
        clock.advance(seconds=21)
        assert mem.flush(timeout=60)
        job = only_job(mem)
        assert (job.state, job.attempts) == (JobState.FAILED, 3)
        assert "timed out" in job.last_error
        assert route.call_count == 3
        assert mem.list_experiences(tenant_id="acme") == []


def test_review_timeout_bounds_the_whole_review(tmp_path: Path) -> None:
    """A reviewer that never answers is cut off by review_timeout with a timeout error."""
    import asyncio

    class Stuck:
        name = "stuck"

        async def review(self, trajectory: Any) -> list[Any]:
            await asyncio.sleep(3600)
            return []

    with memory(tmp_path, Stuck(), review_timeout=0.3, review_max_attempts=1) as mem:
        mem.store_episode(airline_run())
        assert mem.flush(timeout=60)
        job = only_job(mem)
        assert job.state is JobState.FAILED
        assert "ReviewTimeoutError" in job.last_error
        assert "timed out after 0.3 s (review_timeout)" in job.last_error


# -- both: heuristic + LLM, without duplicates ----------------------------------------------------


def test_both_stores_heuristic_and_llm_lessons_once_each(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    traj = airline_run()
    heuristic = HeuristicReviewer().review_sync(traj)
    shared = heuristic[0].content
    report = copy.deepcopy(REPORT)
    # the model repeats one heuristic lesson, in other case and spacing, without its full stop
    report["rules"] = [
        {"text": "  " + shared.upper().rstrip(".") + "  ", "confidence": 0.9},
        REPORT["rules"][0],
    ]
    api.post(URL).mock(return_value=ok(completion(json.dumps(report))))
    reviewer = CombinedReviewer([HeuristicReviewer(), llm()])
    assert reviewer.name == f"heuristic+{REVIEWER_NAME}"
    with memory(tmp_path, reviewer) as mem:
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        stored = lessons_of(mem)
        by_reviewer: dict[str, set[str]] = {}
        for exp in stored:
            by_reviewer.setdefault(exp.reviewer, set()).add(exp.content)
        assert by_reviewer["heuristic"] == {le.content for le in heuristic}
        llm_expected = {c for _, c, _, _ in EXPECTED if c != REPORT["rules"][1]["text"]}
        assert by_reviewer[REVIEWER_NAME] == llm_expected
        keys = [" ".join(e.content.casefold().split()).rstrip(".") for e in stored]
        assert len(keys) == len(set(keys))  # the repeated lesson is stored once
        assert len(episodes_of(mem)) == 1


def test_both_keeps_the_heuristic_lessons_when_the_llm_fails(
    tmp_path: Path, api: respx.MockRouter
) -> None:
    route = api.post(URL).mock(side_effect=[ok(UNREPAIRABLE), ok(UNREPAIRABLE)])
    reviewer = CombinedReviewer([HeuristicReviewer(), llm()])
    traj = airline_run()
    with memory(tmp_path, reviewer) as mem:
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        job = only_job(mem)
        assert job.state is JobState.FAILED and "ReportParseError" in job.last_error
        assert {e.reviewer for e in lessons_of(mem)} == {"heuristic"}
        assert len(lessons_of(mem)) == len(HeuristicReviewer().review_sync(traj))
        assert episodes_of(mem) == []  # written when the whole review succeeds

        route.side_effect = [ok(REPLIES["good"])]
        mem.retry_review_jobs(all_failed=True)
        assert mem.flush(timeout=60)
        assert only_job(mem).state is JobState.SUCCEEDED
        assert {e.reviewer for e in lessons_of(mem)} == {"heuristic", REVIEWER_NAME}
        assert len(episodes_of(mem)) == 1


def test_combined_reviewer_review_deduplicates_and_raises_a_part_failure(
    api: respx.MockRouter,
) -> None:
    import asyncio

    api.post(URL).mock(side_effect=[ok(REPLIES["good"]), ok(UNREPAIRABLE), ok(UNREPAIRABLE)])
    reviewer = CombinedReviewer([HeuristicReviewer(), llm()])
    lessons = asyncio.run(reviewer.review(airline_run()))
    heuristic = HeuristicReviewer().review_sync(airline_run())
    assert len(lessons) == len(heuristic) + len(EXPECTED) + 1  # + the model's episode
    assert lessons[-1].kind is ExperienceKind.EPISODE
    with pytest.raises(ReportParseError):
        asyncio.run(reviewer.review(airline_run()))
    with pytest.raises(UsageError, match="at least two"):
        CombinedReviewer([HeuristicReviewer()])


# -- which reviewer -------------------------------------------------------------------------------


def test_reviewer_setting_selects_the_reviewer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hindsight.config import MemoryConfig

    for name in (
        "REFLECTION_MODEL",
        "HINDSIGHT_REFLECTION_MODEL",
        "REVIEWER",
        "HINDSIGHT_REVIEWER",
    ):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(make_reviewer(MemoryConfig()), HeuristicReviewer)
    configured = MemoryConfig(reflection_model=MODEL, llm_base_url=BASE)
    rev = make_reviewer(configured.model_copy(update={"reviewer": "llm"}))
    assert isinstance(rev, LLMReviewer) and rev.api_base == BASE
    both = make_reviewer(configured.model_copy(update={"reviewer": " Both "}))
    assert isinstance(both, CombinedReviewer)
    assert [type(p).__name__ for p in both.parts] == ["HeuristicReviewer", "LLMReviewer"]
    for name in ("llm", "both"):
        with pytest.raises(UsageError, match="REFLECTION_MODEL"):
            make_reviewer(MemoryConfig(reviewer=name))
    with pytest.raises(UsageError, match="heuristic, llm, both"):
        make_reviewer(MemoryConfig(reviewer="gpt"))

    # the engine takes the setting, or a reviewer's name in place of a reviewer object
    with pytest.raises(UsageError, match="REFLECTION_MODEL"):
        Memory(data_dir=tmp_path / "a", reviewer="llm", embedder=FakeEmbedder(8))
    monkeypatch.setenv("REFLECTION_MODEL", MODEL)
    monkeypatch.setenv("LLM_BASE_URL", BASE)
    with Memory(data_dir=tmp_path / "b", reviewer="both", embedder=FakeEmbedder(8)) as mem:
        assert isinstance(mem.aio.reviewer, CombinedReviewer)
        assert mem.config.reviewer == "both"
    monkeypatch.setenv("HINDSIGHT_REVIEWER", "llm")
    with Memory(data_dir=tmp_path / "c", embedder=FakeEmbedder(8)) as mem:
        assert isinstance(mem.aio.reviewer, LLMReviewer)
        assert mem.aio.reviewer.model == MODEL


def test_timeout_error_names_are_exported() -> None:
    import hindsight.review as reviewers

    assert reviewers.ReviewTimeoutError is ReviewTimeoutError
    assert issubclass(ReviewTimeoutError, reviewers.ReportParseError.__mro__[1])  # ReviewError
    assert ReportParseError.retryable is False
    assert getattr(ReviewTimeoutError, "retryable", True) is True
