"""Evidence-based confidence (docs/lifecycle.md#confidence-hindsightwritebackconfidence).

A lesson's confidence is the mean of a Beta posterior over "the lesson holds", from the
reviewer's self-assessment as prior and the evidence behind the lesson (the Beta reputation
system of Jøsang & Ismail, 2002, "The Beta Reputation System", 15th Bled eCommerce
Conference; with ``c0 = 0.5`` and unit weights it is Laplace's rule of succession)::

    a0 = K * c0          b0 = K * (1 - c0)          K = PRIOR_STRENGTH = 2
    S  = supporting mass (runs for the lesson, weighted by trust, + successful recalls)
    C  = contradicting mass (runs against it, weighted by trust, + failed recalls)
    confidence = clamp((a0 + S) / (a0 + b0 + S + C) + offset, 0, 1)

* ``c0`` is the reviewer's confidence (``add_experience``'s for a manual lesson). With no
  evidence the confidence is ``c0``; ``K = 2`` makes the prior worth two runs of full trust.
* **Evidence** (``metadata["support"]``): one entry per run and polarity, ``{"trajectory_id",
  "polarity": +1 | -1, "role", "trust"}``. The same run never counts twice for one polarity
  (a second review, a second lesson with the same key, the same run named again: the union
  keeps one entry, with the higher trust). A run weighs its trust (``trajectory.trust x``
  the provenance weight of the lesson's evidence, :data:`hindsight.guard.TRUST_WEIGHTS`).
  Runs under :data:`LOW_TRUST` (0.7: tool output 0.6, unknown 0.5, demoted lessons) together
  weigh at most :data:`MAX_LOW_TRUST_MASS` (1.0) per polarity: repeating a claim from
  low-trust sources saturates after one or two runs, whatever the count.
* **Outcomes** (``record_outcome``): each run that recalled the lesson and then succeeded adds
  :data:`OUTCOME_WEIGHT` (1.0) to ``S``, each that failed adds it to ``C``; once per run (the
  ``outcomes`` table's key), kept as masses in ``metadata["confidence_basis"]`` next to the
  ``helped_count`` / ``misled_count`` counters.
* **Superseding**: the runs of the newer lesson count as contradicting evidence of the older.
* **By hand** (``adjust_confidence``): an audited ``offset`` on top, chosen so that the
  confidence right after the adjustment is ``clamp(old + delta)``, exactly as asked; later
  evidence moves the posterior and the offset stays.
* Evidence that is not a run has a pseudo id: ``manual:<source>`` when ``add_experience``
  adds the same text again (once per source), ``experience:<id>`` for a superseding lesson
  learned from no run.

``metadata["confidence_basis"]`` holds ``{"prior", "offset", "succeeded", "failed"}``; an
experience written before evidence-based confidence has none, and its stored confidence is
its prior. Examples (docs/lifecycle.md has more):

>>> posterior(0.6, [])
0.6
>>> round(posterior(0.6, [{"trajectory_id": "r1", "polarity": 1, "trust": 1.0}]), 4)
0.7333
>>> many = [{"trajectory_id": f"r{i}", "polarity": 1, "trust": 0.6} for i in range(7)]
>>> round(posterior(0.6, many), 4)  # seven low-trust runs count as one
0.7333

:func:`support_mass` gives the memory guard the two masses to settle a conflict by evidence
and trust rather than by count (the guard sits below the write-back in the import layers: the
engine hands it this function).

Every change goes through the store in one SQL transaction with an audit row
(``hindsight.store.lifecycle``): concurrent outcomes and adjustments never lose an update.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from hindsight._errors import UsageError
from hindsight._ids import normalize_id
from hindsight.models import Experience, Provenance

__all__ = [
    "BASIS_KEY",
    "LOW_TRUST",
    "MAX_LOW_TRUST_MASS",
    "OUTCOME_WEIGHT",
    "PRIOR_STRENGTH",
    "SUPPORT_KEY",
    "adjust",
    "adjusted",
    "check_support",
    "combined",
    "evidence_union",
    "folded",
    "initial",
    "mass",
    "posterior",
    "record_outcome",
    "superseded",
    "support_mass",
    "supporting_mass",
    "with_outcome",
]

PRIOR_STRENGTH = 2.0
"""``K``: the reviewer's confidence weighs as much as this many runs of full trust."""
LOW_TRUST = 0.7
"""Evidence from a run of trust below this (tool output, unknown sources) is low-trust."""
MAX_LOW_TRUST_MASS = 1.0
"""Cap of the summed weight of low-trust runs, per polarity."""
OUTCOME_WEIGHT = 1.0
"""Weight of one recalled-then-succeeded (or -failed) run: the caller reports outcomes."""
SUPPORT_KEY = "support"
"""``Experience.metadata`` key of the evidence entries."""
BASIS_KEY = "confidence_basis"
"""``Experience.metadata`` key of ``{"prior", "offset", "succeeded", "failed"}``."""

