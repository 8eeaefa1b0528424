"""Fail early, with the install command, when llama-index-core is missing."""

from __future__ import annotations

import importlib.util

__all__ = ["INSTALL_HINT", "require_llama_index"]

INSTALL_HINT = 'pip install "hindsight-memory[llamaindex]"'


def require_llama_index() -> None:
    """Raise ImportError naming the extra when ``llama_index.core`` cannot be imported.

    Raises:
        ImportError: llama-index-core is not installed (the message gives ``INSTALL_HINT``).
    """
    try:
        found = importlib.util.find_spec("llama_index.core") is not None
    except ModuleNotFoundError:  # the namespace package ``llama_index`` itself is absent
        found = False
    if not found:
        raise ImportError(
            f"hindsight_llamaindex needs llama-index-core (0.14.x); install it with {INSTALL_HINT}"
        )
