"""Sync twins of async engine methods, with the async method's exact signature and docs.

``Memory.recall = sync_twin(AsyncMemory.recall)`` gives ``Memory`` a method that takes the same
arguments (checked by mypy through ``ParamSpec``, shown by ``help()`` and ``inspect.signature``
through ``__wrapped__``), returns the awaited result and raises the same exceptions. The call
is dispatched by name on ``self.aio``, so a subclass of ``AsyncMemory`` keeps its overrides.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

from hindsight._text import Replacements, reporting_to, warning_scope

__all__ = ["direct_twin", "sync_twin"]

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


def direct_twin(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, T]], core: str
) -> Callable[Concatenate[_Facade, P], T]:
    """Like :func:`sync_twin`, for an async method that only runs the blocking method named
    ``core`` in a worker thread: the twin calls ``core`` on the calling thread instead (no hop
    to the background loop and on to a worker thread, issue 20 item 3), with the async
    method's arguments bound to its signature (defaults applied) and passed by name.

    A subclass of ``AsyncMemory`` that overrides ``method`` keeps its override: the twin then
    runs it on the background loop, like :func:`sync_twin`.
    """
    name = method.__name__
    signature = inspect.signature(method)
    via_loop = sync_twin(method)

    def twin(self: _Facade, *args: P.args, **kwargs: P.kwargs) -> T:
        aio = self.aio
        if getattr(type(aio), name) is not method:
            return via_loop(self, *args, **kwargs)
        bound = signature.bind(aio, *args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        del given[next(iter(signature.parameters))]  # self
        with warning_scope():
            out: T = getattr(aio, core)(**given)
            return out

    return cast("Callable[Concatenate[_Facade, P], T]", functools.wraps(method)(twin))


async def _reporting(report: Replacements, coro: Coroutine[Any, Any, T]) -> T:
    with reporting_to(report):
        return await coro