Entry = dict[str, Any]


def _clamp(value: float) -> float:
    return min(1.0, max(0.0, round(value, 6)))


def _number(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return default
    return float(value)


def check_support(entries: Any, *, what: str = "support") -> list[Entry]:
    """Reviewer-given evidence entries, checked: a list of ``{"trajectory_id": <UUID>,
    "polarity": 1 | -1, "role": str}`` (``trust`` optional, in [0, 1]); ids canonical.

    Raises:
        UsageError: not a list of such entries (one line naming the first bad one).
    """
    if not isinstance(entries, list):
        raise UsageError(f"{what} must be a list of evidence entries, got {type(entries).__name__}")
    out: list[Entry] = []
    for i, raw in enumerate(entries):
        if not isinstance(raw, Mapping):
            raise UsageError(f"{what}[{i}] must be an object, got {type(raw).__name__}")
        polarity = raw.get("polarity")
        if isinstance(polarity, bool) or polarity not in (1, -1):
            raise UsageError(f"{what}[{i}].polarity must be 1 or -1, got {polarity!r:.40}")
        role = raw.get("role", "evidence")
        if not isinstance(role, str):
            raise UsageError(f"{what}[{i}].role must be a string, got {type(role).__name__}")
        entry: Entry = {
            "trajectory_id": normalize_id(raw.get("trajectory_id"), f"{what}[{i}].trajectory_id"),
            "polarity": int(polarity),
            "role": role or "evidence",
        }
        if "trust" in raw and raw["trust"] is not None:
            trust = _number(raw["trust"], -1.0)
            if not 0.0 <= trust <= 1.0:
                raise UsageError(f"{what}[{i}].trust must be in [0, 1], got {raw['trust']!r:.40}")
            entry["trust"] = trust
        out.append(entry)
    return out


def evidence_union(*supports: Iterable[Mapping[str, Any]]) -> list[Entry]:
    """The union of evidence lists: one entry per ``(trajectory_id, polarity)``, first seen
    first, keeping the first entry's role and the highest trust. Malformed entries (no id, a
    polarity other than +-1) are dropped."""
    out: dict[tuple[str, int], Entry] = {}
    for support in supports:
        for raw in support:
            if not isinstance(raw, Mapping):
                continue
            tid, polarity = raw.get("trajectory_id"), raw.get("polarity")
            if not isinstance(tid, str) or not tid or isinstance(polarity, bool):
                continue
            if polarity not in (1, -1):
                continue
            trust = min(1.0, max(0.0, _number(raw.get("trust"), 0.0)))
            key = (tid, int(polarity))
            if key in out:
                out[key]["trust"] = max(out[key]["trust"], trust)
            else:
                role = raw.get("role")
                out[key] = {
                    "trajectory_id": tid,
                    "polarity": int(polarity),
                    "role": role if isinstance(role, str) and role else "evidence",
                    "trust": trust,
                }
    return list(out.values())


def mass(support: Iterable[Mapping[str, Any]]) -> tuple[float, float]:
    """``(S, C)``: the supporting and contradicting mass of evidence entries (outcomes not
    included). Each (run, polarity) counts once at its trust; per polarity, runs of trust below
    :data:`LOW_TRUST` add up to at most :data:`MAX_LOW_TRUST_MASS`."""
    high = {1: 0.0, -1: 0.0}
    low = {1: 0.0, -1: 0.0}
    for entry in evidence_union(support):
        side, trust = entry["polarity"], entry["trust"]
        if trust >= LOW_TRUST:
            high[side] += trust
        else:
            low[side] += trust
    return (
        high[1] + min(low[1], MAX_LOW_TRUST_MASS),
        high[-1] + min(low[-1], MAX_LOW_TRUST_MASS),
    )


def posterior(
    prior: float,
    support: Iterable[Mapping[str, Any]],
    *,
    outcomes: tuple[float, float] = (0.0, 0.0),
) -> float:
    """The Beta posterior mean ``(K c0 + S) / (K + S + C)`` (see the module docstring).

    Args:
        prior: ``c0`` in [0, 1], the reviewer's confidence.
        support: evidence entries (``trajectory_id``, ``polarity``, ``trust``).
        outcomes: ``(succeeded, failed)`` masses of recall outcomes, added to ``S`` and ``C``.

    Returns:
        A value in [0, 1] (``prior`` itself when there is no evidence).
    """
    c0 = min(1.0, max(0.0, float(prior)))
    s, c = mass(support)
    s += max(0.0, outcomes[0])
    c += max(0.0, outcomes[1])
    if s == 0.0 and c == 0.0:
        return c0
    return (PRIOR_STRENGTH * c0 + s) / (PRIOR_STRENGTH + s + c)


def _basis(exp: Experience) -> dict[str, float]:
    """``metadata["confidence_basis"]``, or that of a lesson written before evidence-based
    confidence (its stored confidence is its prior, no offset, no outcome mass)."""
    raw = exp.metadata.get(BASIS_KEY)
    raw = raw if isinstance(raw, Mapping) else {}
    prior = _number(raw.get("prior"), exp.confidence) if raw else exp.confidence
    return {
        "prior": min(1.0, max(0.0, prior)),
        "offset": min(1.0, max(-1.0, _number(raw.get("offset"), 0.0))),
        "succeeded": max(0.0, _number(raw.get("succeeded"), 0.0)),
        "failed": max(0.0, _number(raw.get("failed"), 0.0)),
    }


def _support(exp: Experience) -> list[Entry]:
    raw = exp.metadata.get(SUPPORT_KEY)
    return evidence_union(raw) if isinstance(raw, list) else []


def support_mass(exp: Experience) -> tuple[float, float]:
    """``(supporting, contradicting)`` evidence mass of an experience: its runs (by trust,
    saturating, :func:`mass`) plus its recall outcomes; an experience learned from no run and
    without evidence (``add_experience``) is backed by its source alone (``manual:<source>``
    at its ``trust``). For the memory guard: compare these, not counts, when two lessons
    contradict each other (the engine hands :func:`supporting_mass` to
    :class:`hindsight.guard.screening.WriteScreen`)."""
    basis = _basis(exp)
    s, c = mass(_evidence_of(exp))
    return s + basis["succeeded"], c + basis["failed"]


def supporting_mass(exp: Experience) -> float:
    """The first half of :func:`support_mass`: the trust-weighted mass of the distinct sources
    and successful recalls behind ``exp`` (the guard's ``support`` of an experience)."""
    return support_mass(exp)[0]


def _rescored(
    exp: Experience, basis: dict[str, float], support: list[Entry], **fields: Any
) -> Experience:
    """``exp`` with ``fields``, its evidence and basis stored and its confidence recomputed.
    Without evidence, offset or outcomes the confidence is the prior and neither key is
    written (the prior is then the stored confidence, as for lessons written before)."""
    meta = dict(exp.metadata)
    meta.pop(SUPPORT_KEY, None)
    meta.pop(BASIS_KEY, None)
    if not support and not (basis["offset"] or basis["succeeded"] or basis["failed"]):
        value = basis["prior"]
    else:
        outcomes = (basis["succeeded"], basis["failed"])
        value = posterior(basis["prior"], support, outcomes=outcomes) + basis["offset"]
        meta[BASIS_KEY] = basis
        if support:
            meta[SUPPORT_KEY] = support
    return exp.model_copy(update={**fields, "metadata": meta, "confidence": _clamp(value)})


def initial(exp: Experience) -> Experience:
    """A new experience with its confidence derived: prior = its ``confidence`` (the
    reviewer's), evidence = ``metadata["support"]`` (entries with their ``trust`` set).
    Idempotent: an experience that already has a basis keeps its prior."""
    return _rescored(exp, _basis(exp), _support(exp))


def _pseudo_support(exp: Experience, polarity: int, role: str, pseudo: str) -> list[Entry]:
    return [{"trajectory_id": pseudo, "polarity": polarity, "role": role, "trust": exp.trust}]


def _evidence_of(exp: Experience) -> list[Entry]:
    """``exp``'s evidence entries; a lesson from no run and without evidence
    (``add_experience``) is evidence for itself from its source (``manual:<provenance>``), so
    adding the same text again counts once per source."""
    found = _support(exp)
    if found or exp.source_trajectory_ids:
        return found
    source = Provenance(exp.provenance).value
    return _pseudo_support(exp, 1, "manual", f"manual:{source}")


def folded(current: Experience, incoming: Experience, now: datetime) -> Experience:
    """``current`` after the same lesson was learned again as ``incoming`` (dedup NOOP or
    MERGE, or the same ``lesson_key``): sources, tools and tags united; evidence united with
    ``incoming``'s (a lesson from no run counts as ``manual:<source>``);
    ``support_count + 1`` only when that brought a supporting run (or source) not seen
    before; the confidence recomputed with ``current``'s prior. The text and the other fields
    stay ``current``'s (the first writer's)."""
    before = _support(current)
    support = evidence_union(before, _evidence_of(incoming))
    new_evidence = sum(e["polarity"] == 1 for e in support) > sum(
        e["polarity"] == 1 for e in before
    )
    return _rescored(
        current,
        _basis(current),
        support,
        support_count=current.support_count + (1 if new_evidence else 0),
        source_trajectory_ids=list(
            dict.fromkeys([*current.source_trajectory_ids, *incoming.source_trajectory_ids])
        ),
        tools=list(dict.fromkeys([*current.tools, *incoming.tools])),
        tags=sorted({*current.tags, *incoming.tags}),
        updated_at=now,
    )


def superseded(older: Experience, newer: Experience, now: datetime) -> Experience:
    """``older``'s evidence and confidence once ``newer`` supersedes it: every run supporting
    ``newer`` is a contradicting run of ``older`` (role ``superseded_by``; a lesson from no run
    counts as ``experience:<newer id>``). Status and links are the store's business."""
    against = [
        {**e, "polarity": -1, "role": "superseded_by"}
        for e in _support(newer)
        if e["polarity"] == 1
    ] or _pseudo_support(newer, -1, "superseded_by", f"experience:{newer.id}")
    return _rescored(older, _basis(older), evidence_union(_support(older), against), updated_at=now)


CONFLICT_WEIGHT = 0.5
"""How much each run behind a newer, conflicting lesson counts against the older one when
the write-back cannot tell which is right (a CONFLICT, docs/lifecycle.md): half a
contradicting run, so the older one ranks below the newer one without being overturned (a
supersede counts a whole run, :func:`superseded`)."""


def contradicted(older: Experience, newer: Experience, now: datetime) -> Experience:
    """``older``'s evidence and confidence once ``newer`` conflicts with it undecidably (the
    same statement with other values and no sign of a correction): every run supporting
    ``newer`` counts :data:`CONFLICT_WEIGHT` against ``older`` (role ``conflicts_with``; a
    lesson from no run counts as ``experience:<newer id>``)."""
    against = [
        {**e, "polarity": -1, "role": "conflicts_with"}
        for e in _support(newer)
        if e["polarity"] == 1
    ] or _pseudo_support(newer, -1, "conflicts_with", f"experience:{newer.id}")
    against = [
        {**e, "trust": round(_number(e.get("trust"), 1.0) * CONFLICT_WEIGHT, 6)} for e in against
    ]
    return _rescored(older, _basis(older), evidence_union(_support(older), against), updated_at=now)


def with_outcome(exp: Experience, success: bool, now: datetime) -> Experience:
    """``exp`` after a run that recalled it ended: :data:`OUTCOME_WEIGHT` more succeeded (or
    failed) mass, ``helped_count`` (or ``misled_count``) + 1, confidence recomputed. The store
    calls this once per run (:meth:`hindsight.store.SqlStore.apply_outcome`)."""
    basis = _basis(exp)
    side = "succeeded" if success else "failed"
    basis[side] = round(basis[side] + OUTCOME_WEIGHT, 6)
    return _rescored(
        exp,
        basis,
        _support(exp),
        helped_count=exp.helped_count + (1 if success else 0),
        misled_count=exp.misled_count + (0 if success else 1),
        updated_at=now,
    )


def adjusted(exp: Experience, delta: float, now: datetime) -> Experience:
    """``exp`` with its confidence moved by ``delta`` by hand: the confidence becomes
    ``clamp(confidence + delta)`` and the offset over the evidence's posterior is kept in the
    basis (so that later evidence moves it from there)."""
    basis = _basis(exp)
    support = _support(exp)
    target = _clamp(exp.confidence + delta)
    value = posterior(basis["prior"], support, outcomes=(basis["succeeded"], basis["failed"]))
    basis["offset"] = round(min(1.0, max(-1.0, target - value)), 6)
    return _rescored(exp, basis, support, updated_at=now)


def combined(members: Sequence[Experience]) -> dict[str, Any]:
    """Confidence fields of one experience standing for ``members`` (compression): their
    evidence united, outcome masses added, the highest prior, no offset; returns
    ``{"confidence", "metadata"}`` updates for the representative (``members[0]``)."""
    bases = [_basis(m) for m in members]
    basis = {
        "prior": max(b["prior"] for b in bases),
        "offset": 0.0,
        "succeeded": round(sum(b["succeeded"] for b in bases), 6),
        "failed": round(sum(b["failed"] for b in bases), 6),
    }
    support = evidence_union(*(_support(m) for m in members))
    done = _rescored(members[0], basis, support)
    return {"confidence": done.confidence, "metadata": done.metadata}


def record_outcome(
    store: Any,
    tenant: str,
    trajectory_id: str,
    success: bool,
    *,
    policy: Callable[[Experience, datetime], Experience] | None = None,
) -> list[Experience] | None:
    """Apply a run's outcome to what it recalled, once per run (see
    :meth:`hindsight.store.SqlStore.apply_outcome`, :func:`with_outcome`). ``policy`` (the
    guard's misled policy) may change each updated experience inside the same transaction.

    Returns:
        The updated experiences, or ``None`` when the outcome was recorded before.
    """
    changes = store.apply_outcome(
        tenant,
        trajectory_id,
        success,
        credit=with_outcome,
        weight=OUTCOME_WEIGHT,
        policy=policy,
    )
    if changes is None:
        return None
    found = store.get_experiences(tenant, [c["experience_id"] for c in changes])
    return [found[c["experience_id"]] for c in changes if c["experience_id"] in found]


def adjust(
    store: Any, tenant: str, experience_id: str, delta: float, *, actor: str, reason: str | None
) -> Experience:
    """Move an experience's confidence by ``delta`` (in [-1, 1]) by hand, clamped to [0, 1],
    audited with ``actor`` and ``reason`` (the MCP tool ``adjust_confidence``,
    docs/mcp.md#tools; :func:`adjusted` keeps it as an offset over the evidence); returns it.

    Raises:
        NotFoundError: no such experience in this tenant. UsageError: bad delta or actor.
    """
    store.adjust_confidence(
        tenant, experience_id, delta, actor=actor, reason=reason, rescore=adjusted
    )
    found: Experience = store.get_experience(tenant, experience_id)
    return found
