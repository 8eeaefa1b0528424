"""hindsight for LangGraph (docs/integrations/langgraph.md): recall and reflect nodes, and
one-call wiring.

* :func:`create_recall_node`: recalls with the latest user message and puts the block at the
  **tail** of the system message; starts the run's trajectory and captures the rest of the graph
  run automatically (hindsight's LangChain handler is attached to the run).
* :func:`create_reflect_node`: stores the run's trajectory, queues its review in the background
  and attributes the run's outcome to what it recalled.
* :func:`add_hindsight`: inserts both into an existing ``StateGraph``.
* :class:`HindsightState`: ``MessagesState`` plus ``recalled_experiences`` and
  ``trajectory_id``, for new graphs.

Needs the ``langgraph`` extra: ``pip install "hindsight-memory[langgraph]"``.
"""

from __future__ import annotations

EXTRA = 'pip install "hindsight-memory[langgraph]"'
"""The install command that brings this package's dependencies."""

try:
    import langchain_core  # noqa: F401
    import langgraph.graph  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised in a venv without the extra
    raise ImportError(
        f"hindsight_langgraph needs LangGraph (missing: {exc.name}): {EXTRA}"
    ) from exc

from hindsight_langgraph._recall import RECALL_NODE, create_recall_node  # noqa: E402
from hindsight_langgraph._reflect import REFLECT_NODE, create_reflect_node  # noqa: E402
from hindsight_langgraph._state import RECALLED_KEY, TRAJECTORY_KEY, HindsightState  # noqa: E402
from hindsight_langgraph._wiring import add_hindsight  # noqa: E402

__all__ = [
    "EXTRA",
    "RECALLED_KEY",
    "RECALL_NODE",
    "REFLECT_NODE",
    "TRAJECTORY_KEY",
    "HindsightState",
    "add_hindsight",
    "create_recall_node",
    "create_reflect_node",
]
