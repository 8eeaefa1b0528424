"""Where the tenant and namespace of a graph run come from."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from hindsight import TenantRequiredError
from hindsight._ids import validate_namespace, validate_tenant

__all__ = ["Scope", "context_value", "resolve_scope"]

_MISSING_TENANT = (
    "hindsight needs a tenant for this graph run: pass tenant_id= to the node (or to "
    "add_hindsight), put 'tenant_id' in config['configurable'], or give the graph a runtime "
    "context with a tenant_id field"
)


def context_value(context: Any, key: str) -> Any:
    """``key`` of a LangGraph runtime context: a mapping key or an attribute; else ``None``."""
    if context is None:
        return None
    if isinstance(context, Mapping):
        return context.get(key)
    return getattr(context, key, None)


def _runtime_context(config: RunnableConfig | None) -> Any:
    """The runtime context of the current graph run, or ``None`` outside a graph."""
    try:
        from langgraph.runtime import get_runtime

        runtime = get_runtime()
    except (RuntimeError, KeyError, ImportError):
        return None
    return getattr(runtime, "context", None)


class Scope:
    """The resolved ``tenant_id`` and ``namespace`` of one run."""

    __slots__ = ("namespace", "tenant_id")

    def __init__(self, tenant_id: str, namespace: str) -> None:
        self.tenant_id = tenant_id
        self.namespace = namespace

    def __repr__(self) -> str:
        return f"Scope(tenant_id={self.tenant_id!r}, namespace={self.namespace!r})"


def resolve_scope(
    config: RunnableConfig | None, *, tenant_id: str | None, namespace: str | None
) -> Scope:
    """The run's tenant and namespace, first found in this order.

    1. the node's own arguments (``tenant_id=`` / ``namespace=``: fixed for the graph);
    2. the LangGraph runtime context (``graph.invoke(..., context=Ctx(tenant_id=...))``), a
       mapping key or an attribute;
    3. ``config["configurable"]["tenant_id"]`` / ``["namespace"]``.

    The namespace defaults to ``"default"``.

    Raises:
        TenantRequiredError: no source names a tenant, or the tenant is empty
            (docs/concepts.md#tenants-and-namespaces).
        UsageError: the namespace is invalid.
    """
    configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
    context = _runtime_context(config)
    tenant = tenant_id
    if tenant is None:
        tenant = context_value(context, "tenant_id")
    if tenant is None:
        tenant = configurable.get("tenant_id")
    if tenant is None:
        raise TenantRequiredError(_MISSING_TENANT)
    ns = namespace
    if ns is None:
        ns = context_value(context, "namespace")
    if ns is None:
        ns = configurable.get("namespace")
    return Scope(validate_tenant(tenant), validate_namespace(ns or "default"))
