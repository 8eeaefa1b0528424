"""Episodes (docs/review.md#episodes): one short summary per reviewed run, embedded,
left out of normal recall, recalled after the lessons when asked, in their own budget."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hindsight import Event, ExperienceKind, Memory, Outcome, Trajectory
from hindsight.recall.candidates import EPISODE_TOP_K
from hindsight.recall.render import BLOCK_END, BLOCK_START, EPISODES_HEADING
from hindsight.review import HeuristicReviewer
from hindsight.review.episodes import (
    EPISODE_MAX_TOKENS,
    episode_id,
    summarize_episode,
)
from hindsight.testing import FakeEmbedder
from hindsight.tokens import estimate_tokens
from tests.helpers import lesson, make_memory

REPO = Path(__file__).resolve().parents[1]


def run_with(task: str, calls: list[tuple[str, dict[str, Any], str, str]], **kw: Any) -> Trajectory:
    events = [Event(event_type="user_message", content=task)]
    for tool, args, status, output in calls:
        events.append(Event(event_type="tool_call", tool_name=tool, tool_args=args))
        events.append(
            Event(event_type="tool_result", tool_name=tool, status=status, content=output)
        )
    if kw.get("answer"):
        events.append(Event(event_type="final_answer", content=kw.pop("answer")))
    kw.setdefault("tenant_id", "acme")
    return Trajectory(task=task, events=events, **kw)


def timeout_then_cache() -> Trajectory:
    return run_with(
        "Where is my order 8812? It was due yesterday.",
        [
            ("order_query", {"status_filter": "open"}, "timeout", "timed out after 5 s"),
            ("order_query", {"status_filter": "open"}, "timeout", "timed out after 5 s"),
            ("order_query_cached", {"status_filter": "open"}, "success", '{"status": "shipped"}'),
        ],
        outcome=Outcome.SUCCESS,
        answer="Order 8812 has shipped (DHL).",
    )


# -- the deterministic summary --------------------------------------------------------------------


def test_summary_has_goal_steps_in_order_outcome_and_turning_point() -> None:
    text = summarize_episode(timeout_then_cache())
    assert text.startswith("Goal: Where is my order 8812? ")
    steps = text[text.index("Steps: ") : text.index("Outcome: ")]
    # merged identical calls, in order, with their status
    assert "1) order_query(status_filter=open) → timed out ×2" in steps
    assert "2) order_query_cached(status_filter=open) → success" in steps
    assert steps.index("order_query(") < steps.index("order_query_cached(")
    assert "Outcome: success." in text
    assert "Turning point: after order_query timed out, order_query_cached(" in text
    assert text.endswith("Answer: Order 8812 has shipped (DHL).")


def test_failed_run_names_the_failure_that_was_not_recovered() -> None:
    traj = run_with(
        "Cancel reservation ABC123",
        [("cancel_reservation", {"cabin": "economy"}, "failure", "Error: reservation not found")],
        outcome=Outcome.FAILURE,
        reward=0.0,
    )
    text = summarize_episode(traj)
    assert "Outcome: failure (reward 0)." in text
    assert (
        "Turning point: cancel_reservation failed (reservation not found) and the run did not "
        "recover." in text
    )


@pytest.mark.parametrize("status", ["timeout", "failure"])
@pytest.mark.parametrize("between", [[], [("get_quota", {"project": "atlas"}, "success", "{}")]])
@pytest.mark.parametrize("outcome", [Outcome.SUCCESS, Outcome.UNKNOWN, Outcome.PARTIAL])
def test_a_run_that_worked_on_calling_again_says_so(
    status: str, between: list[Any], outcome: Outcome
) -> None:
    call = ("resize_volume", {"size_gb": 200}, status, "Error: upstream timed out")
    ok = ("resize_volume", {"size_gb": 200}, "success", '{"ok": true}')
    text = summarize_episode(run_with("Resize the volume", [call, *between, ok], outcome=outcome))
    assert "did not recover" not in text
    assert "Turning point: resize_volume " in text and "; calling it again worked." in text


LONG = {"pod": "api-7f9c", "namespace": "shop-backend", "tail": 100, "container": "web"}


@pytest.mark.parametrize(
    ("again", "shown"),
    [
        ({**LONG, "request_timeout": "60s"}, "request_timeout=60s"),  # an argument added
        ({**LONG, "container": "sidecar"}, "container=sidecar"),  # the last one changed
        ({**LONG, "tail": 20}, "tail=20"),
    ],
)
@pytest.mark.parametrize("task", ["Get the logs of pod api-7f9c", "取 api-7f9c 的日志"])
def test_a_call_again_with_other_arguments_shows_what_changed_first(
    again: dict[str, Any], shown: str, task: str
) -> None:
    """The step list keeps 60 characters of arguments: a retry that added or changed one
    (beyond them) must not read as the same call again."""
    calls = [
        ("kubectl_logs", LONG, "timeout", "Error: timed out waiting for the condition"),
        ("kubectl_logs", again, "success", "INFO ready"),
    ]
    text = summarize_episode(run_with(task, calls, outcome=Outcome.SUCCESS))
    first, second = re.findall(r"kubectl_logs\(([^)]*)\)", text)[:2]
    assert first != second, text
    assert second.startswith(shown), text
    assert text.count(shown) >= 2  # in the steps and in the turning point


@pytest.mark.parametrize(
    ("made", "said", "not_said"),
    [
        # the run called the tool once where two calls were expected: not "not called"
        (1, "resize_volume called fewer times than expected", "resize_volume not called"),
        (0, "resize_volume not called", "fewer times"),
    ],
)
@pytest.mark.parametrize("task", ["Resize both volumes", "把两个卷都扩容"])
def test_why_says_fewer_calls_apart_from_none(
    made: int, said: str, not_said: str, task: str
) -> None:
    from hindsight.models import ExpectedAction, OutcomeEvidence

    calls = [("resize_volume", {"volume": "a", "size_gb": 200}, "success", '{"ok": true}')] * made
    traj = run_with(task, calls, outcome=Outcome.FAILURE)
    traj.evidence = OutcomeEvidence(
        expected_actions=[
            ExpectedAction(tool="resize_volume", args={"volume": v, "size_gb": 200})
            for v in ("a", "b")
        ]
    )
    text = summarize_episode(traj)
    if task.isascii():
        assert said in text and not_said not in text
    else:
        zh = "resize_volume 的调用次数少于预期" if made else "未调用 resize_volume"
        assert zh in text


def test_why_does_not_take_arguments_kept_as_text_for_an_argument() -> None:
    """An expected action whose arguments were not JSON keeps them as text (``_raw``): the
    episode compares its tool, never ``_raw`` as if it were an argument."""
    from hindsight.models import ExpectedAction, OutcomeEvidence

    call = ("cancel_order", {"order_id": "#W1", "reason": "no_longer_needed"}, "success", "{}")
    traj = run_with("Cancel my order", [call], outcome=Outcome.FAILURE)
    traj.evidence = OutcomeEvidence(
        expected_actions=[
            ExpectedAction(tool="cancel_order", args={"_raw": '{"order_id": #W1'}),
            ExpectedAction(tool="refund", args={"_raw": "all of it"}),
        ]
    )
    text = summarize_episode(traj)
    assert "compared with the expected actions: refund not called." in text
    assert "raw" not in text and "order_id" not in text and "instead of none" not in text


def test_a_retry_that_came_after_another_fix_leaves_that_fix_named() -> None:
    calls = [
        ("resize_volume", {"size_gb": 200}, "failure", "Error: quota exceeded"),
        ("raise_quota", {"project": "atlas"}, "success", '{"ok": true}'),
        ("resize_volume", {"size_gb": 200}, "success", '{"ok": true}'),
    ]
    text = summarize_episode(run_with("Resize the volume", calls, outcome=Outcome.SUCCESS))
    assert "Turning point: after resize_volume failed, raise_quota(" in text


def test_success_without_failures_names_the_state_changing_step() -> None:
    traj = run_with(
        "Book the 9am flight",
        [
            ("search_flights", {"cabin": "economy"}, "success", "[...]"),
            ("book_reservation", {"cabin": "economy"}, "success", "booked"),
            ("get_user_details", {"cabin": "economy"}, "success", "{...}"),
        ],
        outcome=Outcome.SUCCESS,
    )
    assert "Turning point: book_reservation(cabin=economy) succeeded." in summarize_episode(traj)


def test_chinese_run_gets_a_chinese_summary() -> None:
    traj = run_with(
        "用户偏好用 pnpm 而不是 npm。请帮我安装项目依赖。",
        [
            ("shell", {"cmd": "npm install"}, "failure", "用户要求使用 pnpm"),
            ("shell", {"cmd": "pnpm install"}, "success", "Done in 4.2s"),
        ],
        outcome=Outcome.SUCCESS,
    )
    text = summarize_episode(traj)
    assert text.startswith("目标：用户偏好用 pnpm 而不是 npm。")
    assert "步骤：1) shell(cmd=npm install) → 失败；2) shell(cmd=pnpm install) → 成功。" in text
    assert (
        "结果：成功。" in text
        and "转折点：shell失败之后，改用 shell(cmd=pnpm install) 成功" in text
    )


def test_long_run_is_capped_and_keeps_both_ends() -> None:
    calls = [
        (f"tool_{i}", {"page": i}, "success" if i % 3 else "failure", "x" * 5000)
        for i in range(300)
    ]
    traj = run_with(
        "Reconcile the May ledger " + "in detail " * 400, calls, outcome=Outcome.PARTIAL
    )
    text = summarize_episode(traj)
    assert estimate_tokens(text) <= EPISODE_MAX_TOKENS
    assert "1) tool_0(page=0)" in text and "… 292 more steps" in text
    assert "tool_299(page=299)" in text
    # the steps after the gap keep their own numbers: 1-5, then 298-300
    assert "5) tool_4(page=4)" in text and "6) " not in text
    assert "298) tool_297(page=297)" in text and "300) tool_299(page=299)" in text
    assert "x" * 200 not in text
    assert estimate_tokens(summarize_episode(traj, max_tokens=60)) <= 60


def test_no_tools_and_empty_runs() -> None:
    chat = Trajectory(
        tenant_id="acme",
        events=[
            Event(event_type="user_message", content="What is your refund policy?"),
            Event(event_type="final_answer", content="Refunds within 30 days."),
        ],
    )
    text = summarize_episode(chat)
    assert "Steps: answered without calling a tool." in text
    assert "Outcome: unknown." in text and "Turning point: the answer itself." in text
    assert summarize_episode(Trajectory(tenant_id="acme", events=[])) == ""


def raised(content: str, **meta: Any) -> Event:
    return Event(event_type="error", status="failure", content=content, metadata=meta)


@pytest.mark.parametrize(
    ("meta", "name"), [({"run": "sync"}, "sync"), ({"node": "sync"}, "sync"), ({}, "the run")]
)
def test_a_step_that_raised_and_ended_the_run_is_its_turning_point(
    meta: dict[str, Any], name: str
) -> None:
    """A node or chain that raised is a step of the episode, not 'answered without calling a
    tool'; the step and its error decided a failed run."""
    traj = Trajectory(
        tenant_id="acme",
        task="Sync order 7 with the warehouse",
        events=[
            Event(event_type="user_message", content="Sync order 7 with the warehouse"),
            raised("TimeoutError: warehouse sync timed out", **meta),
        ],
        outcome=Outcome.FAILURE,
    )
    text = summarize_episode(traj)
    assert f"Steps: 1) {name} raised (TimeoutError: warehouse sync timed out)." in text
    assert "answered without calling a tool" not in text
    assert (
        f"Turning point: {name} raised (TimeoutError: warehouse sync timed out) and the run "
        "did not recover." in text
    )


