"""Request dependencies: the engine of the app and the tenant of the caller's API key.

The tenant always comes from the key (``Authorization: Bearer <key>`` or ``X-API-Key``), never
from a request body or query parameter (docs/http.md#api-keys-and-tenants).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from hindsight._errors import AuthenticationError
from hindsight.engine import AsyncMemory
from hindsight.service._keys import KeyRing, key_from_headers

__all__ = ["Memory", "Tenant", "keyring_of", "memory_of", "tenant_of"]

_bearer = HTTPBearer(auto_error=False, description="Authorization: Bearer <API key>")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The API key")

MISSING_KEY = (
    "missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>' "
    "(the key selects the tenant; create one with `hindsight keys create --tenant T`)"
)
UNKNOWN_KEY = "invalid API key: unknown or revoked (the key selects the tenant)"


def memory_of(request: Request) -> AsyncMemory:
    """The engine the app serves (opened by the lifespan)."""
    memory: AsyncMemory = request.app.state.memory
    return memory


def keyring_of(request: Request) -> KeyRing:
    ring: KeyRing = request.app.state.keyring
    return ring


def tenant_of(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    api_key: Annotated[str | None, Depends(_api_key)],
) -> str:
    """The caller's tenant.

    Raises:
        AuthenticationError: no key, or a key no tenant owns (-> 401 with WWW-Authenticate).
    """
    del bearer, api_key  # declared for the OpenAPI security schemes; read the same way as MCP
    raw = key_from_headers(request.headers)
    ring = keyring_of(request)
    tenant = ring.authenticate(raw)
    if tenant is None:
        raise AuthenticationError(MISSING_KEY if not raw else UNKNOWN_KEY)
    return tenant


Tenant = Annotated[str, Depends(tenant_of)]
Memory = Annotated[AsyncMemory, Depends(memory_of)]
