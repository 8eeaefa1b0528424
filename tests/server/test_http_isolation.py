"""The isolation property suite (tests/isolation_suite.py) through HTTP: the same workloads,
driven through :class:`hindsight.client.HindsightClient` against uvicorn on a loopback port
(issue 9). Each tenant gets its own API key; an empty tenant is a request without a key, which
the service refuses (401, the wire form of TenantRequiredError)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hindsight import AuthenticationError, HindsightError, TenantRequiredError
from hindsight.client import HindsightClient
from hindsight.models import Event, Trajectory
from hindsight.server import KeyRing, create_app, create_key
from hindsight.testing import ScriptedReviewer
from tests.helpers import make_memory
from tests.isolation_suite import IsolationClient, Seen, run_isolation_suite, scripted_lessons
from tests.server.mcp_support import serving

HTTP_EXAMPLES = 12
"""Workloads through HTTP per backend (each step is a few HTTP calls; the fakes run 300)."""


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class HttpClient:
    """:class:`IsolationClient` over HTTP: one API key per tenant."""

    def __init__(self, url: str, keys_file: Path) -> None:
        self.url, self.keys_file = url, keys_file
        self.clients: dict[str, HindsightClient] = {}

    def to(self, tenant: Any) -> HindsightClient:
        name = tenant if isinstance(tenant, str) and tenant.strip() else ""
        if name not in self.clients:
            key = create_key(self.keys_file, name)[0] if name else None
            self.clients[name] = HindsightClient(self.url, key, timeout=60)
        return self.clients[name]

    @staticmethod
    def _call(fn: Callable[[], Seen]) -> Seen:
        try:
            return fn()
        except AuthenticationError as exc:  # no key: the wire form of "no tenant"
            return Seen(text=str(exc), error=TenantRequiredError(str(exc)))
        except HindsightError as exc:
            return Seen(text=str(exc), error=exc)

    def add(self, tenant: Any, namespace: str, content: str, task_type: str | None) -> Seen:
        def run() -> Seen:
            exp = self.to(tenant).add_experience(content, namespace=namespace, task_type=task_type)
            return Seen(text=exp.model_dump_json(), ids=[exp.id], value=exp.status.value)

        return self._call(run)

    def review(
        self, tenant: str, namespace: str, task: str, task_type: str | None, lessons: int
    ) -> Seen:
        def run() -> Seen:
            traj = Trajectory(
                tenant_id=tenant,
                namespace=namespace,
                task=task,
                task_type=task_type,
                outcome="failure",
                events=[
                    Event(event_type="user_message", content=task),
                    Event(
                        event_type="tool_result",
                        tool_name="order_lookup",
                        status="timeout",
                        content=f"{task} timed out",
                    ),
                ],
                metadata={"lessons": lessons},
            )
            receipt = self.to(tenant).store_episode(traj, review=False)
            exps = self.to(tenant).review_now(traj.id)
            text = _dump(dict(receipt)) + _dump([e.model_dump(mode="json") for e in exps])
            return Seen(text=text, ids=[e.id for e in exps], value=traj.id)

        return self._call(run)

    def recall(
        self,
        tenant: Any,
        query: str,
        *,
        namespaces: list[str],
        include_shared: bool,
        task_type: str | None,
        mode: str,
        trajectory_id: str | None,
        episodes: bool,
    ) -> Seen:
        def run() -> Seen:
            result = self.to(tenant).recall(
                query,
                namespace=namespaces,
                include_shared=include_shared,
                task_type=task_type,
                mode=mode,  # type: ignore[typeddict-item]
                trajectory_id=trajectory_id,
                similarity_floor=-1.0,
                top_k=50,
                include_episodes=episodes,
                explain=True,
            )
            text = result.model_dump_json() + result.render() + _dump(result.to_json(explain=True))
            return Seen(text=text, ids=[h.experience.id for h in [*result.hits, *result.episodes]])

        return self._call(run)

    def get(self, tenant: str, experience_id: str) -> Seen:
        def run() -> Seen:
            exp = self.to(tenant).get_experience(experience_id)
            return Seen(text=exp.model_dump_json(), ids=[exp.id], value=exp.status.value)

        return self._call(run)

    def listing(self, tenant: Any, status: str) -> Seen:
        def run() -> Seen:
            client = self.to(tenant)
            if status == "quarantined":
                exps = client.list_quarantined(limit=10000)
            else:
                exps = client.list_experiences(status=status, limit=10000)
            text = _dump([e.model_dump(mode="json") for e in exps])
            return Seen(text=text, ids=[e.id for e in exps])

        return self._call(run)

    def counts(self, tenant: str) -> Seen:
        def run() -> Seen:
            stats = self.to(tenant).stats()
            value = {
                "experiences": stats["experiences"]["total"],
                "vectors": stats["vectors"],
                "trajectories": stats["trajectories"],
            }
            return Seen(text=_dump(stats), value=value)

        return self._call(run)

    def delete(self, tenant: str, experience_id: str) -> Seen:
        return self._call(lambda: (self.to(tenant).delete_experience(experience_id), Seen())[1])

    def forget(
        self,
        tenant: Any,
        *,
        experience_id: str | None = None,
        trajectory_id: str | None = None,
        everything: bool = False,
    ) -> Seen:
        def run() -> Seen:
            n = self.to(tenant).forget(
                experience_id=experience_id, trajectory_id=trajectory_id, everything=everything
            )
            return Seen(text=str(n), value=n)

        return self._call(run)

    def record_outcome(self, tenant: str, trajectory_id: str, success: bool) -> Seen:
        def run() -> Seen:
            exps = self.to(tenant).record_outcome(trajectory_id, success)
            return Seen(
                text=_dump([e.model_dump(mode="json") for e in exps]),
                ids=[e.id for e in exps],
                value={e.id: e.status.value for e in exps},
            )

        return self._call(run)

    def adjust(self, tenant: str, experience_id: str, delta: float) -> Seen | None:
        def run() -> Seen:
            exp = self.to(tenant).adjust_confidence(experience_id, delta)
            return Seen(text=exp.model_dump_json(), ids=[exp.id])

        return self._call(run)

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def _clients(client: HttpClient) -> Iterator[tuple[IsolationClient, str]]:
    n = 0
    while True:
        n += 1
        yield client, f"h{n}·"


def test_isolation_holds_through_http(tmp_path: Path, database_url: str) -> None:
    keys_file = tmp_path / "keys.json"
    create_key(keys_file, "bootstrap")
    mem = make_memory(tmp_path / "data", database_url, reviewer=ScriptedReviewer(scripted_lessons))
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys_file), mcp=False)
        with serving(app) as url:
            client = HttpClient(url, keys_file)
            clients = _clients(client)
            try:
                run_isolation_suite(lambda: next(clients), max_examples=HTTP_EXAMPLES)
            finally:
                client.close()
    finally:
        mem.close()
