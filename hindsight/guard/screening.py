"""The guard on the write path: every experience is screened before it is stored.

:class:`WriteScreen` is what :meth:`hindsight.writeback.WriteBack.guard_experience` runs for
every experience that is created or edited, before deduplication:

1. **clean** - the content is stored exactly as sent: the rules read a normalized
   copy (invisible characters removed, NFKC, case folded: :func:`~hindsight.guard.normalize`);
   a lesson made only of invisible characters is quarantined;
2. **check** - the guard's rules run on the normalized content, together with the
   high-confidence experiences most similar to it (vector search in the same tenant, in its
   namespace and the shared one: :data:`CONFLICT_NEIGHBOURS` nearest) for the conflict test,
   and, for reviewed lessons, with the passages of the trajectory the lesson quotes (taint,
   :class:`~hindsight.guard.evidence.EvidenceIndex`), and for reviewed lessons whose advice
   carries an element of a tool output that neither the instructions nor the user's request
   contain (:func:`tool_instructions`, the reason ``"instruction from tool output"``). An
   episode the review wrote is judged by provenance on its record and read by the rules on
   its own words only (:func:`reviewed_episode`, docs/security.md#episodes);
3. **quarantine** - on any hit the experience is stored with status ``quarantined`` and the
   reasons in ``metadata["quarantine_reasons"]``; it is never recalled until a human approves
   it (:mod:`hindsight.guard.quarantine`).

With the guard off (``HINDSIGHT_GUARD=off``) only step 1 runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from hindsight._errors import UsageError
from hindsight.guard import Guard, strip_invisible
from hindsight.guard.checker import Established, Finding
from hindsight.guard.consensus import ADVICE_KINDS
from hindsight.guard.evidence import EvidenceIndex
from hindsight.guard.llm_judge import GuardJudge, JudgeItem, JudgeVerdict
from hindsight.guard.provenance import PROVENANCE_KEY, TaintedSpan
from hindsight.guard.trust import canonical_source, trust_mass
from hindsight.models import Experience, ExperienceKind, ExperienceStatus
from hindsight.ports import Clock, Embedder, VectorIndex

__all__ = [
    "ADVICE_KINDS",
    "CONFLICT_NEIGHBOURS",
    "EPISODE_SEAL",
    "GUARD_METADATA_KEYS",
    "GUARD_OWNED_FIELDS",
    "WriteScreen",
    "check_user_metadata",
    "episode_user_words",
    "episode_words",
    "guard_metadata",
    "owned_by_guard",
    "quarantine",
    "reviewed_episode",
    "seal_episode",
    "tool_instructions",
]

Fetch = Callable[[str, list[str]], Mapping[str, Experience]]
"""Reads experiences: ``fetch(tenant_id, ids) -> {id: Experience}`` (absent ids left out)."""

CONFLICT_NEIGHBOURS = 5
"""Nearest active experiences (same tenant; own and shared namespace) given to the conflict
test; the guard itself keeps only those with confidence >= its ``conflict_threshold`` (0.8)."""

GUARD_METADATA_KEYS = frozenset(
    {
        "quarantine_reasons",
        "quarantined_at",
        "original_content",
        "evidence",
        "approved_at",
        "approved_note",
        "rejected_at",
        "rejected_note",
        "demoted_at",
        "demoted_from_trust",
        "misled_at_approval",
        "guard",
        "rescanned_at",
        # evidence-based confidence (hindsight.writeback.confidence): evidence entries and
        # the prior / offset / outcome masses the confidence is derived from
        "support",
        "confidence_basis",
        # where a reviewed lesson's words came from (hindsight.guard.provenance): recorded by
        # the review, never by a caller
        PROVENANCE_KEY,
    }
)
"""``Experience.metadata`` keys written by the guard (and by the write-back's evidence-based
confidence: ``support``, ``confidence_basis``); callers may not set them, on creation or in an
edit: they change only through the guard's own audited actions
(:func:`~hindsight.guard.quarantine.approve`, ``reject``, :meth:`WriteScreen.rescan`) and the
write-back's."""

