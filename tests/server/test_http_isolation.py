"""The isolation property suite (tests/isolation_suite.py) through HTTP: the same workloads, driven
through :class:`hindsight.client.HindsightClient` against uvicorn on a loopback port. Each tenant
gets its own API key; an empty tenant is a request without a key, which the service refuses (401,
the wire form of TenantRequiredError)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hindsight import AuthenticationError, TenantRequiredError
from hindsight.client import HindsightClient
from hindsight.server import KeyRing, create_app, create_key
from hindsight.testing import ScriptedReviewer
from tests.helpers import make_memory
from tests.isolation_suite import (
    IsolationClient,
    PythonClient,
    run_isolation_suite,
    scripted_lessons,
)
from tests.server.mcp_support import serving

HTTP_EXAMPLES = 30
"""Workloads through HTTP per backend (each step is a few HTTP calls; the fakes run 300)."""


class TenantRouter:
    """Looks like :class:`hindsight.Memory` to the suite's :class:`PythonClient`: each call's
    ``tenant_id`` (or a trajectory's tenant) picks that tenant's API key, and the call goes
    through HTTP. No key is sent for an empty tenant; the 401 that follows is raised as
    :class:`TenantRequiredError`, its Python form."""

    def __init__(self, url: str, keys_file: Path) -> None:
        self.url, self.keys_file = url, keys_file
        self.clients: dict[str, HindsightClient] = {}

    def to(self, tenant: Any) -> HindsightClient:
        name = tenant if isinstance(tenant, str) and tenant.strip() else ""
        if name not in self.clients:
            key = create_key(self.keys_file, name)[0] if name else None
            self.clients[name] = HindsightClient(self.url, key, timeout=60)
        return self.clients[name]

    def __getattr__(self, method: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            is_run = method == "store_episode"
            tenant = args[0].tenant_id if is_run else kwargs.pop("tenant_id")
            try:
                return getattr(self.to(tenant), method)(*args, **kwargs)
            except AuthenticationError as exc:
                raise TenantRequiredError(str(exc)) from None

        return call

    def close(self) -> None:
        for client in self.clients.values():
            client.close()


def _clients(router: TenantRouter) -> Iterator[tuple[IsolationClient, str]]:
    n = 0
    while True:
        n += 1
        yield PythonClient(router), f"h{n}·"  # type: ignore[arg-type]


def test_isolation_holds_through_http(tmp_path: Path, database_url: str) -> None:
    keys_file = tmp_path / "keys.json"
    create_key(keys_file, "bootstrap")
    mem = make_memory(tmp_path / "data", database_url, reviewer=ScriptedReviewer(scripted_lessons))
    try:
        app = create_app(mem.aio, keyring=KeyRing.from_file(keys_file), mcp=False)
        with serving(app) as url:
            router = TenantRouter(url, keys_file)
            clients = _clients(router)
            try:
                run_isolation_suite(lambda: next(clients), max_examples=HTTP_EXAMPLES)
            finally:
                router.close()
    finally:
        mem.close()