@pytest.mark.parametrize("outcome", [Outcome.SUCCESS, Outcome.UNKNOWN])
@pytest.mark.parametrize("tool_after", [False, True])
def test_a_step_that_raised_and_was_got_past_says_so(outcome: Outcome, tool_after: bool) -> None:
    """Retried by the framework (a retry policy, a fallback): the attempt is a step, in order
    among the tool calls; the run went on past it, unless a tool call after it decided the
    run (then that call is the turning point)."""
    traj = run_with("Where is order 8812?", [], outcome=outcome)
    traj.events.append(raised("TimeoutError: warehouse timed out", run="lookup"))
    if tool_after:
        traj.events.append(Event(event_type="tool_call", tool_name="order_query", tool_args={}))
        traj.events.append(
            Event(event_type="tool_result", tool_name="order_query", status="success", content="ok")
        )
    traj.events.append(Event(event_type="final_answer", content="Order 8812 shipped."))
    text = summarize_episode(traj)
    step = "Steps: 1) lookup raised (TimeoutError: warehouse timed out)"
    assert step + ("; 2) order_query() → success." if tool_after else ".") in text
    if tool_after:
        assert "Turning point: order_query() succeeded." in text
    elif outcome is Outcome.UNKNOWN:  # only an answer after it: a retry or an apology
        assert "Turning point: the answer itself." in text
    else:
        assert (
            "Turning point: lookup raised (TimeoutError: warehouse timed out); the run went on "
            "past it." in text
        )