GUARD_OWNED_FIELDS = ("trust", "provenance", "status")
"""``Experience`` fields the guard owns: an edit that names one is refused.
``trust`` and ``provenance`` come from the evidence (:func:`~hindsight.guard.initial_trust`),
``status`` moves only through quarantine, approve, reject (and the lifecycle's archive /
restore)."""

GUARD_ACTIONS = "approve, reject or rescan"


def owned_by_guard(name: str, *, key: bool = False) -> str:
    """The one-line refusal for an edit of the guard-owned field (or metadata ``key``)
    ``name``: ``"trust is owned by the memory guard: it changes only through approve, reject or
    rescan"``."""
    what = f"metadata key {name!r} is reserved for" if key else f"{name} is owned by"
    return f"{what} the memory guard: it changes only through {GUARD_ACTIONS}"


def check_user_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of caller-given metadata, refusing the guard's own keys.

    Raises:
        UsageError: ``metadata`` is not a dict or sets a key of :data:`GUARD_METADATA_KEYS`
            (the message names the first such key, :func:`owned_by_guard`).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise UsageError(
            f"metadata must be a dict, got {type(metadata).__name__}", field="metadata"
        )
    taken = sorted(GUARD_METADATA_KEYS & set(metadata))
    if taken:
        raise UsageError(owned_by_guard(taken[0], key=True), field="metadata")
    return dict(metadata)


def guard_metadata(exp: Experience) -> dict[str, Any]:
    """The guard-owned part of ``exp.metadata`` (kept by every edit and rollback)."""
    return {k: v for k, v in exp.metadata.items() if k in GUARD_METADATA_KEYS}


_SCREENED = (ExperienceStatus.ACTIVE, ExperienceStatus.QUARANTINED)


def _with_llm_verdict(exp: Experience, verdict: JudgeVerdict) -> Experience:
    """``exp`` with the LLM judge's verdict in ``metadata["guard"]["llm"]``."""
    meta = dict(exp.metadata)
    record = dict(meta.get("guard") or {})
    record["llm"] = verdict.to_dict()
    meta["guard"] = record
    return exp.model_copy(update={"metadata": meta})


def quarantine(
    exp: Experience,
    reasons: Sequence[str],
    now: datetime,
    findings: Sequence[Finding] = (),
) -> Experience:
    """``exp`` with status ``quarantined`` and ``reasons`` appended to
    ``metadata["quarantine_reasons"]`` (``quarantined_at`` is set to ``now``, ISO 8601, unless
    ``exp`` was quarantined already) and ``findings`` (their layer, category and score) to
    ``metadata["guard"]["findings"]``."""
    meta = dict(exp.metadata)
    meta["quarantine_reasons"] = [*meta.get("quarantine_reasons", []), *reasons]
    if findings:
        record = dict(meta.get("guard") or {})
        record["findings"] = [*record.get("findings", []), *(f.to_dict() for f in findings)]
        meta["guard"] = record
    if exp.status is not ExperienceStatus.QUARANTINED or "quarantined_at" not in meta:
        meta["quarantined_at"] = now.isoformat()
    return exp.model_copy(
        update={"status": ExperienceStatus.QUARANTINED, "metadata": meta, "updated_at": now}
    )


MAX_TAINT_REASONS = 3
"""Tainted spans of one lesson turned into quarantine reasons (all stay in its provenance)."""


LOW_TRUST_ORIGINS: Final = frozenset({"tool", "unknown"})
"""Origins whose experiences are held (quarantined) until a person approves them: tool
output, web pages, imports and anything unrecognised (docs/security.md#held-until-confirmed)."""

UNCONFIRMED = "unconfirmed source"
"""The quarantine reason's prefix of an experience held for its low-trust origin."""


def origin_of(exp: Experience) -> str:
    """Where an experience as a whole came from, as a canonical source
    (:func:`hindsight.guard.trust.canonical_source`): a reviewed lesson's run
    (``metadata["provenance"]["origin"]``, recorded by the write-back), else the source its
    writer gave (``provenance``: ``add_experience(source=...)``, HTTP, MCP, a mined rule's
    runs)."""
    record = exp.metadata.get(PROVENANCE_KEY)
    if isinstance(record, Mapping) and isinstance(record.get("origin"), str):
        return canonical_source(record["origin"])
    return canonical_source(exp.provenance)


