"""The two instrumentation handlers: thin pydantic shells that forward to the capture.

LlamaIndex's dispatcher swallows handler exceptions silently; the capture's ``_guard`` logs and
counts them first (see :class:`~hindsight_llamaindex.HindsightCapture`).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span import SimpleSpan
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import PrivateAttr

if TYPE_CHECKING:
    from .capture import HindsightCapture

__all__ = ["EventHandler", "SpanHandler"]


class EventHandler(BaseEventHandler):
    _capture: HindsightCapture = PrivateAttr()

    def __init__(self, capture: HindsightCapture) -> None:
        super().__init__()
        self._capture = capture

    @classmethod
    def class_name(cls) -> str:
        return "HindsightEventHandler"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self._capture._guard(self._capture._on_event, event)


class SpanHandler(BaseSpanHandler[SimpleSpan]):
    """Forwards span enter/exit/drop; keeps no spans of its own (``open_spans`` stays empty)."""

    _capture: HindsightCapture = PrivateAttr()

    def __init__(self, capture: HindsightCapture) -> None:
        super().__init__()
        self._capture = capture

    @classmethod
    def class_name(cls) -> str:
        return "HindsightSpanHandler"

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._capture._guard(self._capture._on_span_enter, id_, bound_args, instance, parent_id)

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self._capture._guard(self._capture._on_span_end, id_, result, None)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        self._capture._guard(
            self._capture._on_span_end, id_, None, err or RuntimeError("span dropped")
        )

    def new_span(self, *args: Any, **kwargs: Any) -> SimpleSpan | None:
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> SimpleSpan | None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> SimpleSpan | None:
        return None
