"""Sync twins of async engine methods, with the async method's exact signature and docs.

``Memory.recall = sync_twin(AsyncMemory.recall)`` gives ``Memory`` a method that takes the same
arguments (checked by mypy through ``ParamSpec``, shown by ``help()`` and ``inspect.signature``
through ``__wrapped__``), returns the awaited result and raises the same exceptions. The call
is dispatched by name on ``self.aio``, so a subclass of ``AsyncMemory`` keeps its overrides.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from hindsight._text import Replacements, reporting_to, warning_scope

__all__ = ["sync_twin"]

P = ParamSpec("P")
T = TypeVar("T")


class _Facade(Protocol):
    aio: Any

    def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...


def sync_twin(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[_Facade, P], T]:
    """The blocking twin of the async method ``method`` (same arguments, result, errors)."""
    name = method.__name__

    def twin(self: _Facade, *args: P.args, **kwargs: P.kwargs) -> T:
        # Invalid text replaced on the loop thread is reported here, once, as a warning
        # attributed to the caller's line (hindsight._text).
        with warning_scope() as report:
            coro: Coroutine[Any, Any, T] = getattr(self.aio, name)(*args, **kwargs)
            return self._run(_reporting(report, coro))

    return cast("Callable[Concatenate[_Facade, P], T]", functools.wraps(method)(twin))


async def _reporting(report: Replacements, coro: Coroutine[Any, Any, T]) -> T:
    with reporting_to(report):
        return await coro
