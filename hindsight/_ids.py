"""Identifier and tenant helpers shared by every entry point."""

from __future__ import annotations

import uuid
from os import urandom
from typing import Any

from hindsight._errors import TenantRequiredError, UsageError
from hindsight._text import INVALID_TEXT_REMEDY, invalid_char, refuse_invalid

__all__ = ["new_id", "normalize_id", "stable_id", "validate_namespace", "validate_tenant"]

_NAMESPACE = uuid.UUID("6f0c3a4e-3a55-4b8e-9a0e-7d2f1c0b9e11")


def new_id() -> str:
    """A new random id: a canonical lower-case UUID4 string (36 characters), from 122 bits
    of ``os.urandom`` as :func:`uuid.uuid4` takes them (RFC 9562, section 5.4), spelled
    without building a :class:`uuid.UUID` (every captured event gets one: this is on the
    agent's path)."""
    return _spell(urandom(16))


def _spell(raw: bytes) -> str:
    """``str(uuid.UUID(bytes=raw, version=4))`` for 16 bytes ``raw``, without the object."""
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}
"""The first hex digit of the fourth group with the RFC 4122 variant bits (``10``) set."""


def stable_id(*parts: str) -> str:
    """A deterministic id (UUID5 string) from ``parts``; used to make ingest idempotent."""
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


def normalize_id(value: Any, what: str = "id") -> str:
    """Return ``value`` as a canonical lower-case UUID string.

    Accepts a :class:`uuid.UUID`, or a string in any case, with or without braces, dashes or the
    ``urn:uuid:`` prefix.

    Raises:
        UsageError: ``value`` is not a UUID; the message names ``what``.
    """
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, str):
        try:
            return str(uuid.UUID(value.strip()))
        except ValueError:
            pass
    raise UsageError(f"{what} must be a UUID (string or uuid.UUID), got {value!r:.80}")


def validate_tenant(tenant_id: Any) -> str:
    """Check a tenant id and return it stripped.

    A tenant is a non-empty string of at most 200 characters, valid Unicode without NUL
    (:mod:`hindsight._text`). ``None``, ``""``, blanks, lists and other types are refused,
    never read as "all tenants" (docs/concepts.md, tenants and namespaces).

    Raises:
        TenantRequiredError: the tenant is missing, empty or not a string.
    """
    if tenant_id is None:
        raise TenantRequiredError("tenant_id is required: pass the tenant to scope this call to")
    if not isinstance(tenant_id, str):
        raise TenantRequiredError(
            f"tenant_id must be a non-empty string, got {type(tenant_id).__name__}"
        )
    value = tenant_id.strip()
    if not value:
        raise TenantRequiredError("tenant_id must be a non-empty string, got an empty one")
    if len(value) > 200:
        raise TenantRequiredError("tenant_id must be at most 200 characters")
    bad = invalid_char(value)
    if bad is not None:
        raise TenantRequiredError(
            f"tenant_id contains {bad[1]} at position {bad[0]}; {INVALID_TEXT_REMEDY}"
        )
    return value


def validate_namespace(namespace: Any) -> str:
    """Check a namespace (non-empty string, at most 200 characters, valid Unicode without NUL)
    and return it stripped.

    Raises:
        UsageError: the namespace is empty or not a string.
    """
    if not isinstance(namespace, str) or not namespace.strip():
        raise UsageError(
            f"namespace must be a non-empty string, got {namespace!r:.80}", field="namespace"
        )
    if len(namespace) > 200:
        raise UsageError("namespace must be at most 200 characters", field="namespace")
    return refuse_invalid(namespace.strip(), "namespace")
