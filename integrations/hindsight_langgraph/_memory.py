"""The memory the graph nodes use: hindsight_langchain's :class:`Engine`
(docs/integrations/langgraph.md).

One engine per node: a :class:`hindsight.Memory`, an :class:`hindsight.AsyncMemory` or a client
of a ``hindsight serve`` (:mod:`hindsight.service.remote`, docs/http.md), its background
writer (the reflect node hands the run over, and waits for its write only when ``write_wait``
says so), recall bounded by ``recall_timeout``, and the failures seen, logged on
``hindsight.langgraph`` and never raised into the graph.
"""

from __future__ import annotations

import logging
from typing import Any

from hindsight_langchain._engine import RECALL_TIMEOUT, WRITE_WAIT, Engine

__all__ = ["RECALL_TIMEOUT", "WRITE_WAIT", "Engine", "engine_for"]

log = logging.getLogger("hindsight.langgraph")


def engine_for(
    memory: Any,
    *,
    review: bool = True,
    write_wait: float = WRITE_WAIT,
    recall_timeout: float = RECALL_TIMEOUT,
) -> Engine:
    """An engine for ``memory``.

    Raises:
        UsageError: ``memory`` is none of Memory, AsyncMemory, HindsightClient or
            AsyncHindsightClient (the message lists them); a negative ``write_wait`` or
            ``recall_timeout``.
    """
    return Engine(
        memory,
        review=review,
        write_wait=write_wait,
        recall_timeout=recall_timeout,
        logger=log,
    )