@pytest.mark.parametrize(("meta", "name"), [({"model": "gpt-4o"}, "gpt-4o"), ({}, "the model")])
@pytest.mark.parametrize("retried", [False, True])
def test_a_failed_model_call_is_a_step_and_never_the_answer(
    meta: dict[str, Any], name: str, retried: bool
) -> None:
    """A model call that timed out stores the error as its content: the episode lists it as
    a step, and its text is not taken for the run's answer."""
    events = [
        Event(event_type="user_message", content="Where is order 8812?"),
        Event(
            event_type="model_call",
            status="timeout",
            content="TimeoutError: model timed out after 30 s",
            metadata=meta,
        ),
    ]
    if retried:
        events.append(Event(event_type="model_call", status="success", content="It shipped."))
    traj = Trajectory(
        tenant_id="acme",
        task="Where is order 8812?",
        events=events,
        outcome=Outcome.SUCCESS if retried else Outcome.FAILURE,
    )
    text = summarize_episode(traj)
    assert f"Steps: 1) {name} timed out (TimeoutError: model timed out after 30 s)." in text
    assert "answered without calling a tool" not in text
    if retried:
        assert "; the run went on past it." in text and text.endswith("Answer: It shipped.")
    else:
        assert "and the run did not recover." in text and "Answer:" not in text


