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
    to the background loop and on to a worker thread), with the async
    method's arguments bound to its signature (defaults applied) and passed by name.

    A subclass of ``AsyncMemory`` that overrides ``method`` keeps its override: the twin then
    runs it on the background loop, like :func:`sync_twin`.
    """
    name = method.__name__
    signature = inspect.signature(method)
    via_loop = sync_twin(method)
    plain = _plain_parameters(signature)

    def twin(self: _Facade, *args: P.args, **kwargs: P.kwargs) -> T:
        aio = self.aio
        if getattr(type(aio), name) is not method:
            return via_loop(self, *args, **kwargs)
        given = _bound_fast(plain, args, kwargs) if plain is not None else None
        if given is None:  # anything unusual: the signature binds it (and says what is wrong)
            bound = signature.bind(aio, *args, **kwargs)
            bound.apply_defaults()
            given = bound.arguments
            del given[next(iter(signature.parameters))]  # self
        with warning_scope():
            out: T = getattr(aio, core)(**given)
            return out

    return cast("Callable[Concatenate[_Facade, P], T]", functools.wraps(method)(twin))


_Plain = tuple[tuple[str, ...], dict[str, Any], frozenset[str]]


def _plain_parameters(signature: inspect.Signature) -> _Plain | None:
    """``(positional names, defaults, keyword-only names)`` of a signature made only of plain
    parameters after ``self`` (no ``*args``/``**kwargs``, no positional-only), else None."""
    params = list(signature.parameters.values())[1:]
    positional: list[str] = []
    keyword_only: set[str] = set()
    defaults: dict[str, Any] = {}
    for p in params:
        if p.kind is p.POSITIONAL_OR_KEYWORD:
            positional.append(p.name)
        elif p.kind is p.KEYWORD_ONLY:
            keyword_only.add(p.name)
        else:
            return None
        if p.default is not p.empty:
            defaults[p.name] = p.default
    return tuple(positional), defaults, frozenset(keyword_only)


def _bound_fast(
    plain: _Plain, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    """The arguments by name with defaults applied, as ``Signature.bind`` gives them; None when
    the call is not a plain one (too many positional arguments, an unknown or repeated name, a
    required argument missing): the caller binds it through the signature, which raises."""
    positional, defaults, keyword_only = plain
    if len(args) > len(positional):
        return None
    given = dict(zip(positional, args, strict=False))
    for key, value in kwargs.items():
        if key in given or (key not in keyword_only and key not in positional):
            return None
        given[key] = value
    if len(given) < len(positional) + len(keyword_only):
        for key, value in defaults.items():
            given.setdefault(key, value)
        if len(given) < len(positional) + len(keyword_only):
            return None  # a required argument is missing
    return given


async def _reporting(report: Replacements, coro: Coroutine[Any, Any, T]) -> T:
    with reporting_to(report):
        return await coro
