"""Keyset paging: opaque cursors and pages that carry the next one
(docs/concepts.md#paging-with-cursors).

Every listing of the public API has a total order (ending with the row's id, so rows with
equal timestamps or confidences still have one place). A page's ``next_cursor`` encodes the
sort key of its last row; the next page is "the rows after that key" (``WHERE key > last``),
not "skip N rows", so a row written or deleted between two pages neither repeats a row nor
hides one (offset paging does both). A row whose own sort key changes between two pages (an
experience whose confidence moved, in the most-confident-first listing) is seen where its key
is when each page is read.

A cursor is url-safe base64 of a short integrity tag, the listing's name and the key; it is
opaque (its layout may change between versions). One from another listing, a changed one,
or one that is not a cursor at all is refused in one line (:class:`~hindsight.UsageError`).

>>> from datetime import UTC, datetime
>>> when = datetime(2026, 1, 1, tzinfo=UTC)
>>> token = encode_cursor("experiences", (0.5, when, "id-1"))
>>> decode_cursor("experiences", token, (float, datetime, str))
(0.5, datetime.datetime(2026, 1, 1, 0, 0, tzinfo=datetime.timezone.utc), 'id-1')
>>> decode_cursor("trajectories", token, (datetime, str))
Traceback (most recent call last):
    ...
hindsight._errors.UsageError: cursor is not a next_cursor of this list (pass it back unchanged)

Foundation: imports nothing of hindsight but ``_errors``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import Any, TypeVar

from hindsight._errors import UsageError

__all__ = [
    "BAD_CURSOR",
    "MAX_CURSOR",
    "NEXT_CURSOR_HEADER",
    "Page",
    "awalk",
    "decode_cursor",
    "encode_cursor",
    "page_of",
    "paging",
    "walk",
]

T = TypeVar("T")

MAX_CURSOR = 1000
"""The longest cursor accepted, in characters (every cursor this version makes is shorter)."""
BAD_CURSOR = "cursor is not a next_cursor of this list (pass it back unchanged)"
NEXT_CURSOR_HEADER = "Next-Cursor"
"""The HTTP response header of a listing whose answer is a bare JSON list (``GET /v1/jobs``)."""
_TAG = 6
_SALT = b"hindsight-cursor-v1"


class Page(list[T]):
    """One page of a listing: a ``list`` of its items, plus ``next_cursor``, the cursor of
    the next page (``None`` when this page is the last one).

    A page is a plain list for every other purpose (``len``, indexing, ``==`` with a list).
    """

    next_cursor: str | None

    def __init__(self, items: Iterable[T] = (), next_cursor: str | None = None) -> None:
        super().__init__(items)
        self.next_cursor = next_cursor

    def __repr__(self) -> str:
        return f"Page({list.__repr__(self)}, next_cursor={self.next_cursor!r})"


def _tag(payload: bytes) -> bytes:
    return hashlib.blake2b(payload, digest_size=_TAG, key=_SALT).digest()


def encode_cursor(listing: str, key: Sequence[Any]) -> str:
    """The cursor of the row whose sort key is ``key`` in ``listing`` (numbers, strings and
    aware datetimes)."""
    values = [v.isoformat() if isinstance(v, datetime) else v for v in key]
    payload = json.dumps([listing, *values], separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(_tag(payload) + payload).rstrip(b"=").decode("ascii")


def decode_cursor(listing: str, cursor: Any, kinds: Sequence[type]) -> tuple[Any, ...]:
    """The sort key a cursor of ``listing`` encodes, one value of each of ``kinds``
    (``int``, ``float``, ``datetime`` or ``str``).

    Raises:
        UsageError: :data:`BAD_CURSOR` for a cursor of another listing, a changed one, or
            anything that is not a cursor (not a string, too long, not base64).
    """
    if not isinstance(cursor, str) or not 0 < len(cursor) <= MAX_CURSOR:
        raise UsageError(BAD_CURSOR)
    try:
        text = cursor.strip()
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        tag, payload = raw[:_TAG], raw[_TAG:]
        # the canonical spelling only: base64 ignores some bits of the last character
        canonical = base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
        if tag != _tag(payload) or canonical != text:
            raise ValueError("tag")
        doc = json.loads(payload.decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise UsageError(BAD_CURSOR) from None
    if not isinstance(doc, list) or len(doc) != len(kinds) + 1 or doc[0] != listing:
        raise UsageError(BAD_CURSOR)
    return tuple(_typed(kind, value) for kind, value in zip(kinds, doc[1:], strict=True))


def _typed(kind: type, value: Any) -> Any:
    if kind is int and type(value) is int:
        return value
    if kind is float and type(value) in (int, float):
        return float(value)
    if kind is str and isinstance(value, str):
        return value
    if kind is datetime and isinstance(value, str):
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise UsageError(BAD_CURSOR) from None
        if when.tzinfo is not None:
            return when
    raise UsageError(BAD_CURSOR)


def paging(cursor: Any, offset: Any) -> None:
    """Check that at most one of ``cursor`` and ``offset`` was given (``None`` = not given).

    Raises:
        UsageError: both were given.
    """
    if cursor is not None and offset is not None:
        raise UsageError("send cursor or offset, not both")


def page_of(
    listing: str, items: Iterable[T], limit: int, key: Callable[[T], Sequence[Any]]
) -> Page[T]:
    """``items`` (one page of at most ``limit``) as a :class:`Page`: its ``next_cursor`` is
    the cursor of the last item when the page is full (the next page may be empty), else
    ``None``."""
    page = Page(items)
    if len(page) >= limit and page:
        page.next_cursor = encode_cursor(listing, key(page[-1]))
    return page


def walk(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
    """Every item of a listing: ``fetch(cursor)`` gives one page (``None``: the first),
    called again with each page's ``next_cursor`` until a page has none."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from page
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def awalk(fetch: Callable[[str | None], Awaitable[Page[T]]]) -> AsyncIterator[T]:
    """:func:`walk` for an async ``fetch``."""
    cursor: str | None = None
    while True:
        page = await fetch(cursor)
        for item in page:
            yield item
        if page.next_cursor is None:
            return
        cursor = page.next_cursor
