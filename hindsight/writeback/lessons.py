"""Lessons to experiences: the metadata every reviewed lesson is stored with (docs/concepts.md,
docs/security.md#layer-2-provenance-trust).

:func:`lessons_to_experiences` builds experiences from a reviewer's lessons with their
metadata (source trajectory, task_type, tools, trust, reviewer, embedding model), with ids that
make a second review of the same run store nothing twice; :func:`manual_experience` builds one
a caller adds directly (``add_experience``, no review).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from hindsight._contract import (
    Confidence,
    Content,
    Importance,
    Kind,
    Namespace,
    Source,
    Tags,
    TaskType,
    Tools,
    batch_size,
    check,
    unknown_field,
    validation_message,
)
from hindsight._errors import UsageError
from hindsight._ids import stable_id
from hindsight.guard import TRUST_WEIGHTS, initial_trust
from hindsight.guard.evidence import EvidenceIndex
from hindsight.guard.provenance import PROVENANCE_KEY, RunSpans, source_trust_names
from hindsight.guard.screening import check_user_metadata
from hindsight.guard.trust import canonical_source
from hindsight.models import Experience, ExperienceKind, Provenance, Trajectory
from hindsight.ports import Lesson
from hindsight.writeback.confidence import SUPPORT_KEY, check_support
from hindsight.writeback.text import dedup_key

__all__ = [
    "ADD_FIELDS",
    "PROVENANCE_TRUST",
    "lessons_to_experiences",
    "manual_experience",
    "normalize_content",
]

PROVENANCE_TRUST: Mapping[Provenance, float] = {p: TRUST_WEIGHTS[p.value] for p in Provenance}
"""Trust weight of a lesson by where its evidence came from (docs/security.md: system 1.0 > user
0.9 > tool 0.6 > unknown 0.5); the same numbers as :data:`hindsight.guard.TRUST_WEIGHTS`, which is
the one source of truth. Multiplied with the trajectory's own ``trust``, used as a factor at
recall."""

_WS = re.compile(r"\s+")


def normalize_content(text: str) -> str:
    """The matching form of a lesson's text: Unicode NFKC with runs of whitespace folded to
    one space, stripped. Used for keys only; stored text is kept exactly as given
    (docs/concepts.md, "Stored exactly")."""
    return _WS.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def lessons_to_experiences(
    traj: Trajectory,
    lessons: Sequence[Lesson],
    *,
    reviewer: str,
    embedding_model: str,
    now: datetime,
) -> list[Experience]:
    """One experience per lesson of ``traj``, with a deterministic id.

    The id is derived from (trajectory, reviewer, kind, the content up to case, whitespace and
    prose punctuation: :func:`hindsight.writeback.text.dedup_key`), so reviewing the same
    trajectory again yields the same ids and nothing is stored twice, while two lessons of one
    review that differ in a meaning-bearing mark (``x²`` / ``x2``, ``>`` / ``<``) get two
    ids. The stored content is the lesson's text as the reviewer wrote it,
    without surrounding whitespace (never NFKC-folded: "x²" stays "x²"). Lessons whose content
    is blank are skipped.

    Provenance (docs/security.md#provenance): each lesson's evidence sources come from what it
    quotes of the run (:func:`hindsight.guard.evidence.lesson_sources`: a lesson quoting tool
    output is ``tool`` evidence, otherwise the trajectory's ``source``), kept in
    ``metadata["evidence"]``, and from the span sources its words draw on
    (``metadata["provenance"]``, recorded by the review's gate before masking, or computed here
    from the stored text: :class:`hindsight.guard.provenance.RunSpans`). A lesson is worth
    its *least* trusted source: ``provenance`` is that source and
    ``trust = traj.trust * initial_trust([provenance])``, so quoting the user's request never
    lends the user's trust to words that came from a tool output. ``source_trajectory_ids`` is the
    reviewed run followed by the lesson's extra ``sources``, in order, without repeats.

    Evidence (docs/review.md): the lesson's ``metadata["support"]`` (checked,
    :func:`hindsight.writeback.confidence.check_support`), or when it gives none, each source
    run as supporting evidence (role ``source``). The reviewed run's entries get the lesson's
    ``trust``; the write path weighs the other runs (:meth:`WriteBack.write`); a trust given
    by the reviewer is not used.

    Raises:
        UsageError: a lesson's ``metadata["support"]`` is malformed (one line).
    """
    evidence = EvidenceIndex.of(traj)
    run = canonical_source(traj.source)
    spans: RunSpans | None = None
    out: dict[str, Experience] = {}
    for lesson in lessons:
        content = lesson.content.strip()
        key = normalize_content(content)
        if not key:
            continue
        record = lesson.metadata.get(PROVENANCE_KEY)
        if not isinstance(record, dict):
            spans = spans or RunSpans(traj)
            record = spans.provenance(content).to_dict()
        sources = evidence.sources(content)
        weakest = min(
            [*sources, *source_trust_names(record.get("sources") or [], run)],
            key=lambda s: TRUST_WEIGHTS[s],
        )
        trust = round(traj.trust * initial_trust([weakest]), 4)
        provenance = Provenance(weakest)
        exp_id = stable_id(traj.id, reviewer, lesson.kind.value, dedup_key(content))
        source_ids = list(dict.fromkeys([traj.id, *lesson.sources]))
        given = lesson.metadata.get(SUPPORT_KEY)
        support = (
            [{"trajectory_id": s, "polarity": 1, "role": "source"} for s in source_ids]
            if given is None
            else check_support(given, what="lesson metadata support")
        )
        for entry in support:
            entry.pop("trust", None)
            if entry["trajectory_id"] == traj.id:
                entry["trust"] = trust
        out[exp_id] = Experience(
            id=exp_id,
            tenant_id=traj.tenant_id,
            namespace=traj.namespace,
            task_type=traj.task_type,
            kind=lesson.kind,
            content=content,
            tools=lesson.tools,
            tags=sorted({*lesson.tags, *traj.tags}),
            confidence=lesson.confidence,
            importance=lesson.importance,
            trust=trust,
            provenance=provenance,
            source_trajectory_ids=source_ids,
            created_at=now,
            updated_at=now,
            embedding_model=embedding_model,
            reviewer=reviewer,
            metadata={
                **lesson.metadata,
                PROVENANCE_KEY: {**record, "origin": run},
                "evidence": sources,
                SUPPORT_KEY: support,
            },
        )
    return list(out.values())


def manual_experience(
    content: Any,
    *,
    tenant_id: str,
    namespace: Any,
    kind: Any,
    task_type: Any,
    tools: Any,
    tags: Any,
    confidence: Any,
    importance: Any,
    source: Any,
    metadata: Any,
    embedding_model: str,
    now: datetime,
) -> Experience:
    """The experience ``add_experience`` stores: reviewer ``"manual"``, content exactly as
    given (valid Unicode: :mod:`hindsight._text`), trust the weight of ``source``
    (:data:`hindsight.guard.TRUST_WEIGHTS`), ``metadata`` free of the keys the guard reserves.

    Raises:
        UsageError: an argument is invalid (one-line reason), or ``metadata`` uses a key
            reserved for the guard.
    """
    prov, what = check(Source, source), check(Kind, kind)
    text, where = check(Content, content), check(Namespace, namespace)
    task_type, tools, tags = check(TaskType, task_type), check(Tools, tools), check(Tags, tags)
    try:
        return Experience(
            tenant_id=tenant_id,
            namespace=where,
            kind=what,
            content=text,
            task_type=task_type,
            tools=tools,
            tags=tags,
            confidence=confidence,
            importance=importance,
            trust=initial_trust([prov.value]),
            provenance=prov,
            created_at=now,
            updated_at=now,
            embedding_model=embedding_model,
            reviewer="manual",
            metadata=check_user_metadata(metadata),
        )
    except ValidationError as err:
        raise UsageError(validation_message(err)) from None
    except UsageError:
        raise
    except ValueError as err:
        raise UsageError(str(err)) from None


ADD_FIELDS = (
    "content",
    "namespace",
    "kind",
    "task_type",
    "tools",
    "tags",
    "confidence",
    "importance",
    "source",
    "metadata",
)
"""The fields of one ``add_experiences`` item: ``add_experience``'s arguments but the tenant."""


def manual_experiences(
    items: Any, *, tenant_id: str, embedding_model: str, now: datetime
) -> list[Experience]:
    """The experiences a batch of ``add_experiences`` items stores, each as
    :func:`manual_experience` builds it (``content`` required, the other
    :data:`ADD_FIELDS` optional with ``add_experience``'s defaults).

    Every item is checked before any is built into the result, so an invalid batch is
    refused as a whole.

    Raises:
        UsageError: ``items`` is not a list of mappings, or one item is invalid: one line
            naming the item's index and field (``item 3: confidence: ...``).
    """
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Sequence):
        raise UsageError(
            f"items must be a list of objects, got {type(items).__name__}", field="items"
        )
    batch_size(items)
    out: list[Experience] = []
    for index, item in enumerate(items):
        at = f"items.{index}"
        if not isinstance(item, Mapping):
            raise UsageError(
                f"item {index}: must be an object, got {type(item).__name__}", field=at
            )
        unknown = [k for k in item if k not in ADD_FIELDS]
        if unknown:
            raise UsageError(
                f"item {index}: {unknown_field(unknown[0], ADD_FIELDS)}",
                field=f"{at}.{str(unknown[0])[:80]}",
            )
        if "content" not in item:
            raise UsageError(f"item {index}: content: field required", field=f"{at}.content")
        try:
            out.append(
                manual_experience(
                    item["content"],
                    tenant_id=tenant_id,
                    namespace=item.get("namespace", "default"),
                    kind=item.get("kind", ExperienceKind.RULE),
                    task_type=item.get("task_type"),
                    tools=item.get("tools", ()),
                    tags=item.get("tags", ()),
                    confidence=check(Confidence, item.get("confidence", 0.5)),
                    importance=check(Importance, item.get("importance", 0.5)),
                    source=item.get("source", Provenance.USER),
                    metadata=item.get("metadata"),
                    embedding_model=embedding_model,
                    now=now,
                )
            )
        except UsageError as err:
            field = f"{at}.{err.field}" if err.field else at
            raise UsageError(f"item {index}: {err}", field=field) from None
    return out
