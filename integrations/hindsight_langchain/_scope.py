"""Who a run belongs to: tenant, namespace, task_type and tags
(docs/concepts.md#tenants-and-namespaces).

They come from the handler's or middleware's arguments, overridden per run by the run's
``config["metadata"]`` (LangChain passes it to every callback; LangGraph adds ``thread_id``
there but not other ``configurable`` keys such as ``user_id``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from hindsight._errors import UsageError
from hindsight._ids import validate_namespace, validate_tenant

__all__ = ["CONTEXT_KEYS", "Scope"]

CONTEXT_KEYS = ("thread_id", "user_id", "session_id", "assistant_id")
"""Metadata keys copied into the stored trajectory's metadata when present."""


def _lookup(metadata: Mapping[str, Any], key: str) -> Any:
    value = metadata.get(f"hindsight_{key}")
    return metadata.get(key) if value is None else value


@dataclass(frozen=True, slots=True)
class Scope:
    """Defaults for the runs a handler or middleware captures.

    Per-run ``config["metadata"]`` keys override them: ``hindsight_tenant_id`` (or
    ``tenant_id``), ``hindsight_namespace`` (or ``namespace``), ``hindsight_task_type`` (or
    ``task_type``) and ``hindsight_tags`` (a list of strings, added to the defaults).

    Raises (at construction):
        TenantRequiredError: ``tenant_id`` is given but empty or not a string.
        UsageError: invalid namespace, task_type or tags.
    """

    tenant_id: str | None = None
    namespace: str = "default"
    task_type: str | None = None
    tags: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        tenant_id: str | None,
        namespace: str,
        task_type: str | None,
        tags: Sequence[str],
    ) -> Scope:
        """A validated scope (see the class docstring for the errors)."""
        tenant = validate_tenant(tenant_id) if tenant_id is not None else None
        if task_type is not None and (not isinstance(task_type, str) or not task_type.strip()):
            raise UsageError(
                f"task_type must be a non-empty string or None, got {task_type!r:.60}",
                field="task_type",
            )
        if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
            raise UsageError(f"tags must be a list of strings, got {tags!r:.60}", field="tags")
        return cls(tenant, validate_namespace(namespace), task_type, tuple(tags))

    def resolve(self, metadata: Mapping[str, Any] | None) -> Scope:
        """This scope with the run's metadata applied (values are validated when the
        trajectory is stored or recall is called, so a bad value fails that step only)."""
        if not metadata:
            return self
        tenant = _lookup(metadata, "tenant_id")
        namespace = _lookup(metadata, "namespace")
        task_type = _lookup(metadata, "task_type")
        extra = metadata.get("hindsight_tags")
        tags = self.tags
        if isinstance(extra, list | tuple):
            tags = tuple(dict.fromkeys([*tags, *(str(t) for t in extra)]))
        return replace(
            self,
            tenant_id=tenant if tenant is not None else self.tenant_id,
            namespace=namespace if isinstance(namespace, str) else self.namespace,
            task_type=task_type if isinstance(task_type, str) else self.task_type,
            tags=tags,
        )

    @staticmethod
    def context(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        """The :data:`CONTEXT_KEYS` present in ``metadata`` (kept on the trajectory)."""
        if not metadata:
            return {}
        return {k: str(metadata[k]) for k in CONTEXT_KEYS if metadata.get(k) is not None}