def unconfirmed_source(exp: Experience) -> list[Finding]:
    """One ``provenance`` finding when ``exp`` comes from a low-trust origin
    (:data:`LOW_TRUST_ORIGINS`): a planted instruction written through a tool, a web page or
    an import cannot reach other runs on its own; a person approves it (console, ``hindsight
    quarantine approve``, HTTP, MCP) or the same advice from a trusted source is recalled
    instead. Reason: ``"unconfirmed source: <origin>; held until a person approves it"``."""
    origin = origin_of(exp)
    if origin not in LOW_TRUST_ORIGINS:
        return []
    reason = f"{UNCONFIRMED}: {origin}; held until a person approves it"
    return [Finding("provenance", "trust", "provenance.unconfirmed", 1.0, reason)]


def tool_instructions(exp: Experience) -> list[Finding]:
    """Findings for the elements of a reviewed lesson's advice that came from tool output
    alone (``metadata["provenance"]["tainted"]``, recorded by the review:
    :class:`hindsight.guard.provenance.RunSpans`): one ``provenance`` finding per span, at
    most :data:`MAX_TAINT_REASONS`, each with the reason ``"instruction from tool output:
    ..."`` naming the element, the tool and the span. A reviewed episode's record holds only
    the passages it copied from tool output (its other data elements are masked:
    :meth:`hindsight.guard.provenance.RunSpans.mask_data`)."""
    record = exp.metadata.get(PROVENANCE_KEY)
    if not isinstance(record, Mapping):
        return []
    out = []
    for item in list(record.get("tainted") or [])[:MAX_TAINT_REASONS]:
        span = TaintedSpan.from_dict(item if isinstance(item, Mapping) else {})
        out.append(Finding("provenance", "injection", "provenance.tool_output", 1.0, span.reason()))
    return out


EPISODE_SEAL: Final = "episode"
"""The key, inside a reviewed episode's provenance record, of its seal (:func:`seal_episode`)."""


def seal_episode(
    record: Mapping[str, Any],
    content: str,
    recorded: Sequence[tuple[int, int]],
    user: Sequence[tuple[int, int]] = (),
) -> dict[str, Any]:
    """The provenance ``record`` of an episode the review wrote, sealed to its ``content``:
    the content's SHA-256, the ``recorded`` ``(start, end)`` character ranges the review built
    from the run's record (goal, calls, outcome, evidence; none for a summary an LLM wrote),
    which the text layers do not read, and the ``user`` ranges that repeat the user's request
    (:meth:`~hindsight.guard.provenance.RunSpans.user_words`): a finding of the text layers on
    the episode's own words that they also make on those words is the user's to ask, not
    advice (:meth:`WriteScreen.check_many`). Only the review calls it; the key is the guard's
    (:data:`GUARD_METADATA_KEYS`).

    Raises:
        ValueError: a range is not within ``0..len(content)`` or ends before it starts.
    """
    for start, end in [*recorded, *user]:
        if not 0 <= start <= end <= len(content):
            raise ValueError(f"range ({start}, {end}) is not within 0..{len(content)}")
    digest = hashlib.sha256(content.encode("utf-8")).hexdigest()
    seal = {
        "sha256": digest,
        "recorded": [[a, b] for a, b in sorted(recorded)],
        "user": [[a, b] for a, b in sorted(user)],
    }
    return {**record, EPISODE_SEAL: seal}


def reviewed_episode(exp: Experience) -> bool:
    """Whether ``exp`` is an episode the review wrote, exactly as it wrote it: kind
    ``episode`` whose provenance record (``metadata["provenance"]``, a key callers may not
    write: :data:`GUARD_METADATA_KEYS`) holds the seal of its content (:func:`seal_episode`).
    An edit that changes the content breaks the seal: the text is then screened as any other
    (docs/security.md#episodes)."""
    return _seal(exp) is not None


def _ranges(items: Any, size: int) -> list[tuple[int, int]] | None:
    if not isinstance(items, list):
        return None
    out = []
    for item in items:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) for n in item)
            and 0 <= item[0] <= item[1] <= size
        ):
            return None
        out.append((item[0], item[1]))
    return out


