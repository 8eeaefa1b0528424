"""The MCP tools in-process (docs/mcp.md#tools): schemas, annotations, every tool, errors,
exact strings and list coercion; tenant isolation, ids in any form, an empty tenant."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from hindsight._errors import AuthenticationError, TenantRequiredError
from hindsight.service.mcp import TOOL_NAMES, build_mcp_server, fixed_tenant
from hindsight.testing import ScriptedReviewer, test_memory
from hindsight.writeback.confidence import support_mass
from tests.server.mcp_support import call, echo_lessons, openai_run

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def mem() -> Any:
    memory = test_memory(reviewer=ScriptedReviewer(echo_lessons))
    yield memory
    memory.close()


@pytest.fixture
async def acme(mem: Any) -> AsyncIterator[Any]:
    async with Client(build_mcp_server(mem.aio, tenant=fixed_tenant("acme"))) as client:
        yield client


async def _learn(client: Any, task: str, **extra: Any) -> tuple[str, list[dict[str, Any]]]:
    """Store a run and review it now; returns (trajectory id, lessons)."""
    stored = (
        await call(
            client, "store_episode", {"trajectory": openai_run(task), "review": False, **extra}
        )
    ).ok()
    review = (
        await call(client, "summarize_trajectory", {"trajectory_id": stored["trajectory_id"]})
    ).ok()
    return stored["trajectory_id"], review["lessons"]


# -- schemas and annotations ----------------------------------------------------------------------
async def test_tools_have_typed_schemas_annotations_and_no_tenant_argument(acme: Any) -> None:
    tools = {t.name: t for t in (await acme.list_tools()).tools}
    assert set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.input_schema["type"] == "object"
        assert not any("tenant" in p for p in tool.input_schema["properties"]), tool.name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert tool.annotations is not None and tool.annotations.open_world_hint is False
        for prop in tool.input_schema["properties"].values():
            assert prop.get("description"), (tool.name, prop)
    assert tools["recall_similar"].annotations.read_only_hint is True
    assert tools["forget_experience"].annotations.destructive_hint is True
    assert tools["record_outcome"].annotations.idempotent_hint is True
    for name in ("store_episode", "summarize_trajectory", "adjust_confidence", "record_outcome"):
        assert tools[name].annotations.destructive_hint is False, name
        assert not tools[name].annotations.read_only_hint, name
    recall = tools["recall_similar"].input_schema
    assert recall["required"] == ["query"]
    assert recall["properties"]["top_k"]["anyOf"][0] == {  # the contract's range
        "maximum": 1000,
        "minimum": 1,
        "type": "integer",
    }
    assert recall["properties"]["tags"]["anyOf"][0] == {  # the contract's limit
        "items": {"type": "string"},
        "maxItems": 100,
        "type": "array",
    }
    assert set(tools["recall_similar"].output_schema["required"]) >= {"hits", "rendered"}
    delta = tools["adjust_confidence"].input_schema["properties"]["delta"]
    assert (delta["minimum"], delta["maximum"]) == (-1.0, 1.0)


# -- task groups ------------------------------------------------------------------------------
async def test_list_trajectories_by_task_group_and_outcome(acme: Any, mem: Any) -> None:
    runs = []
    for i, reward in enumerate((1.0, 0.0, 0.0)):
        record = {
            "messages": [{"role": "system", "content": "Deploy policy."}, *openai_run(f"t{i}")],
            "reward": reward,
            "task_key": "deploy-prod" if i < 2 else "other",
            "reason": "rollout check failed" if reward == 0.0 else None,
        }
        stored = (await call(acme, "store_episode", {"trajectory": record})).ok()
        assert stored["task_key"] == record["task_key"]
        runs.append(stored["trajectory_id"])
    # The fake clock stands still: runs stored at one instant are ordered by id.
    listed = (await call(acme, "list_trajectories", {"task_key": "deploy-prod"})).ok()
    by_id = {r["id"]: r for r in listed["items"]}
    assert set(by_id) == set(runs[:2])
    assert (by_id[runs[0]]["outcome"], by_id[runs[1]]["outcome"]) == ("success", "failure")
    assert by_id[runs[1]]["reason"] == "rollout check failed" and by_id[runs[0]]["reason"] is None
    assert by_id[runs[0]]["task_key_source"] == "explicit"
    failed = (await call(acme, "list_trajectories", {"outcome": "failure"})).ok()
    assert {r["id"] for r in failed["items"]} == set(runs[1:])
    every = [r["id"] for r in (await call(acme, "list_trajectories", {})).ok()["items"]]
    assert sorted(every) == sorted(runs)
    page = (await call(acme, "list_trajectories", {"limit": 1, "offset": 2})).ok()
    assert [r["id"] for r in page["items"]] == every[2:]
    async with Client(build_mcp_server(mem.aio, tenant=fixed_tenant("globex"))) as globex:
        theirs = (await call(globex, "list_trajectories", {"task_key": "deploy-prod"})).ok()
        assert theirs["items"] == []
    for args, words in (
        ({"outcome": "won"}, "outcome must be one of"),
        ({"task_key": " "}, "blank"),
    ):
        done = await call(acme, "list_trajectories", args)
        assert done.is_error and done.error is not None
        assert done.error["type"] == "invalid_request" and words in done.error["message"]


# -- every tool, end to end ---------------------------------------------------------------
async def test_store_review_recall_outcome_adjust_forget(acme: Any, mem: Any) -> None:
    tid, lessons = await _learn(acme, "Deploy the billing service to prod", task_type="deploy")
    assert [x["content"] for x in lessons] == ["Deploy the billing service to prod"]
    lesson = lessons[0]
    assert lesson["task_type"] == "deploy" and lesson["source_trajectory_ids"] == [tid]

    run = str(uuid.uuid4())
    recall = (
        await call(acme, "recall_similar", {"query": "deploy billing", "trajectory_id": run})
    ).ok()
    assert [h["id"] for h in recall["hits"]] == [lesson["id"]]
    hit = recall["hits"][0]
    assert hit["score"] > 0 and set(hit["why"]) >= {"similarity", "confidence", "recency"}
    assert "--- Past experience (reference only) ---" in recall["rendered"]
    assert lesson["content"] in recall["rendered"] and recall["truncated"] is False

    before = mem.get_experience(lesson["id"], tenant_id="acme")
    prior = before.metadata.get("confidence_basis", {}).get("prior", before.confidence)
    s, c = support_mass(before)  # the lesson's evidence: its run
    outcome = (await call(acme, "record_outcome", {"trajectory_id": run, "success": True})).ok()
    assert [e["id"] for e in outcome["updated"]] == [lesson["id"]]
    credited = (2 * prior + s + 1) / (2 + s + c + 1)  # + one successful recall
    assert outcome["updated"][0]["confidence"] == pytest.approx(credited, abs=1e-6)
    again = (await call(acme, "record_outcome", {"trajectory_id": run, "success": False})).ok()
    assert again["updated"] == []  # a run's outcome counts once

    adjusted = (
        await call(
            acme,
            "adjust_confidence",
            {"experience_id": lesson["id"], "delta": -0.25, "reason": "wrong"},
        )
    ).ok()
    assert adjusted["confidence"] == pytest.approx(credited - 0.25, abs=1e-6)
    assert mem.get_experience(lesson["id"], tenant_id="acme").confidence == adjusted["confidence"]

    gone = (await call(acme, "forget_experience", {"experience_id": lesson["id"]})).ok()
    assert gone == {"experience_id": lesson["id"], "status": "deleted"}
    after = (await call(acme, "recall_similar", {"query": "deploy billing"})).ok()
    assert lesson["id"] not in [h["id"] for h in after["hits"]]


async def test_recall_with_the_agents_tools_opens_with_their_risk_checks(
    acme: Any, mem: Any
) -> None:
    """recall_similar takes the tools the agent has, like recall in Python and over HTTP: the
    block opens with their "before you call X" checks; risk_checks=false leaves them out."""
    lesson = mem.add_experience(
        "refund_order can fail with 'amount exceeds the original charge': refund at most the "
        "amount charged.",
        tenant_id="acme", kind="tool_reliability", tools=["refund_order"], confidence=0.8,
    )  # fmt: skip
    mem.add_experience("Ship the parcel with the carrier the customer chose.",
                       tenant_id="acme", confidence=0.9)  # fmt: skip
    ask = {"query": "ship the parcel", "tools": ["refund_order"], "top_k": 1}
    block = (await call(acme, "recall_similar", ask)).ok()["rendered"]
    assert "- refund_order can fail" in block, block  # it names its tool: no prefix
    plain = (await call(acme, "recall_similar", {**ask, "risk_checks": "off"})).ok()
    assert "before you call" not in plain["rendered"]
    assert lesson.id not in plain["rendered"]
    refused = await call(acme, "recall_similar", {**ask, "tools": [""]})
    assert refused.error is not None and refused.error["field"] == "tools", refused.text
    assert "tools must be tool names of 1..200 characters" in refused.error["message"]


async def test_store_episode_reads_every_shape(acme: Any, mem: Any, tau_bench_path: Path) -> None:
    messages = openai_run("Rotate the TLS certificate")
    tau = json.loads(tau_bench_path.read_text())[0]
    own = {
        "task": "Refund order 42",
        "outcome": "failure",
        "events": [
            {"event_type": "user_message", "content": "Refund order 42"},
            {
                "event_type": "tool_result",
                "tool_name": "refund",
                "status": "timeout",
                "content": "x",
            },
        ],
    }
    shapes = [
        (messages, "openai", 4),
        ({"messages": messages, "reward": 1.0}, "openai", 4),
        (tau, "tau-bench", None),
        (own, "trajectory", 2),
        (json.dumps(messages), "openai", 4),  # a JSON text of the same shape is read as it
    ]
    for value, fmt, events in shapes:
        stored = (await call(acme, "store_episode", {"trajectory": value, "review": False})).ok()
        assert stored["format"] == fmt
        if events is not None:
            assert stored["events"] == events
        traj = mem.get_trajectory(stored["trajectory_id"], tenant_id="acme")
        assert traj.tenant_id == "acme" and len(traj.events) == stored["events"] > 0
    assert stored["stored"] is False  # the JSON text repeats the first transcript: stored once
    tau_stored = (await call(acme, "store_episode", {"trajectory": tau})).ok()
    assert tau_stored["task_type"] == "tau-bench" and tau_stored["stored"] is False
    assert tau_stored["outcome"] == ("success" if tau["reward"] == 1 else "failure")


# -- errors ----------------------------------------------------------------------------------------
async def test_errors_are_one_line_tool_errors_naming_the_field(acme: Any) -> None:
    cases: list[tuple[str, dict[str, Any], str, str | None]] = [
        ("recall_similar", {}, "validation_error", "query"),
        ("recall_similar", {"query": "x", "top_k": 0}, "validation_error", "top_k"),
        ("recall_similar", {"query": "x", "top_k": 1001}, "validation_error", "top_k"),
        ("recall_similar", {"query": "x", "top_k": True}, "validation_error", "top_k"),
        ("recall_similar", {"query": 42}, "validation_error", "query"),
        ("recall_similar", {"query": "   "}, "invalid_request", "query"),
        (
            "recall_similar",
            {"query": "x", "trajectory_id": "run-1"},
            "invalid_request",
            "trajectory_id",
        ),
        (
            "adjust_confidence",
            {"experience_id": str(uuid.uuid4()), "delta": 2},
            "validation_error",
            "delta",
        ),
        (
            "adjust_confidence",
            {"experience_id": str(uuid.uuid4()), "delta": "a lot"},
            "validation_error",
            "delta",
        ),
        (
            "adjust_confidence",
            {"experience_id": str(uuid.uuid4()), "delta": 0.1},
            "not_found",
            None,
        ),
        ("forget_experience", {"experience_id": "not-a-uuid"}, "invalid_request", "experience_id"),
        ("forget_experience", {"experience_id": str(uuid.uuid4())}, "not_found", None),
        ("summarize_trajectory", {"trajectory_id": str(uuid.uuid4())}, "not_found", None),
        (
            "record_outcome",
            {"trajectory_id": str(uuid.uuid4()), "success": "maybe"},
            "validation_error",
            "success",
        ),
        ("store_episode", {"trajectory": {"hello": "world"}}, "invalid_trajectory", "trajectory"),
        ("store_episode", {"trajectory": "not json"}, "validation_error", "trajectory"),
        ("store_episode", {"trajectory": {"messages": "hi"}}, "invalid_trajectory", "trajectory"),
        (
            "store_episode",
            {"trajectory": {"tenant_id": "other", "task": "t", "events": []}},
            "invalid_request",
            None,
        ),
    ]
    for name, args, kind, field in cases:
        done = await call(acme, name, args)
        assert done.is_error, (name, args, done.data)
        assert done.error is not None, (name, args, done.text)
        assert (done.error["type"], done.error["field"]) == (kind, field), (name, args, done.error)
        assert done.error["message"].strip()
    unknown = await call(acme, "no_such_tool", {})
    assert unknown.is_error and "no_such_tool" in unknown.text


async def test_store_episode_never_drops_part_of_a_record(acme: Any, mem: Any) -> None:
    """Review finding (same converter as HTTP): a record with the keys of two formats would
    lose one of them; it is a one-line invalid_trajectory naming both, and nothing is stored."""
    tau = {"task_id": 7, "reward": 1.0, "traj": [{"role": "user", "content": "hi"}]}
    for record in (
        {**tau, "messages": openai_run("Rotate the key")},
        {"event_type": "user_message", "content": "hi", "messages": []},
        json.dumps({**tau, "events": []}),
    ):
        done = await call(acme, "store_episode", {"trajectory": record})
        assert done.error is not None, done.text
        assert (done.error["type"], done.error["field"]) == ("invalid_trajectory", "trajectory")
        assert "several formats" in done.error["message"], done.error
    assert mem.stats(tenant_id="acme")["trajectories"] == 0


async def test_strings_are_kept_exactly_as_sent(acme: Any, mem: Any) -> None:
    for text in ["123", '{"a":1}', "null", "true", '["x"]', '"quoted"', " spaced "]:
        stored = (
            await call(
                acme,
                "store_episode",
                {"trajectory": openai_run(f"task {text}"), "task_type": text, "review": False},
            )
        ).ok()
        assert stored["task_type"] == text
        traj = mem.get_trajectory(stored["trajectory_id"], tenant_id="acme")
        assert traj.task_type == stored["task_type"]
        recall = await call(acme, "recall_similar", {"query": text, "task_type": text})
        assert recall.ok()["query"] == text
    await _learn(acme, "typed as json", task_type='{"kind": "deploy"}')
    exact = (
        await call(acme, "recall_similar", {"query": "", "task_type": '{"kind": "deploy"}'})
    ).ok()
    assert [h["content"] for h in exact["hits"]] == ["typed as json"]
    assert exact["hits"][0]["task_type"] == '{"kind": "deploy"}'


async def test_tags_accept_a_list_its_json_text_or_one_string_and_name_the_field_otherwise(
    acme: Any, mem: Any
) -> None:
    """As in Python and over HTTP, one string is a list of one, with the contract's
    messages; on every tool that takes tags or tools."""
    await _learn(acme, "Invoices need the billing tag")
    mem.add_experience("Billing lessons carry a tag", tenant_id="acme", tags=["billing"])
    as_list = (await call(acme, "recall_similar", {"query": "billing", "tags": ["billing"]})).ok()
    for same in ('["billing"]', "billing"):
        other = (await call(acme, "recall_similar", {"query": "billing", "tags": same})).ok()
        assert [h["id"] for h in as_list["hits"]] == [h["id"] for h in other["hits"]]
        tagged = [h for h in other["hits"] if h["tags"] == ["billing"]]
        assert tagged and tagged[0]["why"]["boost"] > 0  # the coerced tags were used
    too_many = [f"t{i}" for i in range(101)]
    for bad, message in [
        ('{"a": 1}', "tags must be a list of strings"),
        ("[1, 2]", "tags must be a list of strings"),
        (7, "tags must be a list of strings"),
        (too_many, "tags must be at most 100 strings, got 101"),
    ]:
        done = await call(acme, "recall_similar", {"query": "billing", "tags": bad})
        assert done.error is not None and done.error["field"] == "tags", (bad, done.text)
        assert done.error["type"] == "validation_error"
        assert done.error["message"] == f"tags: {message}"  # the field, then Python's words
    lesson = mem.add_experience("Edit my labels", tenant_id="acme")
    for tags, tools in (("ops", "lookup"), ('["a", "b"]', '["lookup", "refund"]')):
        edit = {"experience_id": lesson.id, "tags": tags, "tools": tools}
        (await call(acme, "edit_experience", edit)).ok()
        edited = mem.get_experience(lesson.id, tenant_id="acme")
        assert (edited.tags, edited.tools) == (
            (["ops"], ["lookup"]) if tags == "ops" else (["a", "b"], ["lookup", "refund"])
        )
    done = await call(acme, "edit_experience", {"experience_id": lesson.id, "tags": 7})
    assert (
        done.error is not None and done.error["message"] == "tags: tags must be a list of strings"
    )


@pytest.mark.parametrize("at", [0, 2])
async def test_a_lesson_is_refused_in_the_words_of_every_interface(acme: Any, at: int) -> None:
    """An unknown field names the fields a lesson has (as over HTTP and in Python's batch),
    and a name with a NUL is a validation error at the lesson's dotted path, as any other."""
    from hindsight._contract import unknown_field
    from hindsight.service.mcp._models import LessonIn

    lessons: list[dict[str, Any]] = [{"content": f"Lesson {i} on refusals"} for i in range(3)]
    lessons[at] = {**lessons[at], "colour": "red"}
    done = await call(acme, "add_experiences", {"lessons": lessons})
    assert done.error is not None and done.error["type"] == "validation_error"
    fields = list(LessonIn.model_fields)
    assert done.error["message"] == f"lessons.{at}.colour: {unknown_field('colour', fields)}"
    lessons[at] = {"content": "Lesson on a name", "task_type": "a\x00b"}
    done = await call(acme, "add_experiences", {"lessons": lessons})
    assert done.error is not None and done.error["type"] == "validation_error"
    assert done.error["field"] == "lessons"
    assert done.error["message"].startswith(
        f"lessons.{at}.task_type contains a NUL character (U+0000) at position 1"
    )


# -- isolation, ids in any form, an empty tenant -----------------------------------------
async def test_tenants_never_see_each_other_over_mcp(mem: Any) -> None:
    server_a = build_mcp_server(mem.aio, tenant=fixed_tenant("tenant-a"))
    server_b = build_mcp_server(mem.aio, tenant=fixed_tenant("tenant-b"))
    async with Client(server_a) as a, Client(server_b) as b:
        _, a_lessons = await _learn(a, "Project Zephyr deploys with Helm", task_type="deploy")
        b_tid, b_lessons = await _learn(
            b, "Project Zephyr deploys with Terraform", task_type="deploy"
        )
        b_ids = {b_tid, *(x["id"] for x in b_lessons)}
        for args in (
            {"query": "how does Zephyr deploy?"},
            {"query": "Terraform Zephyr", "top_k": 100, "include_episodes": True},
            {"query": "", "task_type": "deploy"},
        ):
            seen = await call(a, "recall_similar", args)
            text = json.dumps(seen.ok()) + seen.text
            assert "Helm" in text and a_lessons[0]["id"] in text
            assert "Terraform" not in text.replace(args["query"], "")
            assert not any(i in text for i in b_ids)
            assert len(seen.data["hits"]) == 1
        # B's ids behave exactly like ids that exist nowhere, and change nothing
        unknown = str(uuid.uuid4())
        for name, args in [
            ("forget_experience", {"experience_id": "{X}"}),
            ("adjust_confidence", {"experience_id": "{X}", "delta": -1}),
            ("summarize_trajectory", {"trajectory_id": "{X}"}),
        ]:
            target = b_tid if name == "summarize_trajectory" else b_lessons[0]["id"]
            theirs = await call(
                a,
                name,
                {k: v.replace("X", target) if isinstance(v, str) else v for k, v in args.items()},
            )
            nowhere = await call(
                a,
                name,
                {k: v.replace("X", unknown) if isinstance(v, str) else v for k, v in args.items()},
            )
            assert theirs.error is not None and theirs.error["type"] == "not_found"
            assert theirs.text.replace(target, "<id>") == nowhere.text.replace(unknown, "<id>")
        assert (await call(a, "record_outcome", {"trajectory_id": b_tid, "success": False})).ok()[
            "updated"
        ] == []
        b_lesson = mem.get_experience(b_lessons[0]["id"], tenant_id="tenant-b")
        assert (
            b_lesson.status.value == "active" and b_lesson.confidence == b_lessons[0]["confidence"]
        )
        # and B still recalls its own lesson only
        b_seen = (await call(b, "recall_similar", {"query": "how does Zephyr deploy?"})).ok()
        assert [h["id"] for h in b_seen["hits"]] == [b_lessons[0]["id"]]


async def test_forget_by_any_id_form_then_sql_and_vectors_agree(acme: Any, mem: Any) -> None:
    forms = [
        str.upper,
        lambda i: "{" + i + "}",
        lambda i: "{" + i.upper() + "}",
        lambda i: i.replace("-", ""),
    ]
    for i, form in enumerate(forms):
        _, lessons = await _learn(acme, f"Lesson number {i} about caching")
        eid = lessons[0]["id"]
        done = (await call(acme, "forget_experience", {"experience_id": form(eid)})).ok()
        assert done["experience_id"] == eid
        seen = (
            await call(
                acme, "recall_similar", {"query": f"Lesson number {i} about caching", "top_k": 100}
            )
        ).ok()
        assert eid not in [h["id"] for h in seen["hits"]]
        again = await call(acme, "forget_experience", {"experience_id": form(eid)})
        assert again.error is not None and again.error["type"] == "not_found"
    stats = mem.stats(tenant_id="acme")
    live = stats["experiences"]["total"] - stats["experiences"]["by_status"].get("deleted", 0)
    assert stats["vectors"] == live


@pytest.mark.parametrize("bad", [None, "", "   ", [], 0])
def test_an_empty_tenant_is_refused_when_the_server_is_configured(bad: Any) -> None:
    with pytest.raises(TenantRequiredError):
        fixed_tenant(bad)


async def test_a_tenant_that_turns_empty_or_unauthenticated_is_a_tool_error(mem: Any) -> None:
    before = mem.stats(tenant_id="acme")
    for tenant in [lambda ctx: "", lambda ctx: None, lambda ctx: "  "]:
        async with Client(build_mcp_server(mem.aio, tenant=tenant)) as client:
            for name, args in [
                ("recall_similar", {"query": "cache"}),
                ("store_episode", {"trajectory": openai_run("x")}),
                ("forget_experience", {"experience_id": str(uuid.uuid4())}),
            ]:
                done = await call(client, name, args)
                assert done.error is not None and done.error["type"] == "tenant_required", done.text

    def refuse(ctx: Any) -> str:
        raise AuthenticationError("missing or invalid API key")

    async with Client(build_mcp_server(mem.aio, tenant=refuse)) as client:
        done = await call(client, "recall_similar", {"query": "cache"})
        assert done.error == {
            "type": "unauthorized",
            "message": "missing or invalid API key",
            "field": None,
        }
    assert mem.stats(tenant_id="acme") == before


async def test_summarize_trajectory_answers_with_the_canonical_id(acme: Any) -> None:
    stored = (
        await call(
            acme, "store_episode", {"trajectory": openai_run("find order 7"), "review": False}
        )
    ).ok()
    tid = stored["trajectory_id"]
    for form in (tid.upper(), "{" + tid + "}", tid.replace("-", "")):
        review = (await call(acme, "summarize_trajectory", {"trajectory_id": form})).ok()
        assert review["trajectory_id"] == tid


async def test_unknown_arguments_are_refused_naming_the_argument(acme: Any, mem: Any) -> None:
    """Review finding: an argument a tool does not have (a typo, or a tenant) was ignored."""
    mem.add_experience("Unknown arguments are refused", tenant_id="acme")
    cases = [
        ("recall_similar", {"query": "arguments", "top_kk": 3}, "top_kk"),
        ("recall_similar", {"query": "arguments", "tenant_id": "other"}, "tenant_id"),
        ("store_episode", {"trajectory": openai_run("deploy"), "tenant": "other"}, "tenant"),
        ("forget_experience", {"experience_id": str(uuid.uuid4()), "everything": True}, None),
    ]
    for name, args, field in cases:
        done = await call(acme, name, args)
        assert done.is_error and done.error is not None, (name, args, done.text)
        wrong = field or "everything"
        assert done.error["type"] == "validation_error" and done.error["field"] == wrong
        assert f"'{wrong}'" in done.error["message"] and name in done.error["message"]
        if wrong.startswith("tenant"):
            assert "API key" in done.error["message"], done.error
        else:
            assert "its arguments:" in done.error["message"], done.error
    assert mem.stats(tenant_id="acme")["trajectories"] == 0
    assert (await call(acme, "recall_similar", {"query": "arguments", "top_k": 3})).ok()["hits"]
