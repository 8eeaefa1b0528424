"""LlamaIndex integration of hindsight: capture agent runs, recall through a memory block.

* :func:`instrument` / :class:`HindsightCapture` - every ``FunctionAgent`` / ``ReActAgent`` /
  ``AgentWorkflow`` run becomes one stored trajectory (instrumentation handlers on the root
  dispatcher), reviewed in the background.
* :class:`HindsightMemoryBlock` - a ``BaseMemoryBlock`` for ``llama_index.core.memory.Memory``
  that recalls relevant experiences into the system prompt of ``agent.run(msg, memory=...)``.
* :func:`run_with_memory` - recall + run + capture + review + outcome in one call.
* :func:`run_options` - per-run tenant / task_type / trajectory id for multi-tenant apps.

Needs llama-index-core 0.14.x: ``pip install "hindsight-memory[llamaindex]"``.
"""

from ._compat import INSTALL_HINT, require_llama_index

require_llama_index()

from ._runs import RunInfo, run_options  # noqa: E402
from .capture import CaptureStats, HindsightCapture, current_run, instrument  # noqa: E402
from .checks import checked_tools  # noqa: E402
from .memory_block import HindsightMemoryBlock  # noqa: E402
from .runner import MemoryRun, run_with_memory  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "CaptureStats",
    "HindsightCapture",
    "HindsightMemoryBlock",
    "MemoryRun",
    "RunInfo",
    "checked_tools",
    "current_run",
    "instrument",
    "run_options",
    "run_with_memory",
]
