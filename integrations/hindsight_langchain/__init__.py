"""hindsight for LangChain (docs/integrations/langchain.md).

* :class:`HindsightCallbackHandler` / :class:`AsyncHindsightCallbackHandler`: add to
  ``config={"callbacks": [...]}`` of any runnable, chain, agent or LangGraph graph; each root
  run is stored as one trajectory and reviewed after it ends.
* :class:`HindsightMiddleware`: for ``langchain.agents.create_agent``; recalls lessons into
  the tail of the system prompt, captures the run and attributes its outcome.
* :class:`HindsightRetriever` and :func:`with_experience`: recall for LCEL chains and legacy
  agents (a ``BaseRetriever``, and the block at the tail of a ``ChatPromptTemplate``).

Needs the ``langchain`` extra: ``pip install "hindsight-memory[langchain]"``.
"""

from __future__ import annotations

from typing import Any

_EXTRA = 'pip install "hindsight-memory[langchain]"'

try:
    import langchain_core  # noqa: F401
except ImportError as exc:
    raise ImportError(f"hindsight_langchain needs LangChain: {_EXTRA}") from exc

from hindsight_langchain.callback import (  # noqa: E402
    AsyncHindsightCallbackHandler,
    HindsightCallbackHandler,
)
from hindsight_langchain.retriever import HindsightRetriever, with_experience  # noqa: E402

__all__ = [
    "AsyncHindsightCallbackHandler",
    "HindsightCallbackHandler",
    "HindsightMiddleware",
    "HindsightRetriever",
    "ToolCallChecks",
    "append_to_system_prompt",
    "with_experience",
]


def __getattr__(name: str) -> Any:
    # The middleware needs the `langchain` package (agents), the handlers only langchain-core.
    if name == "ToolCallChecks":
        from hindsight_langchain._gate import ToolCallChecks

        return ToolCallChecks
    if name in ("HindsightMiddleware", "append_to_system_prompt", "HindsightState"):
        try:
            from hindsight_langchain import middleware
        except ImportError as exc:
            raise ImportError(f"HindsightMiddleware needs langchain>=1.5: {_EXTRA}") from exc
        return getattr(middleware, name)
    raise AttributeError(f"module 'hindsight_langchain' has no attribute {name!r}")
