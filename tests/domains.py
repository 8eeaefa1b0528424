"""Synthetic domains for the condition-mining tests: runs of generic agents whose outcomes
follow a planted policy, with noise, replicas of each task, and nothing of tau-bench.

Each generator returns :class:`~hindsight.models.Trajectory` objects with tool calls and JSON
tool results; ``task_key`` groups the replicas of one task.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

from hindsight.models import (
    Event,
    EventStatus,
    EventType,
    ExpectedAction,
    Outcome,
    OutcomeEvidence,
    Trajectory,
)

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def run(
    task: str,
    calls: list[tuple[str, dict[str, Any], Any, bool]],
    *,
    outcome: Outcome = Outcome.UNKNOWN,
    task_key: str | None = None,
    expected: list[str] | None = None,
    tenant: str = "t",
    started: datetime = START,
) -> Trajectory:
    """One run: ``calls`` are ``(tool, args, result, failed)``; a result is JSON or text."""
    events = [Event(event_type=EventType.USER_MESSAGE, content=task, timestamp=started)]
    for i, (tool, args, result, failed) in enumerate(calls):
        at = started + timedelta(seconds=2 * i + 1)
        events.append(Event(event_type=EventType.TOOL_CALL, tool_name=tool, tool_args=args,
                            tool_call_id=f"c{i}", timestamp=at))  # fmt: skip
        text = result if isinstance(result, str) else json.dumps(result)
        status = EventStatus.FAILURE if failed else EventStatus.SUCCESS
        events.append(Event(event_type=EventType.TOOL_RESULT, tool_name=tool, content=text,
                            tool_call_id=f"c{i}", status=status,
                            timestamp=at + timedelta(seconds=1)))  # fmt: skip
    evidence = None
    if expected is not None:
        evidence = OutcomeEvidence(expected_actions=[ExpectedAction(tool=t) for t in expected])
    return Trajectory(tenant_id=tenant, task=task, events=events, outcome=outcome,
                      evidence=evidence, task_key=task_key, started_at=started)  # fmt: skip


def library_runs(
    seed: int = 0,
    *,
    tasks: int = 24,
    replicas: int = 3,
    noise: float = 0.05,
    outcomes: bool = True,
    expected: bool = False,
    planted: bool = True,
    standings: tuple[str, str, str] = ("good", "suspended", "probation"),
) -> list[Trajectory]:
    """A library desk: ``get_member`` then maybe ``renew_loan``. Planted policy: renewing for
    a member whose ``standing`` is ``suspended`` (``standings[1]``) fails; otherwise the
    member wanted the renewal, and ending without it fails. ``expected``: the evidence lists
    the expected action (``notify_member`` for a suspended member, else ``renew_loan``).
    ``planted=False``: outcomes are coin flips. ``standings``: how the three standings are
    written."""
    rng = random.Random(seed)
    out: list[Trajectory] = []
    for t in range(tasks):
        standing = standings[t % 3]
        member = {
            "member": {
                "id": f"member_{1000 + t}",
                "standing": standing,
                "tier": rng.choice(["basic", "plus"]),
                "fines": round(rng.uniform(0, 40), 2),
                "joined": (START - timedelta(days=rng.randint(30, 900))).date().isoformat(),
            },
            "loans": [
                {
                    "item": f"book_{rng.randint(100, 999)}",
                    "due": (START + timedelta(days=d)).date().isoformat(),
                }
                for d in rng.sample(range(-5, 20), rng.randint(1, 3))
            ],
        }
        for r in range(replicas):
            renew = rng.random() < 0.5
            calls: list[tuple[str, dict[str, Any], Any, bool]] = [
                ("get_member", {"member_id": f"member_{1000 + t}"}, member, False)
            ]
            if renew:
                calls.append(("renew_loan", {"member_id": f"member_{1000 + t}", "weeks": 2},
                              {"renewed": True}, False))  # fmt: skip
            right = renew != (standing == standings[1])
            if not planted:
                right = rng.random() < 0.5
            elif rng.random() < noise:
                right = not right
            wanted = ["notify_member"] if standing == standings[1] else ["renew_loan"]
            out.append(
                run(
                    f"Please extend my loans (member {1000 + t}), request {r}",
                    calls,
                    outcome=(Outcome.SUCCESS if right else Outcome.FAILURE)
                    if outcomes
                    else Outcome.UNKNOWN,
                    task_key=f"library-{seed}-{t}",
                    expected=wanted if expected else None,
                )
            )
    return out


def parcel_runs(seed: int = 0, *, tasks: int = 20, replicas: int = 2) -> list[Trajectory]:
    """A shipping desk without outcomes: ``quote_parcel`` then ``ship_parcel``; the carrier
    refuses a parcel heavier than 20 kg with an error (the error form)."""
    rng = random.Random(seed)
    out = []
    for t in range(tasks):
        weight = round(rng.uniform(1, 19), 1) if t % 2 else round(rng.uniform(21, 40), 1)
        service = rng.choice(["express", "ground"])
        for r in range(replicas):
            heavy = weight > 20
            result = (
                f"Error: parcel of {weight} kg exceeds the carrier limit"
                if heavy
                else {"label": f"LB{rng.randint(10000, 99999)}", "eta_days": rng.randint(1, 6)}
            )
            calls = [
                ("quote_parcel", {"weight_kg": weight}, {"price": round(weight * 1.7, 2)}, False),
                ("ship_parcel", {"weight_kg": weight, "service": service}, result, heavy),
            ]
            out.append(run(f"ship parcel {t}-{r}", calls, task_key=f"parcel-{seed}-{t}"))
    return out


def order_runs(
    seed: int = 0, *, tasks: int = 24, replicas: int = 2, planted: bool = True
) -> list[Trajectory]:
    """An order desk: ``get_order`` then maybe ``cancel_order``. Planted policy of two facts:
    cancelling fails for an order that is ``shipped`` **and** ``international`` (neither fact
    alone); a run that does not cancel goes well 80% of the time. Five other fields are noise.
    ``planted=False``: every outcome is a coin flip."""
    rng = random.Random(seed)
    out = []
    for t in range(tasks):
        status = ["shipped", "pending"][t % 2]
        region = ["international", "domestic"][(t // 2) % 2]
        order = {
            "order": {
                "id": f"order_{7000 + t}",
                "status": status,
                "region": region,
                "channel": rng.choice(["web", "app", "phone"]),
                "gift": rng.choice([True, False]),
                "tier": rng.choice(["basic", "plus", "gold"]),
                "amount": round(rng.uniform(5, 500), 2),
                "items": [{"sku": f"sku_{rng.randint(10, 99)}"}] * rng.randint(1, 4),
            }
        }
        for r in range(replicas):
            cancel = rng.random() < 0.6
            calls: list[tuple[str, dict[str, Any], Any, bool]] = [
                ("get_order", {"order_id": f"order_{7000 + t}"}, order, False)
            ]
            if cancel:
                reason = rng.choice(["late", "changed_mind"])
                args = {"order_id": f"order_{7000 + t}", "reason": reason}
                calls.append(("cancel_order", args, {"ok": True}, False))
            if not planted:
                good = rng.random() < 0.5
            elif cancel:
                good = not (status == "shipped" and region == "international")
            else:
                good = rng.random() < 0.8
            outcome = Outcome.SUCCESS if good else Outcome.FAILURE
            out.append(run(f"cancel order {t} ({r})", calls, task_key=f"o-{seed}-{t}",
                           outcome=outcome))  # fmt: skip
    return out


def chinese_runs(seed: int = 0, *, tasks: int = 18, replicas: int = 2) -> list[Trajectory]:
    """Orders in Chinese, labelled by expected actions only (no outcome): cancelling an order
    whose 状态 is 已发货 (shipped) is never an expected action (a return is)."""
    rng = random.Random(seed)
    out = []
    for t in range(tasks):
        status = ["已发货", "待发货", "已签收"][t % 3]
        order = {"订单": {"编号": f"DD{9000 + t}", "状态": status, "金额": rng.randint(20, 500)}}
        for r in range(replicas):
            calls: list[tuple[str, dict[str, Any], Any, bool]] = [
                ("get_order", {"order_id": f"DD{9000 + t}"}, order, False)
            ]
            if rng.random() < 0.6:
                calls.append(("cancel_order", {"order_id": f"DD{9000 + t}"}, {"ok": True}, False))
            wanted = ["request_return"] if status == "已发货" else ["cancel_order"]
            out.append(run(f"请取消我的订单 DD{9000 + t}（第{r}次）", calls,
                           task_key=f"zh-{seed}-{t}", expected=wanted))  # fmt: skip
    return out