def _seal(exp: Experience) -> tuple[list[tuple[int, int]], list[tuple[int, int]]] | None:
    """``(recorded, user)`` ranges of a reviewed episode whose seal holds, else ``None``."""
    if exp.kind is not ExperienceKind.EPISODE:
        return None
    record = exp.metadata.get(PROVENANCE_KEY)
    seal = record.get(EPISODE_SEAL) if isinstance(record, Mapping) else None
    if not isinstance(seal, Mapping):
        return None
    if seal.get("sha256") != hashlib.sha256(exp.content.encode("utf-8")).hexdigest():
        return None
    recorded = _ranges(seal.get("recorded"), len(exp.content))
    user = _ranges(seal.get("user", []), len(exp.content))
    return None if recorded is None or user is None else (recorded, user)


def episode_words(exp: Experience) -> str:
    """The part of ``exp`` the text layers read: for a reviewed episode
    (:func:`reviewed_episode`) its words outside the recorded ranges (the agent's final
    answer; all of an LLM reviewer's summary), joined by `` … ``; else all of
    ``exp.content``."""
    sealed = _seal(exp)
    if sealed is None:
        return exp.content
    parts, at = [], 0
    for start, end in sealed[0]:
        if start > at:
            parts.append(exp.content[at:start])
        at = max(at, end)
    parts.append(exp.content[at:])
    return " … ".join(p.strip() for p in parts if p.strip())


def episode_user_words(exp: Experience) -> str:
    """The words of a reviewed episode that repeat the user's request (its sealed ``user``
    ranges), joined by `` … ``; ``""`` for any other experience."""
    sealed = _seal(exp)
    if sealed is None:
        return ""
    return " … ".join(exp.content[a:b] for a, b in sealed[1])


