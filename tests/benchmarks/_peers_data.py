"""Workload and embedder shared by the peer benchmark (``tests/benchmarks/peers.py``).

* :func:`make_workload` builds ``n`` distinct one-sentence lessons spread round-robin over
  ``tenants`` tenants, ``queries`` reworded queries each aimed at one stored lesson of one
  tenant, and one *planted* lesson in tenant ``t0`` with words no other lesson has, so every
  system must return it first for its query (a search that returns nothing, or the wrong
  tenant's rows, is caught instead of timed).
* :class:`PrecomputedEmbedder` is the one embedder every system gets: hindsight's offline
  :class:`~hindsight.embedders.HashEmbedder` behind a cache that is filled before any timing
  (:meth:`PrecomputedEmbedder.prime`), so ingest and recall timings exclude embedding for all
  systems alike. ``misses`` counts texts that were not primed, so the benchmark can show that
  no embedding happened inside a timed section.

Lessons carry a unique reference number and two random pseudo-words, so hindsight's dedup on
write (docs/lifecycle.md: merge needs the same specifics) keeps every one of them and all
systems hold the same ``n`` rows.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hindsight.embedders import HashEmbedder

_VERBS = [
    "query",
    "refund",
    "book",
    "cancel",
    "search",
    "update",
    "send",
    "charge",
    "lookup",
    "create",
    "reserve",
    "verify",
    "export",
    "sync",
    "fetch",
    "upload",
    "merge",
    "close",
    "open",
    "schedule",
]
_OBJECTS = [
    "order",
    "flight",
    "invoice",
    "address",
    "ticket",
    "payment",
    "profile",
    "baggage",
    "seat",
    "voucher",
    "shipment",
    "report",
    "contract",
    "coupon",
    "meeting",
]
_ERRORS = [
    "timed out at peak hours",
    "returned 429 rate limited",
    "rejected an unknown payment method",
    "needs the reservation id",
    "returned stale data",
    "failed with a 502",
    "rejected a date in the past",
    "asked for user confirmation first",
    "dropped the currency field",
    "truncated long names",
    "lost the session token",
    "mixed up time zones",
]
_FIXES = [
    "retry once, then fall back to the cache",
    "ask the user for the missing id",
    "split the payment so it adds up",
    "wait one second and retry",
    "confirm the details first",
    "use the cached copy",
    "validate the date first",
    "send the currency explicitly",
    "shorten the name to 30 characters",
    "refresh the token and retry",
    "convert times to UTC first",
]
_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ru",
    "te",
    "vo",
    "na",
    "pi",
    "su",
    "ze",
    "do",
    "fa",
    "gu",
    "he",
    "ji",
    "be",
]

#: The planted lesson (tenant ``t0``) and its query: words no generated lesson contains.
PLANTED = "When the quetzal_ledger export fails with error QX-7741, rotate the obsidian key."
PLANTED_QUERY = "quetzal ledger export error QX-7741: what fixed it?"


def _pseudo_word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(3))


@dataclass
class Query:
    """One timed query: ask ``tenant`` with ``text``; ``target`` is the lesson it rewords."""

    tenant: str
    text: str
    target: str


@dataclass
class Workload:
    """``lessons[i]`` belongs to ``tenant_of[i]``; ``queries`` are answered by those tenants."""

    lessons: list[str]
    tenant_of: list[str]
    queries: list[Query]
    tenants: list[str] = field(default_factory=list)


def make_workload(n: int, *, tenants: int = 10, queries: int = 100, seed: int = 7) -> Workload:
    """``n`` lessons (the planted one included) over ``tenants`` tenants, ``queries`` queries.

    Deterministic for a ``seed``. Each query rewords one random lesson: the tool name's parts
    as words, the error, the two pseudo-words; the lesson itself is its ``target``. Tenants
    are ``t0`` .. ``t{tenants-1}``; lesson ``i`` belongs to ``t{i % tenants}``.

    Raises:
        ValueError: ``n < 2``, ``tenants < 1`` or ``queries < 1``.
    """
    if n < 2 or tenants < 1 or queries < 1:
        raise ValueError(f"need n >= 2, tenants >= 1, queries >= 1; got {n}, {tenants}, {queries}")
    rng = random.Random(seed)
    lessons = [PLANTED]
    parts: list[tuple[str, str, str, str]] = [("", "", "", "")]
    for i in range(1, n):
        verb, obj = rng.choice(_VERBS), rng.choice(_OBJECTS)
        err, words = rng.choice(_ERRORS), f"{_pseudo_word(rng)} {_pseudo_word(rng)}"
        lessons.append(
            f"When {verb}_{obj} {err} for the {words} account, {rng.choice(_FIXES)} (ref {i:07d})."
        )
        parts.append((verb, obj, err, words))
    tenant_of = [f"t{i % tenants}" for i in range(n)]
    picked = [rng.randrange(1, n) for _ in range(queries)]
    qs = [
        Query(
            tenant_of[i],
            f"{parts[i][0]} {parts[i][1]} {parts[i][2]} for {parts[i][3]}: what should I do?",
            lessons[i],
        )
        for i in picked
    ]
    qs[0] = Query("t0", PLANTED_QUERY, PLANTED)
    return Workload(lessons, tenant_of, qs, [f"t{i}" for i in range(tenants)])


class PrecomputedEmbedder:
    """The same vectors for every system: :class:`HashEmbedder` (384-d) behind a cache.

    Satisfies :class:`hindsight.ports.Embedder` (``name``, ``dimension``, ``similarity_floor``,
    ``embed``). :meth:`as_langchain` and :meth:`embed_lists` adapt it for mem0 and LangGraph.

    Attributes:
        misses: texts embedded because they were not primed (0 in a clean timed section).
    """

    def __init__(self, dimension: int = 384) -> None:
        self._inner = HashEmbedder(dimension)
        self.name = self._inner.name
        self.dimension = dimension
        self.similarity_floor = self._inner.similarity_floor
        self.dedup_threshold = self._inner.dedup_threshold
        self._cache: dict[str, np.ndarray] = {}
        self.misses = 0

    def prime(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` now (not counted as misses)."""
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for text, vec in zip(todo, self._inner.embed(todo), strict=True):
                self._cache[text] = vec

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 ``(len(texts), dimension)``; unprimed texts are embedded and counted."""
        missing = [t for t in texts if t not in self._cache]
        if missing:
            self.misses += len(missing)
            self.prime(missing)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts]).astype(np.float32)

    def embed_lists(self, texts: Sequence[str]) -> list[list[float]]:
        """``embed`` as lists of floats (LangGraph's ``index={"embed": ...}`` signature)."""
        return [row.tolist() for row in self.embed(list(texts))]

    def as_langchain(self) -> Any:
        """A ``langchain_core`` ``Embeddings`` over this cache (mem0's ``langchain`` provider)."""
        from langchain_core.embeddings import Embeddings

        outer = self

        class _Adapter(Embeddings):
            def embed_documents(self, texts: list[str]) -> list[list[float]]:
                return outer.embed_lists(texts)

            def embed_query(self, text: str) -> list[float]:
                return outer.embed_lists([text])[0]

        return _Adapter()
