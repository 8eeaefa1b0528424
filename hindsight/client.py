"""Talk to a hindsight service over HTTP (docs/http.md): the public door to
:mod:`hindsight.service.client`.

``from hindsight.client import HindsightClient`` is the documented import path (docs/http.md,
the integration guides); the implementation lives with the rest of the service.
"""

from hindsight.service.client import AsyncHindsightClient, HindsightClient

__all__ = ["AsyncHindsightClient", "HindsightClient"]
