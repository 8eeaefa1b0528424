"""schemathesis against the OpenAPI schema of a live ``hindsight serve`` (real HTTP, over SQLite
with Qdrant Edge and over PostgreSQL with pgvector): generated requests, valid and invalid, with
a valid key, never get a 5xx, every status answered is one the schema lists for the route, and
every error has the one JSON shape. Bounded examples per operation."""

from __future__ import annotations

from typing import Any

import schemathesis

# Imported (and so rewritten by pytest's assertion hook, schemathesis being a pytest plugin) at
# collection, not when the test first loads a schema: CPython 3.11.7 fails to parse this deeply
# nested module ("AST constructor recursion depth mismatch") once another test of the same
# worker process has hit a RecursionError during a parse (seen under xdist).
import schemathesis.specs.openapi.schemas
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error, status_code_conformance

from tests.server.conftest import Served

MAX_EXAMPLES = 25
"""Examples per operation (about 20 operations): keeps the run under a minute on 2 cores."""


def errors_have_one_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """Every 4xx/5xx body is ``{"error": {"type", "message", "field"}}`` with a one-line
    message."""
    if response.status_code < 400:
        return None
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"type", "message", "field"}, body
    assert "\n" not in body["error"]["message"]
    return None


def test_no_input_gets_a_server_error(served: Served) -> None:
    schema = schemathesis.openapi.from_url(served.url + "/openapi.json")
    headers = {"Authorization": f"Bearer {served.key('schemathesis')}"}
    tested, failures = [], []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def run(case: Any) -> None:
            case.call_and_validate(
                headers=headers,
                checks=[not_a_server_error, status_code_conformance, errors_have_one_shape],
                timeout=60,
            )

        try:
            run()
        except Exception as exc:  # collect every operation's failure, then report them all
            failures.append(f"{operation.label}: {str(exc)[:1500]}")
        tested.append(operation.label)
    assert len(tested) >= 20, tested
    assert not failures, "\n\n".join(failures)
