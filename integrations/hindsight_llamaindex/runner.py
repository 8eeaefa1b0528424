"""The whole loop in one call: recall -> run -> capture -> store (review queued) -> outcome."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.memory import Memory as ChatMemory

from hindsight import EpisodeReceipt, Outcome, RecallResult, Trajectory, UsageError
from hindsight._ids import new_id, validate_namespace, validate_tenant
from hindsight.capture.writer import WRITE_WAIT

from ._runs import RunOptions, run_options
from ._store import as_async_memory
from .capture import HindsightCapture, installed_capture
from .memory_block import HindsightMemoryBlock

__all__ = ["MemoryRun", "run_with_memory"]

log = logging.getLogger("hindsight.llamaindex")

_SHARED: dict[int, HindsightCapture] = {}


@dataclass
class MemoryRun:
    """What :func:`run_with_memory` returns.

    Attributes:
        result: what ``await agent.run(...)`` returned (an ``AgentOutput`` for the workflow
            agents); None when the run raised (the exception is re-raised, not returned).
        trajectory_id: the id of the stored trajectory.
        trajectory: the captured trajectory (None when the run never started).
        receipt: the store receipt (``trajectory_id``, ``stored``, ``review_queued``).
        recall: the recall made for this run (None when nothing was asked, e.g. no text).
        success: the outcome given or judged (None: unknown, no confidence change).
    """

    result: Any
    trajectory_id: str
    trajectory: Trajectory | None
    receipt: EpisodeReceipt | None
    recall: RecallResult | None
    success: bool | None


def _capture_for(memory: Any, capture: HindsightCapture | None) -> HindsightCapture:
    if capture is not None:
        if capture.memory is not as_async_memory(memory):
            raise UsageError("capture writes to another memory than the one given")
        return capture.install()
    found = installed_capture(memory)
    if found is not None:
        return found
    aio = as_async_memory(memory)
    shared = _SHARED.get(id(aio))
    if shared is None or shared.memory is not aio:
        # tenant None: this capture records only the runs started here, with their options
        shared = _SHARED[id(aio)] = HindsightCapture(aio)
    return shared.install()


def _block_of(chat_memory: ChatMemory) -> HindsightMemoryBlock | None:
    return next((b for b in chat_memory.memory_blocks if isinstance(b, HindsightMemoryBlock)), None)


async def run_with_memory(
    agent: Any,
    user_msg: Any,
    *,
    memory: Any,
    tenant_id: str,
    namespace: str = "default",
    task_type: str | None = None,
    tags: Sequence[str] = (),
    chat_memory: ChatMemory | None = None,
    success: bool | Callable[[Any], bool] | None = None,
    on_event: Callable[[Any], Any] | None = None,
    top_k: int | None = None,
    token_budget: int | None = None,
    capture: HindsightCapture | None = None,
    write_wait: float = WRITE_WAIT,
    **run_kwargs: Any,
) -> MemoryRun:
    """Run a LlamaIndex agent with recall, capture, review and outcome attribution.

    1. ``chat_memory`` gets a :class:`HindsightMemoryBlock` (a fresh
       ``Memory.from_defaults(...)`` when none is given; a given one without the block gets
       one appended), so the run starts with the relevant experiences in its system prompt.
    2. ``agent.run(user_msg=..., memory=chat_memory, **run_kwargs)`` runs under a capture (an
       installed one for this memory, else a private one that records only these runs).
    3. The trajectory gets the outcome (``success``, else the default detector:
       :func:`hindsight.capture.outcome.detect_outcome`) and goes to the memory's background writer,
       which stores it, queues its review and, with a known outcome, raises or lowers the confidence
       of what was recalled (docs/concepts.md#experiences-and-confidence). The run waits at most
       ``write_wait`` seconds for that (``MemoryRun.receipt`` is ``None`` when it was not written by
       then; ``memory.flush()`` waits for it).

    Args:
        agent: a ``FunctionAgent``, ``ReActAgent``, ``AgentWorkflow`` (anything whose
            ``run(user_msg=..., memory=...)`` returns a workflow handler).
        user_msg: the user's message (``str`` or ``ChatMessage``).
        memory: a :class:`hindsight.Memory` or :class:`hindsight.AsyncMemory`, or a
            ``HindsightClient`` / ``AsyncHindsightClient`` of a ``hindsight serve``
            (docs/integrations/llamaindex.md#point-at-a-server).
        tenant_id: required (docs/concepts.md#tenants-and-namespaces).
        namespace, task_type, tags: for the trajectory and the recall.
        chat_memory: the LlamaIndex ``Memory`` of the conversation.
        success: ``True`` / ``False``, or a callable ``result -> bool`` that judges the result;
            ``None``: the default detector decides (a final answer and no tool error left
            unresolved is a success). A run that raises counts as failed.
        on_event: called with every event of ``handler.stream_events()`` (sync or async).
        top_k, token_budget: recall settings of the block created here.
        capture: the capture to use (default: see step 2).
        write_wait: seconds to wait for the write (0.05).
        **run_kwargs: passed to ``agent.run`` (e.g. ``max_iterations``, ``ctx``).

    Returns:
        :class:`MemoryRun`.

    Raises:
        TenantRequiredError, UsageError: bad arguments (before the agent runs).
        Whatever the agent raises, after the failed run was stored; the exception gets the
        note ``"hindsight trajectory_id: <id>"`` (PEP 678 ``__notes__``).
    """
    tenant = validate_tenant(tenant_id)
    ns = validate_namespace(namespace)
    if success is not None and not isinstance(success, bool) and not callable(success):
        raise UsageError("success must be True, False, None or a callable result -> bool")
    aio = as_async_memory(memory)
    cap = _capture_for(aio, capture)
    tid = new_id()
    found = _block_of(chat_memory) if chat_memory is not None else None
    block = found or HindsightMemoryBlock(
        memory=aio,
        tenant_id=tenant,
        namespace=ns,
        task_type=task_type,
        tags=list(tags),
        top_k=top_k,
        token_budget=token_budget,
    )
    if chat_memory is None:
        chat_memory = ChatMemory.from_defaults(session_id=f"hindsight-{tid}", memory_blocks=[block])
    elif found is None:
        chat_memory.memory_blocks.append(block)

    result: Any = None
    error: BaseException | None = None
    opts: RunOptions
    with run_options(
        tenant_id=tenant, namespace=ns, task_type=task_type, tags=tags, trajectory_id=tid
    ) as opts:
        opts.defer_store = True
        opts.owner = cap
        try:
            handler = agent.run(user_msg=user_msg, memory=chat_memory, **run_kwargs)
            if on_event is not None:
                async for event in handler.stream_events():
                    reply = on_event(event)
                    if inspect.isawaitable(reply):
                        await reply
            result = await handler
        except BaseException as exc:
            error = exc

    judged: bool | None
    if error is not None:
        judged = False if isinstance(error, Exception) else None
    elif callable(success):
        try:
            judged = bool(success(result))
        except Exception:
            log.warning("hindsight: the success judge raised; outcome left unknown", exc_info=True)
            judged = None
    else:
        judged = success

    traj = cap._take_deferred(tid, opts)
    receipt: EpisodeReceipt | None = None
    if traj is not None:
        if judged is not None and not traj.metadata.get("incomplete"):
            traj = traj.model_copy(
                update={"outcome": Outcome.SUCCESS if judged else Outcome.FAILURE}
            )
        elif (
            judged is None
            and error is None
            and traj.outcome
            in (
                Outcome.SUCCESS,
                Outcome.FAILURE,
            )
        ):
            judged = traj.outcome is Outcome.SUCCESS  # the default detector's verdict
        future = cap._writer.submit(traj)
        cap._track(traj.id, future)
        if write_wait > 0:
            await asyncio.wait({asyncio.wrap_future(future)}, timeout=write_wait)
        if future.done() and not future.cancelled() and future.exception() is None:
            receipt = future.result()
    if error is not None:
        if isinstance(error, Exception):
            error.add_note(f"hindsight trajectory_id: {tid}")
        raise error
    return MemoryRun(
        result=result,
        trajectory_id=tid,
        trajectory=traj,
        receipt=receipt,
        recall=block.recall_for(tid),
        success=judged,
    )
