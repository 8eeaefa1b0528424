"""The support desk of the example: orders and three tools (LangChain tools).

``order_query`` is the live order service; during peak hours it times out. ``order_query_cached``
reads a cache that is a few minutes behind but always answers. ``refund`` pays back an order's
total. Every call is logged on the desk, so the example can print what happened.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["ORDERS", "PEAK_HOURS", "SupportDesk"]

PEAK_HOURS = range(11, 14)
"""Hours (local, 24 h) at which the live order service is overloaded and times out."""

ORDERS: dict[str, dict[str, Any]] = {
    "8812": {"order_id": "8812", "item": "espresso machine", "total": 249.0, "status": "delivered"},
    "9907": {"order_id": "9907", "item": "running shoes", "total": 89.5, "status": "delivered"},
    "7315": {"order_id": "7315", "item": "desk lamp", "total": 35.0, "status": "shipped"},
}


@dataclass
class SupportDesk:
    """The shop behind the tools.

    Args:
        hour: the current hour (0-23); ``order_query`` times out when it is in
            :data:`PEAK_HOURS`. A callable is read at every call.
        orders: order id -> order record.
    """

    hour: int | Callable[[], int] = 12
    orders: dict[str, dict[str, Any]] = field(
        default_factory=lambda: json.loads(json.dumps(ORDERS))
    )
    calls: list[tuple[str, dict[str, Any], str]] = field(default_factory=list)
    refunds: dict[str, float] = field(default_factory=dict)

    def peak(self) -> bool:
        """True when the live order service is overloaded."""
        hour = self.hour() if callable(self.hour) else self.hour
        return hour in PEAK_HOURS

    def _order(self, order_id: str) -> dict[str, Any]:
        order = self.orders.get(str(order_id).strip().lstrip("#"))
        if order is None:
            raise ValueError(f"order {order_id} not found")
        return order

    # -- the tools' bodies ------------------------------------------------------------------
    def order_query(self, order_id: str) -> str:
        """Look an order up in the live order service (current data)."""
        if self.peak():
            self.calls.append(("order_query", {"order_id": order_id}, "timeout"))
            raise TimeoutError(
                "order_query timed out after 5 s: the order service is overloaded at peak hours"
            )
        order = self._order(order_id)
        self.calls.append(("order_query", {"order_id": order_id}, "ok"))
        return json.dumps({**order, "source": "live"})

    def order_query_cached(self, order_id: str) -> str:
        """Look an order up in the order cache (at most 5 minutes old; always available)."""
        order = self._order(order_id)
        self.calls.append(("order_query_cached", {"order_id": order_id}, "ok"))
        return json.dumps({**order, "source": "cache"})

    def refund(self, order_id: str, amount: float) -> str:
        """Refund ``amount`` of an order; it must equal the order's total."""
        order = self._order(order_id)
        if abs(float(amount) - float(order["total"])) > 0.005:
            self.calls.append(("refund", {"order_id": order_id, "amount": amount}, "error"))
            raise ValueError(f"amount {amount} does not match the order total {order['total']}")
        self.refunds[order["order_id"]] = float(amount)
        self.calls.append(("refund", {"order_id": order_id, "amount": amount}, "ok"))
        return json.dumps({"order_id": order["order_id"], "refunded": float(amount)})

    def tools(self) -> list[BaseTool]:
        """The three tools, bound to this desk."""
        return [
            StructuredTool.from_function(self.order_query, name="order_query"),
            StructuredTool.from_function(self.order_query_cached, name="order_query_cached"),
            StructuredTool.from_function(self.refund, name="refund"),
        ]
