"""Ids: :func:`hindsight._ids.new_id` spells a random UUID4 without building a ``uuid.UUID``
(it runs for every captured event); it must be exactly what ``str(uuid.uuid4())`` gives."""

from __future__ import annotations

import re
import uuid
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from hindsight import _ids
from hindsight._ids import new_id, normalize_id

CANONICAL = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_new_id_is_a_canonical_random_uuid4() -> None:
    ids = [new_id() for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        assert CANONICAL.fullmatch(value), value
        parsed = uuid.UUID(value)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert str(parsed) == value == normalize_id(value)
    # the random bits stay random: every variant digit and every hex digit elsewhere occur
    assert set(Counter(v[19] for v in ids)) == set("89ab")
    assert set("".join(v[:8] for v in ids)) == set("0123456789abcdef")


@given(st.binary(min_size=16, max_size=16))
def test_new_id_spells_the_bytes_as_uuid4_does(raw: bytes) -> None:
    """The same 16 random bytes give the same string as ``uuid.UUID(bytes=..., version=4)``
    (what :func:`uuid.uuid4` does with ``os.urandom(16)``)."""
    assert _ids._spell(raw) == str(uuid.UUID(bytes=raw, version=4))