@pytest.mark.parametrize(
    ("outcome", "after", "turn"),
    [
        # judged failed by the application after a retry that let the model answer: the
        # run did go on, so the step is not what it never recovered from
        (Outcome.FAILURE, "model", "the answer itself"),
        (Outcome.PARTIAL, "nothing", "agent raised (TimeoutError: lookup timed out) and the run"),
        (Outcome.UNKNOWN, "nothing", "agent raised (TimeoutError: lookup timed out) and the run"),
        (Outcome.SUCCESS, "model", "agent raised (TimeoutError: lookup timed out); the run went"),
        (Outcome.SUCCESS, "answer", "agent raised (TimeoutError: lookup timed out); the run went"),
        (Outcome.UNKNOWN, "answer", "the answer itself"),  # a retry or an apology: cannot tell
        (Outcome.UNKNOWN, "model", "agent raised (TimeoutError: lookup timed out); the run went"),
    ],
)
def test_the_turning_point_of_a_raised_step_follows_what_came_after_it(
    outcome: Outcome, after: str, turn: str
) -> None:
    events = [
        Event(event_type="user_message", content="Where is order 8812?"),
        raised("TimeoutError: lookup timed out", run="agent"),
    ]
    if after == "model":
        events.append(Event(event_type="model_call", status="success", content="Shipped."))
    if after == "answer":
        events.append(Event(event_type="final_answer", content="Shipped."))
    traj = Trajectory(tenant_id="acme", task="Where is order 8812?", events=events, outcome=outcome)
    assert f"Turning point: {turn}" in summarize_episode(traj)


