"""Heavy request work off the event loop, a bounded amount at a time
(docs/http.md#store-a-run-post-v1episodes).

One ~1 MB run (30k messages) posted to ``/v1/episodes`` or MCP ``store_episode`` used to be
parsed and converted on the event loop: every tenant's requests waited 1-5 s behind it. Now
the JSON parsing, the conversion into a trajectory and the storing run in worker threads
(:func:`offload`), at most :data:`HEAVY_CONCURRENCY` at a time per process; further large
bodies wait their turn without using the loop.

What that bounds: while a large body is converted, the event loop thread still runs whenever
it needs to, because CPython makes a running thread hand over the interpreter after its switch
interval (``sys.getswitchinterval()``, 5 ms). A small request of another tenant is therefore
delayed by at most a few switch intervals each time it needs the interpreter (tens of
milliseconds in all, not the seconds the whole conversion takes). docs/deploy.md states the
bound; ``tests/server/test_http_scale.py`` checks that small requests are answered while a
large body is being converted.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["HEAVY_CONCURRENCY", "offload"]

T = TypeVar("T")

HEAVY_CONCURRENCY = 2
"""Large bodies converted at once per process (the machines we target have 2+ cores; more
would only make each one slower, and the event loop's share smaller)."""

_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


def _semaphore() -> asyncio.Semaphore:
    loop = asyncio.get_running_loop()
    sem = _SEMAPHORES.get(loop)
    if sem is None:
        sem = _SEMAPHORES[loop] = asyncio.Semaphore(HEAVY_CONCURRENCY)
    return sem


async def offload(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in a worker thread, at most :data:`HEAVY_CONCURRENCY` at once
    on this event loop; exceptions propagate unchanged."""
    async with _semaphore():
        return await asyncio.to_thread(fn, *args, **kwargs)
