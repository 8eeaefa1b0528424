"""Provenance trust weights (docs/security.md#layer-2-provenance-trust).

Every experience records where its evidence came from; the weight below becomes the
experience's initial ``trust`` and multiplies its recall score. The order is system > normal
user > unknown, with tool output between user and unknown: tool output is
produced by the run itself but its content is controlled by whatever the tool read (a web page,
an e-mail, a ticket), which is exactly where injected instructions come from.

===========  ======  ===========================================================
source       weight  aliases
===========  ======  ===========================================================
``system``   1.0     ``operator``, ``admin``, ``developer``
``user``     0.9     ``human``, ``user_message``
``tool``     0.6     ``tool_output``, ``tool_result``, ``tool_call``, ``observation``
``unknown``  0.5     ``external``, ``web``, ``import``, ``""``, anything unrecognised
===========  ======  ===========================================================
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

from hindsight.models import PROVENANCE_SPELLINGS

__all__ = [
    "SOURCE_ALIASES",
    "TRUST_WEIGHTS",
    "canonical_source",
    "initial_trust",
    "trust_mass",
    "trust_weight",
]

TRUST_WEIGHTS: Final[Mapping[str, float]] = MappingProxyType(
    {"system": 1.0, "user": 0.9, "tool": 0.6, "unknown": 0.5}
)
"""Trust weight per canonical source (the values of :class:`hindsight.models.Provenance`)."""

SOURCE_ALIASES: Final[Mapping[str, str]] = PROVENANCE_SPELLINGS
"""Other spellings accepted for a source, mapped to the canonical name: the one table of
:data:`hindsight.models.PROVENANCE_SPELLINGS`, which the API accepts too."""


def canonical_source(source: str | None) -> str:
    """Map a source label to one of ``system``, ``user``, ``tool``, ``unknown``.

    Case and surrounding whitespace are ignored; ``None``, ``""`` and unrecognised labels
    give ``"unknown"``. Enum members whose value is a string (``Provenance.TOOL``) work as is.
    Never raises.
    """
    if source is None:
        return "unknown"
    key = str(getattr(source, "value", source)).strip().lower()
    key = SOURCE_ALIASES.get(key, key)
    return key if key in TRUST_WEIGHTS else "unknown"


def trust_weight(source: str | None) -> float:
    """The trust weight of one source, in [0, 1] (see :data:`TRUST_WEIGHTS`)."""
    return TRUST_WEIGHTS[canonical_source(source)]


def initial_trust(sources: Iterable[str | None]) -> float:
    """The initial trust of a lesson supported by evidence from ``sources``.

    The most trusted source wins: a lesson backed by a user message *and* tool output starts
    at the user weight (0.9), one whose only evidence is tool output at 0.6. No sources at all
    gives the ``unknown`` weight (0.5). A bare string is treated as one source, not as an
    iterable of characters. Never raises on strings.
    """
    if isinstance(sources, str):
        sources = [sources]
    weights = [trust_weight(s) for s in sources]
    return max(weights) if weights else TRUST_WEIGHTS["unknown"]


def trust_mass(experience: Any) -> float:
    """The support mass the conflict test weighs when nothing better is known: the
    experience's ``trust`` alone (its most trusted evidence). Support counts are left out on
    purpose: repeating a claim must not buy weight; the engine passes the
    write-back's trust-weighted mass of distinct sources instead when it has one."""
    return float(experience.trust)