@pytest.mark.parametrize(("name", "shown"), [("  ", "the run"), ("x" * 300, "x" * 59 + "…")])
def test_a_step_name_is_shortened_and_never_blank(name: str, shown: str) -> None:
    traj = Trajectory(
        tenant_id="acme",
        events=[
            Event(event_type="user_message", content="Sync order 7"),
            raised("ValueError: bad row", run=name),
        ],
        outcome=Outcome.FAILURE,
    )
    assert f"Steps: 1) {shown} raised (ValueError: bad row)." in summarize_episode(traj)


def test_a_failed_tool_call_still_decides_over_a_step_that_raised_before_it() -> None:
    traj = run_with("Where is order 8812?", [], outcome=Outcome.FAILURE)
    traj.events.append(raised("ValueError: bad page size", run="prepare"))
    traj.events.append(Event(event_type="tool_call", tool_name="order_query", tool_args={}))
    traj.events.append(
        Event(event_type="tool_result", tool_name="order_query", status="failure", content="404")
    )
    text = summarize_episode(traj)
    assert "1) prepare raised (ValueError: bad page size); 2) order_query() → failed." in text
    assert "Turning point: order_query failed (404) and the run did not recover." in text


def test_a_chinese_run_whose_step_raised() -> None:
    traj = Trajectory(
        tenant_id="acme",
        task="同步订单 7 到仓库",
        events=[
            Event(event_type="user_message", content="同步订单 7 到仓库"),
            raised("TimeoutError: 仓库同步超时", run="sync"),
        ],
        outcome=Outcome.FAILURE,
    )
    text = summarize_episode(traj)
    assert "步骤：1) sync抛出异常 (TimeoutError: 仓库同步超时)。" in text
    assert "转折点：sync抛出异常 (TimeoutError: 仓库同步超时)，之后没有恢复" in text


# -- written by every review, left out of normal recall -----------------------------------------


def test_every_review_writes_one_episode_that_normal_recall_never_returns(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path, database_url, reviewer=HeuristicReviewer()) as mem:
        traj = timeout_then_cache()
        mem.store_episode(traj)
        assert mem.flush(timeout=60)
        stored = mem.list_experiences(tenant_id="acme", limit=1000)
        episodes = [e for e in stored if e.kind is ExperienceKind.EPISODE]
        assert [e.id for e in episodes] == [episode_id(traj.id)]
        episode = episodes[0]
        assert episode.content == summarize_episode(traj)
        assert episode.source_trajectory_ids == [traj.id]
        assert episode.tools == ["order_query", "order_query_cached"]
        assert episode.metadata["outcome"] == "success"
        assert mem.aio.index.count("acme") == len(stored)  # embedded like every experience
        # the summary is a near-perfect match for its own task, yet normal recall skips it
        for query in (traj.task, episode.content):
            result = mem.recall(query, tenant_id="acme", top_k=50)
            assert result.hits
            assert all(h.experience.kind is not ExperienceKind.EPISODE for h in result.hits)
            assert result.episodes == []
            assert EPISODES_HEADING not in result.render()
        # a second review (review_now) does not write a second episode
        mem.review_now(traj.id, tenant_id="acme")
        after = mem.list_experiences(tenant_id="acme", limit=1000)
        assert sum(e.kind is ExperienceKind.EPISODE for e in after) == 1


