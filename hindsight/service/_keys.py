"""API keys: each key belongs to one tenant; keys are stored as SHA-256 hashes only
(docs/http.md#api-keys-and-tenants).

Where keys come from (:meth:`KeyRing.from_env`, used by ``hindsight serve``):

1. ``HINDSIGHT_API_KEYS="tenant:key,tenant2:key2"`` (inline, for containers and tests);
2. a keys file: ``--keys-file`` of ``hindsight serve``, else ``HINDSIGHT_API_KEYS_FILE``, else
   ``<data_dir>/api-keys.json`` (written by ``hindsight keys create``; followed even while it
   does not exist yet, so the first ``keys create`` works on a server started with inline
   keys only).

Both sources are merged; a key listed in both for two different tenants is refused. The keys
file is re-read when it changes, so ``hindsight keys create`` / ``revoke`` take effect on a
running server without a restart. A keys file that became unreadable or invalid fails closed
(every key refused, the error logged) until it is fixed.

This module needs no web framework: the MCP server (:mod:`hindsight.service.mcp`) and the CLI
use it too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hindsight._errors import NotFoundError, UsageError
from hindsight._ids import validate_tenant

__all__ = [
    "KEYS_FILE_NAME",
    "KeyRecord",
    "KeyRing",
    "create_key",
    "key_from_headers",
    "read_keys_file",
    "revoke_keys",
]

log = logging.getLogger("hindsight.server")

KEYS_FILE_NAME = "api-keys.json"
"""Default keys file name inside the data dir."""
KEY_PREFIX = "hs_"
ENV_KEYS = "HINDSIGHT_API_KEYS"
ENV_KEYS_FILE = "HINDSIGHT_API_KEYS_FILE"


def _sha256(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def key_from_headers(headers: Mapping[str, str]) -> str | None:
    """The API key of a request: ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``.

    Header names are matched case-insensitively (a plain dict works as well as Starlette's
    ``Headers``). Returns ``None`` when neither header carries a non-empty key.
    """
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    auth = lowered.get("authorization", "").strip()
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    key = lowered.get("x-api-key", "").strip()
    return key or None


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """One key of a keys file: ``id`` (the first 12 hex digits of its hash, shown by
    ``hindsight keys list``), ``tenant``, ``sha256`` (hex digest of the key), ``created_at``
    (ISO 8601 UTC) and an optional ``label``."""

    id: str
    tenant: str
    sha256: str
    created_at: str
    label: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tenant": self.tenant,
            "sha256": self.sha256,
            "created_at": self.created_at,
            "label": self.label,
        }


def read_keys_file(path: Path) -> list[KeyRecord]:
    """The records of a keys file (``{"version": 1, "keys": [...]}``); ``[]`` when it does
    not exist.

    Raises:
        UsageError: the file is not valid JSON or a record is malformed (names the file).
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        records = [
            KeyRecord(
                id=str(r["id"]),
                tenant=validate_tenant(r["tenant"]),
                sha256=str(r["sha256"]).lower(),
                created_at=str(r.get("created_at", "")),
                label=r.get("label"),
            )
            for r in doc["keys"]
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a valid hindsight keys file ({exc})") from None
    for r in records:
        if len(r.sha256) != 64 or any(c not in "0123456789abcdef" for c in r.sha256):
            raise UsageError(f"{path}: key {r.id} has no valid sha256 hash")
    return records


def _write_keys_file(path: Path, records: list[KeyRecord]) -> None:
    """Write atomically (temp file + rename) with mode 0600: only the owner can read hashes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    doc = {"version": 1, "keys": [r.to_json() for r in records]}
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, ensure_ascii=False, indent=2)
            fh.write("\n")
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _file_lock(path: Path) -> Any:
    from filelock import FileLock

    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(str(path) + ".lock", timeout=10)


def create_key(path: Path, tenant: str, *, label: str | None = None) -> tuple[str, KeyRecord]:
    """Create a new key for ``tenant`` in the keys file at ``path`` (created if missing).

    Returns:
        ``(raw_key, record)``: the key itself (``hs_`` + 43 URL-safe characters, 256 bits;
        shown once, never stored) and its record.

    Raises:
        TenantRequiredError: empty tenant. UsageError: the file exists but is invalid.
    """
    tenant = validate_tenant(tenant)
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    digest = _sha256(raw)
    record = KeyRecord(
        id=digest[:12],
        tenant=tenant,
        sha256=digest,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        label=label,
    )
    with _file_lock(path):
        records = read_keys_file(path)
        _write_keys_file(path, [*records, record])
    return raw, record


def revoke_keys(path: Path, *, key_id: str | None = None, tenant: str | None = None) -> int:
    """Remove one key (by its id, or the key itself) or every key of a tenant; returns how
    many were removed.

    Raises:
        UsageError: neither or both of ``key_id`` / ``tenant``.
        NotFoundError: nothing matched.
    """
    if (key_id is None) == (tenant is None):
        raise UsageError("revoke needs exactly one of a key id or --tenant")
    with _file_lock(path):
        records = read_keys_file(path)
        if key_id is not None:
            wanted = key_id.strip()
            as_hash = _sha256(wanted)
            keep = [r for r in records if r.id != wanted and r.sha256 != as_hash]
        else:
            t = validate_tenant(tenant)
            keep = [r for r in records if r.tenant != t]
        removed = len(records) - len(keep)
        if not removed:
            what = f"key {key_id!r}" if key_id is not None else f"keys of tenant {tenant!r}"
            raise NotFoundError(f"no {what} in {path}")
        _write_keys_file(path, keep)
    return removed


def _parse_env_keys(value: str) -> dict[str, str]:
    """``"tenant:key,tenant2:key2"`` -> ``{sha256(key): tenant}``."""
    out: dict[str, str] = {}
    for i, item in enumerate(value.split(","), start=1):
        item = item.strip()
        if not item:
            continue
        tenant, sep, key = item.rpartition(":")
        if not sep or not tenant.strip() or not key.strip():
            raise UsageError(
                f"{ENV_KEYS} item {i} must be tenant:key (tenants with ',' need a keys file)"
            )
        digest = _sha256(key.strip())
        if out.get(digest, tenant.strip()) != tenant.strip():
            raise UsageError(f"{ENV_KEYS}: one key is given to two tenants")
        out[digest] = validate_tenant(tenant)
    return out


class KeyRing:
    """Maps API keys to tenants; knows only SHA-256 hashes of the keys.

    Build one with :meth:`from_plain`, :meth:`from_file`, :meth:`from_env` or
    :meth:`single_tenant`. Thread-safe.
    """

    def __init__(
        self,
        hashes: Mapping[str, str] | None = None,
        *,
        path: Path | None = None,
        single_tenant: str | None = None,
    ) -> None:
        self._static = dict(hashes or {})
        self._path = Path(path) if path is not None else None
        self._single = validate_tenant(single_tenant) if single_tenant is not None else None
        self._lock = threading.Lock()
        self._file_hashes: dict[str, str] = {}
        self._stamp: tuple[int, int] | None = None
        self._file_error: str | None = None
        if self._path is not None:
            self._reload(raise_errors=True)

    # -- builders ---------------------------------------------------------------------------
    @classmethod
    def from_plain(cls, mapping: Mapping[str, str]) -> KeyRing:
        """From ``{raw_key: tenant}`` (keys are hashed at once, never kept).

        Raises:
            UsageError: an empty key. TenantRequiredError: an empty tenant.
        """
        hashes: dict[str, str] = {}
        for key, tenant in mapping.items():
            if not isinstance(key, str) or not key.strip():
                raise UsageError("an API key must be a non-empty string")
            hashes[_sha256(key.strip())] = validate_tenant(tenant)
        return cls(hashes)

    @classmethod
    def from_file(cls, path: Path | str) -> KeyRing:
        """From a keys file (see :func:`create_key`); re-read whenever the file changes.

        Raises:
            UsageError: the file is invalid. A missing file is an empty key ring that fills
            up once keys are created.
        """
        return cls(path=Path(path))

    @classmethod
    def from_env(
        cls,
        *,
        keys_file: Path | str | None = None,
        data_dir: Path | str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> KeyRing:
        """The keys ``hindsight serve`` uses (precedence in the module docstring).

        Args:
            keys_file: explicit keys file (``--keys-file``); wins over ``HINDSIGHT_API_KEYS_FILE``.
            data_dir: where the default ``api-keys.json`` lives; followed even when it does not
                exist yet (a key created later works without a restart).
            environ: the environment (default ``os.environ``).

        Raises:
            UsageError: a malformed ``HINDSIGHT_API_KEYS`` or keys file, or one key given to
                two tenants.
        """
        env = os.environ if environ is None else environ
        static = _parse_env_keys(env.get(ENV_KEYS, ""))
        path: Path | None = None
        if keys_file is not None:
            path = Path(keys_file)
        elif env.get(ENV_KEYS_FILE, "").strip():
            path = Path(env[ENV_KEYS_FILE].strip())
        elif data_dir is not None:
            path = Path(data_dir) / KEYS_FILE_NAME
        ring = cls(static, path=path)
        for digest, tenant in ring._file_hashes.items():
            if static.get(digest, tenant) != tenant:
                raise UsageError(f"one key is given to two tenants ({ENV_KEYS} and {path})")
        return ring

    @classmethod
    def single_tenant(cls, tenant: str) -> KeyRing:
        """No keys at all: every request, with or without a key, is ``tenant``'s
        (``hindsight serve --insecure-single-tenant``; for a local, single-user server)."""
        return cls(single_tenant=tenant)

    # -- use ------------------------------------------------------------------------------------
    @property
    def path(self) -> Path | None:
        """The keys file this ring follows, if any."""
        return self._path

    @property
    def insecure(self) -> bool:
        """True for :meth:`single_tenant` rings (no authentication)."""
        return self._single is not None

    def __len__(self) -> int:
        self._maybe_reload()
        return len(self._static) + len(self._file_hashes)

    def is_empty(self) -> bool:
        """True when no key is configured at all (and it is not a single-tenant ring)."""
        return self._single is None and len(self) == 0

    def problem(self) -> str | None:
        """Why keys are failing closed right now (an invalid keys file), else ``None``."""
        self._maybe_reload()
        return self._file_error

    def authenticate(self, raw_key: str | None) -> str | None:
        """The tenant of ``raw_key``, or ``None`` for a missing or unknown key.

        The hash of the key is compared with every known hash with
        :func:`hmac.compare_digest` (constant time per comparison, all compared), so timing
        tells nothing about which keys exist.
        """
        if self._single is not None:
            return self._single
        if not isinstance(raw_key, str) or not raw_key.strip():
            return None
        self._maybe_reload()
        digest = _sha256(raw_key.strip())
        found: str | None = None
        with self._lock:
            for table in (self._static, self._file_hashes):
                for known, tenant in table.items():
                    if hmac.compare_digest(known, digest):
                        found = tenant
        return found

    # -- keys file ------------------------------------------------------------------------------
    def _maybe_reload(self) -> None:
        if self._path is not None:
            self._reload(raise_errors=False)

    def _reload(self, *, raise_errors: bool) -> None:
        assert self._path is not None
        try:
            st = self._path.stat()
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp == self._stamp and self._stamp is not None:
                return
            try:
                records = read_keys_file(self._path)
            except UsageError as exc:
                if raise_errors:
                    raise
                if self._file_error != str(exc):
                    log.error("hindsight: refusing the keys of %s: %s", self._path, exc)
                self._file_hashes, self._file_error, self._stamp = {}, str(exc), stamp
                return
            self._file_hashes = {r.sha256: r.tenant for r in records}
            self._file_error, self._stamp = None, stamp
