"""Module attributes loaded at first use (PEP 562), for packages whose ``__init__`` exports
names of heavier submodules (docs/architecture.md#cold-start)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str, where: Mapping[str, str], eager: Mapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name of ``where`` (``{name: module}``)
    is imported from its module on first use; ``dir()`` lists ``eager`` (the package's
    globals) and every lazy name.

    The returned ``__getattr__`` raises ``AttributeError`` (``module 'x' has no attribute
    'y'``) for any other name, as a module does.
    """

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted({*eager, *where})

    return __getattr__, __dir__