def test_include_episodes_returns_lessons_first_then_the_most_similar_episodes(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path, database_url, reviewer=HeuristicReviewer()) as mem:
        runs = [
            run_with(
                f"Where is order {n}? It was due yesterday.",
                [("order_query", {"region": region}, "timeout", "timed out after 5 s")],
                outcome=Outcome.FAILURE,
            )
            for n, region in ((8812, "eu"), (8813, "us"), (8814, "apac"), (8815, "eu"))
        ]
        unrelated = run_with(
            "Translate the manual into German",
            [("translate", {"lang": "de"}, "success", "ok")],
            outcome=Outcome.SUCCESS,
        )
        for traj in [*runs, unrelated]:
            mem.store_episode(traj)
        assert mem.flush(timeout=60)
        result = mem.recall(
            "Where is order 9901? It was due yesterday.", tenant_id="acme", include_episodes=True
        )
        assert result.hits and all(
            h.experience.kind is not ExperienceKind.EPISODE for h in result.hits
        )
        assert len(result.episodes) == EPISODE_TOP_K
        assert all(h.experience.kind is ExperienceKind.EPISODE for h in result.episodes)
        assert unrelated.id not in {h.experience.source_trajectory_ids[0] for h in result.episodes}
        scores = [h.score for h in result.episodes]
        assert scores == sorted(scores, reverse=True)
        # recorded as recalled, like lessons
        first = mem.get_experience(result.episodes[0].experience.id, tenant_id="acme")
        assert first.recall_count == 1
        # rendered in their own section, after the lessons, within the budget
        text = result.render()
        assert text.startswith(BLOCK_START) and text.endswith(BLOCK_END)
        heading = text.index(EPISODES_HEADING)
        assert text.index("\n1. [") < heading < text.index("\nE1. [episode; outcome failure")
        doc = result.to_json()
        assert len(doc["episodes"]) == EPISODE_TOP_K and doc["episodes"][0]["kind"] == "episode"
        # top_k bounds the episodes too; other tenants never see them
        assert (
            len(mem.recall("order", tenant_id="acme", top_k=1, include_episodes=True).episodes) <= 1
        )
        assert (
            mem.recall("Where is order 9901?", tenant_id="other", include_episodes=True).episodes
            == []
        )


def test_task_type_mode_separates_the_tiers_too(tmp_path: Path) -> None:
    with make_memory(
        tmp_path, "sqlite:///" + str(tmp_path / "h.db"), reviewer=HeuristicReviewer()
    ) as mem:
        for n in range(3):
            mem.store_episode(
                run_with(
                    f"Where is order {n}?",
                    [("order_query", {}, "timeout", "timed out")],
                    outcome=Outcome.FAILURE,
                    task_type="support",
                )
            )
        assert mem.flush(timeout=60)
        result = mem.recall("", tenant_id="acme", task_type="support", include_episodes=True)
        assert result.mode == "task_type"
        assert result.hits and all(
            h.experience.kind is not ExperienceKind.EPISODE for h in result.hits
        )
        assert len(result.episodes) == 3
        plain = mem.recall("", tenant_id="acme", task_type="support", top_k=50)
        assert all(h.experience.kind is not ExperienceKind.EPISODE for h in plain.hits)


def test_episodes_do_not_crowd_lessons_out_of_the_candidates(tmp_path: Path) -> None:
    """Many near-identical episodes rank above the one lesson: the lesson is still found."""
    with make_memory(
        tmp_path, "sqlite:///" + str(tmp_path / "h.db"), embedder=FakeEmbedder(64)
    ) as mem:
        for i in range(60):
            mem.add_experience(
                f"order lookup for customer run {i}", tenant_id="acme", kind="episode"
            )
        mem.add_experience("retry order lookup once, then use the cache", tenant_id="acme")
        result = mem.recall("order lookup for customer run", tenant_id="acme", top_k=3)
        assert [h.experience.content for h in result.hits] == [
            "retry order lookup once, then use the cache"
        ]


# -- the token budget is shared ---------------------------------------------------------------


def test_each_tier_keeps_its_share_of_the_budget(tmp_path: Path) -> None:
    with make_memory(
        tmp_path, "sqlite:///" + str(tmp_path / "h.db"), embedder=FakeEmbedder(64)
    ) as mem:
        for i in range(5):
            mem.add_experience(f"lesson {i} about refunds " + "detail " * 2000, tenant_id="acme")
            mem.add_experience(
                f"episode {i} about refunds " + "step " * 2000, tenant_id="acme", kind="episode"
            )
        result = mem.recall("refunds", tenant_id="acme", include_episodes=True, token_budget=1000)
        text = result.render()
        assert estimate_tokens(text) <= 1000 and result.truncated
        lessons_part, episodes_part = text.split(EPISODES_HEADING)
        assert "E1. [episode" in episodes_part  # the episodes kept their share
        assert estimate_tokens(episodes_part) >= 0.3 * 1000
        assert estimate_tokens(lessons_part) >= 0.4 * 1000
        alone = mem.recall("refunds", tenant_id="acme", token_budget=1000)
        assert EPISODES_HEADING not in alone.render()