class WriteScreen:
    """Screens experiences on their way into the store (see the module docstring).

    Args:
        store: the SQL store (reads the neighbours' contents and confidences).
        index: the vector index (finds the neighbours).
        embedder: embeds a candidate when no vector is given.
        guard: the rules; ``None`` turns the checks off (cleaning still happens).
        clock: stamps ``quarantined_at``.
        shared_namespace: searched for conflicts besides the candidate's own namespace.
        support: the support mass of an experience for the conflict test;
            default :func:`~hindsight.guard.trust.trust_mass` (its trust: repeats add
            nothing).
        judge: the LLM judge (:class:`~hindsight.guard.llm_judge.GuardJudge`), when an LLM
            is configured and the ``llm`` layer is on; one request per batch of lessons.
    """

    def __init__(
        self,
        *,
        store: Any,
        index: VectorIndex,
        embedder: Embedder,
        guard: Guard | None,
        clock: Clock,
        shared_namespace: str = "shared",
        support: Callable[[Experience], float] | None = None,
        judge: GuardJudge | None = None,
    ) -> None:
        self.support = support or trust_mass
        self.judge = judge
        self.store = store
        self.index = index
        self.embedder = embedder
        self.guard = guard
        self.clock = clock
        self.shared_namespace = shared_namespace

    @property
    def enabled(self) -> bool:
        """True when the rules run (the guard is on)."""
        return self.guard is not None

    def clean(self, exp: Experience) -> Experience:
        """``exp`` itself: its content is stored exactly as sent; the rules read a
        normalized copy (:func:`~hindsight.guard.normalize`) and the rendered block drops
        invisible characters (:func:`hindsight.recall.render.escape_item`). Content made only
        of invisible characters is quarantined, so nothing unreadable is recalled."""
        if strip_invisible(exp.content).strip():
            return exp
        return quarantine(
            exp, ["invisible: the lesson is made only of invisible characters"], self._now()
        )

    def neighbours(
        self,
        exp: Experience,
        vector: npt.ArrayLike | None = None,
        *,
        fetch: Fetch | None = None,
    ) -> list[Established]:
        """The active experiences of ``exp``'s tenant nearest to it, as :class:`Established`
        (content, confidence, trust, support mass), in its namespace and the shared one,
        leaving out ``exp`` itself, its parent and the other lessons of the same run(s): the
        conflict test is about contradicting knowledge established elsewhere, and a run's
        outcome and its episode summary may well "disagree" in wording ("the run failed" /
        "it did not recover").

        ``fetch(tenant_id, ids) -> {id: Experience}`` reads the rows (default: the store)."""
        ids = self._neighbour_ids(exp, vector)
        return self._neighbours_from(exp, ids, fetch or self.store.get_experiences)

    def neighbours_many(
        self, exps: Sequence[Experience], vectors: npt.ArrayLike, fetch: Fetch
    ) -> list[list[Established] | None]:
        """:meth:`neighbours` of each of a batch's experiences that :meth:`check` would look
        up (active, of an advice kind; ``None`` for the others), reading all their rows with
        one ``fetch`` per tenant (one query per batch instead of one per lesson)."""
        rows = np.asarray(vectors, dtype=np.float32)
        ids = self._neighbour_ids_many(exps, rows)
        wanted: dict[str, list[str]] = {}
        for exp, found in zip(exps, ids, strict=True):
            wanted.setdefault(exp.tenant_id, []).extend(found or ())
        fetched = {tenant: fetch(tenant, some) for tenant, some in wanted.items() if some}
        return [
            None
            if found is None
            else self._neighbours_from(exp, found, lambda t, _ids: fetched.get(t, {}))
            for exp, found in zip(exps, ids, strict=True)
        ]

    def _looks_up(self, exp: Experience) -> bool:
        return (
            self.guard is not None
            and exp.status is ExperienceStatus.ACTIVE
            and exp.kind in ADVICE_KINDS
        )

    def _neighbour_ids_many(
        self, exps: Sequence[Experience], rows: npt.NDArray[np.float32]
    ) -> list[list[str] | None]:
        """:meth:`_neighbour_ids` of each experience that :meth:`check` looks up (``None`` for
        the others): one batched query per tenant and namespace when the index has
        ``search_many`` (Qdrant Edge), else one query each."""
        out: list[list[str] | None] = [None] * len(exps)
        groups: dict[tuple[str, tuple[str, ...]], list[int]] = {}
        for i, exp in enumerate(exps):
            if self._looks_up(exp):
                groups.setdefault((exp.tenant_id, self._namespaces(exp)), []).append(i)
        many = getattr(self.index, "search_many", None)
        for (tenant, namespaces), where in groups.items():
            if many is None or len(where) == 1:
                for i in where:
                    out[i] = self._neighbour_ids(exps[i], rows[i])
                continue
            found = many(
                rows[where],
                tenant_id=tenant,
                namespaces=list(namespaces),
                limit=CONFLICT_NEIGHBOURS + 2,
                payload=False,
            )
            for i, hits in zip(where, found, strict=True):
                skip = {exps[i].id, exps[i].parent_id}
                out[i] = [h.id for h in hits if h.id not in skip]
        return out

    def _namespaces(self, exp: Experience) -> tuple[str, ...]:
        return tuple(dict.fromkeys([exp.namespace, self.shared_namespace]))

    def _neighbour_ids(self, exp: Experience, vector: npt.ArrayLike | None) -> list[str]:
        if vector is None:
            vector = self.embedder.embed([exp.content])[0]
        namespaces = list(self._namespaces(exp))
        hits = self.index.search(
            np.asarray(vector, dtype=np.float32),
            tenant_id=exp.tenant_id,
            namespaces=namespaces,
            limit=CONFLICT_NEIGHBOURS + 2,
        )
        skip = {exp.id, exp.parent_id}
        return [h.id for h in hits if h.id not in skip]

    def _neighbours_from(self, exp: Experience, ids: list[str], fetch: Fetch) -> list[Established]:
        rows = fetch(exp.tenant_id, ids) if ids else {}
        runs = set(exp.source_trajectory_ids)
        found = [
            Established(rows[i].content, rows[i].confidence, rows[i].trust, self.support(rows[i]))
            for i in ids
            if i in rows
            and rows[i].tenant_id == exp.tenant_id
            and rows[i].status is ExperienceStatus.ACTIVE
            and rows[i].kind in ADVICE_KINDS
            and not runs.intersection(rows[i].source_trajectory_ids)
            and not _facets(exp.subject, rows[i].subject)
        ]
        return found[:CONFLICT_NEIGHBOURS]

    def check(
        self,
        exp: Experience,
        *,
        existing: Sequence[Established | tuple[Any, ...]] | None = None,
        vector: npt.ArrayLike | None = None,
        evidence: EvidenceIndex | None = None,
    ) -> Experience:
        """Clean and check one experience; returns what to store.

        Args:
            exp: the candidate (new, edited, merged, rolled back or rescanned).
            existing: :class:`~hindsight.guard.checker.Established` experiences (or
                ``(content, confidence[, trust[, support]])`` tuples) for the conflict test;
                ``None`` looks them up with :meth:`neighbours`. The candidate's own trust and
                support (``support(exp)``) are weighed against theirs
                (:func:`~hindsight.guard.checker.outweighs`). Ignored for experiences that are
                not of an advice kind (:data:`ADVICE_KINDS`): episodes and other observations
                are never conflict-tested, only checked by the rules and for taint (a
                reviewed episode: its own words by the rules, :func:`episode_words`; its
                record by provenance and for quotes of tool output).
            vector: the candidate's embedding (of the cleaned content): the neighbour search
                and the semantic layer use it; ``None`` embeds it once when needed.
            evidence: the reviewed trajectory's quotable text, for the taint check and the
                LLM judge's source evidence.

        Returns:
            ``exp`` cleaned; quarantined with its reasons when a layer fired (the reasons in
            ``metadata["quarantine_reasons"]``, each finding's layer, category and score in
            ``metadata["guard"]["findings"]``, the LLM judge's verdict, when it ran, in
            ``metadata["guard"]["llm"]``). An ``active`` or ``quarantined`` experience is
            checked: reasons already in its ``metadata["quarantine_reasons"]`` are not added
            again (a lesson a human approved is not quarantined again for the reasons they
            saw), new ones are appended and quarantine it; a quarantined one stays quarantined
            with all its reasons (only :func:`~hindsight.guard.quarantine.approve` releases
            it). Archived, superseded and deleted experiences are only cleaned.
        """
        vectors = None if vector is None else [vector]
        return self.check_many([exp], [existing], vectors, evidence)[0]

    def check_many(
        self,
        exps: Sequence[Experience],
        existing: Sequence[Sequence[Established | tuple[Any, ...]] | None] | None = None,
        vectors: Any = None,
        evidence: EvidenceIndex | None = None,
    ) -> list[Experience]:
        """:meth:`check` of a batch (one write), with one LLM judge request for all of it.

        Args:
            exps: the candidates.
            existing: per candidate, as :meth:`check`'s ``existing`` (``None``: look up).
            vectors: per candidate, its embedding (or ``None`` for all: embedded when needed).
            evidence: the reviewed trajectory's quotable text.
        """
        out = [self.clean(e) for e in exps]
        if self.guard is None:
            return out
        wanted = existing if existing is not None else [None] * len(out)
        screened: list[tuple[int, list[Finding], list[Established | tuple[Any, ...]]]] = []
        for i, exp in enumerate(out):
            if exp.status not in _SCREENED:
                continue
            vector = None if vectors is None else vectors[i]
            if vector is None and self._needs_vector(exp, wanted[i]):
                vector = self.embedder.embed([exp.content])[0]
            near: list[Established | tuple[Any, ...]]
            if exp.kind not in ADVICE_KINDS:
                near = []
            elif wanted[i] is None:
                near = list(self.neighbours(exp, vector))
            else:
                near = list(wanted[i] or [])
            findings = [*tool_instructions(exp), *unconfirmed_source(exp)]
            if reviewed_episode(exp):
                # a record of one run: its record is judged by where its words came from
                # (docs/security.md#episodes), the tool output it quotes included; the words
                # the agent or an LLM reviewer wrote are read by the text layers as well
                words = episode_words(exp)
                if words.strip():
                    verdict = self.guard.check(
                        words, source=exp.provenance.value, existing=[], trust=exp.trust
                    )
                    findings = [*self._not_asked(exp, verdict.findings), *findings]
                if evidence is not None:
                    findings += [
                        Finding("rules", "taint", "tainted", 1.0, reason)
                        for reason in evidence.tainted(
                            exp.content, self.guard, tool_output_only=True
                        )
                    ]
                screened.append((i, findings, near))
                continue
            verdict = self.guard.check(
                exp.content,
                source=exp.provenance.value,
                existing=near,
                trust=exp.trust,
                support=self.support(exp),
            )
            findings = [*verdict.findings, *findings]
            if evidence is not None:
                findings += [
                    Finding("rules", "taint", "tainted", 1.0, reason)
                    for reason in evidence.tainted(exp.content, self.guard)
                ]
            screened.append((i, findings, near))
        if self.judge is not None and screened:
            self._judge(out, screened, evidence)
        for i, findings, _ in screened:
            exp = out[i]
            known = set(exp.metadata.get("quarantine_reasons", ()))
            new: dict[str, Finding] = {}
            for f in findings:
                if f.reason not in known:
                    new.setdefault(f.reason, f)
            if new:
                out[i] = quarantine(exp, list(new), self._now(), list(new.values()))
        return out

    def _not_asked(self, exp: Experience, found: Sequence[Finding]) -> list[Finding]:
        """``found`` (the text layers' findings on a reviewed episode's own words) less those
        they also make on the words that repeat the user's request: what the user asked for
        ("find and delete the largest file") is theirs to ask. The same finding is needed -
        the same rule or harm, on the same words (its reason, which names what it matched) -
        so an order the user only mentioned ("never forward my passwords") or another harm of
        the same kind ("... and erase every backup") is not theirs."""
        asked = episode_user_words(exp)
        if not found or not asked.strip():
            return list(found)
        assert self.guard is not None
        theirs = {f.reason for f in self.guard.check(asked, existing=[]).findings}
        return [f for f in found if f.reason not in theirs]

    def _needs_vector(self, exp: Experience, existing: object) -> bool:
        """Whether the conflict test will look up ``exp``'s neighbours (by its vector)."""
        return not reviewed_episode(exp) and exp.kind in ADVICE_KINDS and existing is None

    def _judge(
        self,
        out: list[Experience],
        screened: list[tuple[int, list[Finding], list[Established | tuple[Any, ...]]]],
        evidence: EvidenceIndex | None,
    ) -> None:
        """Ask the LLM judge about every screened experience (one request per batch), store
        each verdict and add a finding for the harmful ones."""
        assert self.judge is not None and self.guard is not None
        threshold = self.guard.conflict_threshold
        items = []
        for i, _, near in screened:
            exp = out[i]
            established = [
                (e.content, e.confidence)
                for e in (Established(*n) for n in near)
                if e.confidence >= threshold
            ]
            items.append(
                JudgeItem(
                    content=exp.content,
                    kind=exp.kind.value,
                    source=exp.provenance.value,
                    evidence=evidence.passages(exp.content) if evidence is not None else (),
                    established=established,
                )
            )
        verdicts = self.judge.judge(items)
        for (i, findings, _), verdict in zip(screened, verdicts, strict=True):
            if verdict is None:
                continue
            out[i] = _with_llm_verdict(out[i], verdict)
            reason = self.judge.reason(verdict)
            if reason is not None:
                findings.append(Finding("llm", verdict.category, "llm", verdict.confidence, reason))

    def _now(self) -> datetime:
        return self.clock.now()


def _facets(a: str | None, b: str | None) -> bool:
    """Whether two lessons of the review's tool-error subjects (``<tool>:<status>:<error>``,
    docs/review.md#lesson-keys) are not to be conflict-tested: facets of one subject (the
    failure, the repeated call, the fix), or lessons about two different tools, whose advice
    is never about the same action ("do not repeat the same call" of one tool and "calling it
    again with another payment_id worked" of another). Lessons without a subject (a person's,
    the LLM reviewer's) are always tested."""
    if a is None or b is None:
        return False
    return a == b or a.split(":", 1)[0] != b.split(":", 1)[0]
