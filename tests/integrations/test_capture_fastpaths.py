"""The cheaper capture paths (docs/benchmarks.md#capture-overhead) keep what they stored before.

* ``jsonable`` copies plain JSON directly and sends only the rest through the JSON round trip:
  both give the same value for anything (hypothesis), and the copy is never the caller's object;
* ``detach(trajectory_id=...)`` builds the events with the trajectory id the caller wants, so
  the LangGraph reflect node no longer copies every event to change it;
* the reflect node stores on the calling thread: the trajectory is readable when ``invoke``
  returns and its review is queued.
"""

from __future__ import annotations

import json
import math
import uuid
from datetime import date
from typing import Any

from tests.integrations import langchain_support  # noqa: F401  (skips without LangChain)

# isort: split

from hindsight_langchain import HindsightCallbackHandler
from hindsight_langchain._convert import jsonable
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.runnables import RunnableLambda

from tests.integrations.langchain_support import (
    TENANT,
    closing,  # noqa: F401  (autouse fixture)
    memory,
)


def _round_trip(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str, ensure_ascii=False))
    except (TypeError, ValueError):
        return str(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
    | st.dates()
    | st.uuids()
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=4), inner, max_size=4)
        | st.dictionaries(st.integers(), inner, max_size=3)
    ),
    max_leaves=20,
)


@given(_values)
def test_jsonable_gives_what_the_json_round_trip_gives(value: Any) -> None:
    assert _same(jsonable(value), _round_trip(value))


def test_jsonable_copies_plain_values_and_stringifies_the_rest() -> None:
    args = {"key": "k0", "nested": {"ids": [1, 2]}}
    copied = jsonable(args)
    assert copied == args
    assert copied is not args and copied["nested"] is not args["nested"]
    assert jsonable({"when": date(2024, 5, 1), 3: (1, 2)}) == {"when": "2024-05-01", "3": [1, 2]}
    deep: Any = []
    for _ in range(200):  # deeper than the direct copy goes: the round trip takes it
        deep = [deep]
    assert jsonable(deep) == _round_trip(deep)


def test_detach_gives_the_events_the_requested_trajectory_id() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    root = uuid.uuid4()
    wanted = str(uuid.uuid4())
    handler.on_chain_start({"name": "graph"}, {"input": "find order 7"}, run_id=root)
    child = uuid.uuid4()
    handler.on_tool_start(
        {"name": "get_order"}, "7", run_id=child, parent_run_id=root, inputs={"id": 7}
    )
    handler.on_tool_end("order 7: shipped", run_id=child, parent_run_id=root)
    traj = handler.detach(root, trajectory_id=wanted)
    assert traj is not None and traj.id == wanted
    assert traj.events and all(e.trajectory_id == wanted for e in traj.events)
    assert [e.event_type.value for e in traj.events] == ["user_message", "tool_call", "tool_result"]
    assert traj.events[1].tool_args == {"id": 7}
    assert handler.detach(root) is None  # taken once


def test_detach_without_an_id_keeps_the_root_run_id() -> None:
    mem = memory()
    handler = HindsightCallbackHandler(mem, tenant_id=TENANT)
    chain = RunnableLambda(lambda text: text.upper(), name="upper")
    root = uuid.uuid4()
    handler.on_chain_start({"name": "outer"}, {"input": "hello"}, run_id=root)
    chain.invoke("hello", {"callbacks": [handler], "run_id": uuid.uuid4()})
    traj = handler.detach(root)
    assert traj is not None and traj.id == str(root)
    assert all(e.trajectory_id == str(root) for e in traj.events)