# -- CLI ----------------------------------------------------------------------------------------


def cli(*args: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    env = {"HINDSIGHT_DATA_DIR": str(data_dir), "COLUMNS": "200", "PYTHONIOENCODING": "utf-8"}
    import os

    env.update({k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "PYTHONPATH")})
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-c", "from hindsight.cli import main; main()", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=180,
        cwd=REPO,
    )


def test_cli_recall_episodes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with Memory(data_dir=data) as mem:
        mem.store_episode(timeout_then_cache())
        assert mem.flush(timeout=60)
    proc = cli(
        "recall",
        "Where is order 9901? It was due yesterday.",
        "--tenant",
        "acme",
        "--episodes",
        "--json",
        data_dir=data,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["hits"] and all(h["kind"] != "episode" for h in doc["hits"])
    [episode] = doc["episodes"]
    assert episode["content"].startswith("Goal: Where is my order 8812?")
    assert EPISODES_HEADING in doc["rendered"]
    plain = cli("recall", "Where is order 9901?", "--tenant", "acme", "--json", data_dir=data)
    assert json.loads(plain.stdout)["episodes"] == []
    table = cli("recall", "Where is order 9901?", "--tenant", "acme", "--episodes", data_dir=data)
    assert table.returncode == 0 and "past episodes" in table.stdout and "E1" in table.stdout


def test_lesson_helper_is_unaffected() -> None:
    # Lesson kinds stay what reviewers produce; "episode" is a kind like the others.
    assert lesson("x", kind="episode").kind is ExperienceKind.EPISODE
    with pytest.raises(ValueError):
        lesson("x", kind="episodes")


@pytest.mark.parametrize("same", [2, 3])
def test_runs_that_went_the_same_way_are_one_episode_in_a_block(same: int) -> None:
    """Two runs with the same steps and outcome have one episode text (names masked): a
    block shows it once, and the next episode takes the other's place."""
    from hindsight.testing import test_memory

    with test_memory() as mem:
        people = ["Li Wei", "Maria Gonzalez", "Jon Snow"][:same]
        for name in people:
            with mem.record(f"Refill Zestril for {name}", tenant_id="rx") as run:
                run.user_message(f"Refill Zestril for {name}")
                call = run.tool_call("refill", {"drug": "Zestril", "full_name": name})
                run.tool_result(content="Error: not on formulary", tool_call_id=call.tool_call_id)
                call = run.tool_call("refill", {"drug": "lisinopril", "full_name": name})
                run.tool_result(content='{"refill_id": "RF-1"}', tool_call_id=call.tool_call_id)
                run.set_outcome("success")
        with mem.record("Refill metformin for a patient", tenant_id="rx") as run:
            run.user_message("Refill metformin")
            call = run.tool_call("refill", {"drug": "metformin"})
            run.tool_result(content='{"refill_id": "RF-2"}', tool_call_id=call.tool_call_id)
            run.set_outcome("success")
        assert mem.flush(timeout=60)
        listed = mem.list_experiences(tenant_id="rx", limit=100)
        texts = {e.content for e in listed if e.kind is ExperienceKind.EPISODE}
        assert len(texts) == 2  # the Zestril runs share one text
        result = mem.recall("Refill Zestril for Olga Petrova", tenant_id="rx",
                            include_episodes=True)  # fmt: skip
        shown = [h.experience.content for h in result.episodes]
        assert len(shown) == 2 and len(set(shown)) == 2, shown
        assert result.render().count("Refill Zestril") == 1
