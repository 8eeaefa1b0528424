"""Error messages a newcomer hits first say what is wrong in one line, naming the field, with
no library internals (pydantic type tags, help URLs)."""

from __future__ import annotations

import pytest

from tests.server.conftest import Served
from tests.server.test_http_api import add, error_of


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ('{"trajectory": "{\\"task\\": \\"x\\"}"}', "trajectory", "must be a JSON object"),
        ('{"trajectory": 42}', "trajectory", "must be a JSON object, got int"),
        ('"just a string"', None, "Content-Type: application/json"),
        ("[1, 2]", None, "must be a JSON object"),
    ],
)
def test_a_value_that_is_not_an_object_is_named_plainly(
    served_sqlite: Served, body: str, field: str | None, says: str
) -> None:
    with served_sqlite.http("errors") as http:
        r = http.post("/v1/episodes", content=body, headers={"content-type": "application/json"})
    error = error_of(r, 422, "validation_error")
    assert error["field"] == field and says in error["message"], error
    assert "dict[" not in error["message"] and "dict[" not in str(error["field"])


def test_a_body_sent_without_a_json_content_type_says_so(served_sqlite: Served) -> None:
    with served_sqlite.http("errors") as http:
        r = http.post(
            "/v1/recall", content=b'{"query": "x"}', headers={"content-type": "text/plain"}
        )
    error = error_of(r, 422, "validation_error")
    assert "application/json" in error["message"], error


@pytest.mark.parametrize("content", ["   ", ""])
def test_an_invalid_edit_names_the_field_without_pydantic_urls(
    served_sqlite: Served, content: str
) -> None:
    with served_sqlite.http("errors") as http:
        exp = add(http, "When order_query times out, retry once")
        r = http.patch(f"/v1/experiences/{exp['id']}", json={"content": content})
    assert r.status_code in (400, 422), r.text
    message = r.json()["error"]["message"]
    assert "content" in message and "pydantic" not in message and "http" not in message, message
