"""The lesson builders of the heuristic reviewer (docs/review.md#what-a-review-learns).

Every builder takes a :class:`Context` (the run's calls, language, outcome and masker) and
returns :class:`~hindsight.ports.Lesson` objects whose content is one general sentence about a
tool or a step, masked of run-specific values. What only restates the run (its outcome, its
last step, its task sentence) is not a lesson: it is the run's episode
(:mod:`hindsight.review.episodes`).

Each lesson carries, in ``metadata`` (the contract with write-back, docs/review.md):

* ``lesson_key`` - its identity across runs and tasks (``tool_error:<tool>:<status>:<masked
  error>``, ``anti_pattern:...``, ``fix:...``): write-back folds a
  lesson into the active experience with the same key, so the same failure seen in 25 runs is
  one lesson with 25 sources, not 25 lessons;
* ``subject`` - the tool error it is about (``<tool>:<status>:<masked error>``), shared by
  the failure, the repeated call and the fix of one error, so that recall shows one of them
  (docs/concepts.md#recall);
* ``support`` - the runs that are evidence for it (``trajectory_id``, ``polarity`` +1,
  ``role``), from which write-back derives its confidence
  (:mod:`hindsight.writeback.confidence`).

Initial confidences (the reviewer's self-assessment, the prior of that derivation) are module
constants: higher where the run observed the fact, lower where a cause is inferred.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hindsight.models import EventStatus, ExperienceKind, Outcome
from hindsight.ports import Lesson
from hindsight.review._calls import ERROR_CHARS, ToolCall, error_quote, error_subject, is_read_only
from hindsight.review._text import error_text, shorten, tokens
from hindsight.review.contrast import (
    numbers_in,
    readable_class,
    value_class,
)
from hindsight.review.heuristic._templates import Lang, advice_for, render, repeat_advice
from hindsight.review.masking import Masker, is_categorical
from hindsight.writeback import variants

__all__ = [
    "ANTI_PATTERN_CONFIDENCE",
    "FIX_CONFIDENCE",
    "FIX_OTHER_TOOL_CONFIDENCE",
    "FIX_WITHOUT_SUCCESS_CONFIDENCE",
    "IMPORTANCE",
    "MAX_LESSON_CHARS",
    "TOOL_RELIABILITY_CONFIDENCE",
    "Context",
    "anti_patterns",
    "fixes",
    "tool_reliability",
]

#: A tool's error text is observed; the conditions and advice drawn from it are inferred.
TOOL_RELIABILITY_CONFIDENCE = 0.7
#: Fully observed: the same call with the same arguments failed the same way more than once.
ANTI_PATTERN_CONFIDENCE = 0.75
#: The later call went through and the run succeeded; that the change caused it is inferred.
FIX_CONFIDENCE = 0.6
#: The later call went through and the run did not succeed (or no outcome is known): weaker.
FIX_WITHOUT_SUCCESS_CONFIDENCE = 0.45
#: A substitute tool is guessed from shared argument names, a weaker inference.
FIX_OTHER_TOOL_CONFIDENCE = 0.4

#: Importance in [0,1] per kind: how much a lesson of this kind can change a future run.
IMPORTANCE: dict[ExperienceKind, float] = {
    ExperienceKind.RULE: 0.8,
    ExperienceKind.IMPROVEMENT: 0.75,
    ExperienceKind.TOOL_RELIABILITY: 0.7,
    ExperienceKind.ANTI_PATTERN: 0.6,
}

#: Upper bound of a lesson's length in characters.
MAX_LESSON_CHARS = 320


@dataclass(frozen=True)
class Context:
    """What the builders need to know about one run.

    Attributes:
        lang: template language.
        trajectory_id: the run's id (the support of its lessons).
        calls: the run's tool calls in order.
        outcome: the run's outcome.
        masker: masks the run's values (and those of any reference run).
    """

    lang: Lang
    trajectory_id: str
    calls: list[ToolCall]
    outcome: Outcome
    masker: Masker = field(default_factory=Masker)


def _lesson(
    ctx: Context,
    kind: ExperienceKind,
    content: str,
    confidence: float,
    tools: Sequence[str],
    key: str,
    support: Sequence[dict[str, Any]],
    sources: Sequence[str] = (),
    **metadata: Any,
) -> Lesson:
    return Lesson(
        kind=kind,
        content=shorten(ctx.masker.mask(content), MAX_LESSON_CHARS),
        confidence=round(confidence, 3),
        importance=IMPORTANCE[kind],
        tools=list(dict.fromkeys(tools)),
        sources=list(dict.fromkeys(s for s in sources if s != ctx.trajectory_id)),
        metadata={
            "lesson_key": key,
            "support": list(support),
            **{k: v for k, v in metadata.items() if v is not None},
        },
    )


def _observed(ctx: Context, role: str) -> dict[str, Any]:
    return {"trajectory_id": ctx.trajectory_id, "polarity": 1, "role": role}


def _no_error(lang: str) -> str:
    return "no error message" if lang == "en" else "无错误信息"


def _error(ctx: Context, call: ToolCall) -> str:
    return error_quote(call, ctx.masker.mask) or _no_error(ctx.lang)


def _failure(ctx: Context, call: ToolCall) -> str:
    if call.status is EventStatus.TIMEOUT:
        return render("timed_out", ctx.lang)
    return render("failed_with", ctx.lang, error=_error(ctx, call))


def _error_key(ctx: Context, call: ToolCall) -> str:
    return error_subject(call, ctx.masker.mask, _no_error(ctx.lang))


def tool_reliability(ctx: Context) -> list[Lesson]:
    """Which tool failed or timed out: one lesson per tool and masked error, with general
    advice for that kind of error. The conditions under which it fails are not read from this
    run's arguments (one run cannot tell which of them mattered): condition mining finds them
    across runs (docs/review.md#condition-mining)."""
    groups: dict[str, list[ToolCall]] = {}
    for call in ctx.calls:
        if call.failed:
            groups.setdefault(_error_key(ctx, call), []).append(call)
    lessons = []
    for key, group in groups.items():
        first = group[0]
        error = _error(ctx, first)
        if first.status is EventStatus.TIMEOUT:
            content = render("tool_timeout", ctx.lang, tool=first.tool)
        else:
            content = render(
                "tool_failure",
                ctx.lang,
                tool=first.tool,
                error=error,
                advice=advice_for(error, ctx.lang),
            )
        lessons.append(
            _lesson(
                ctx,
                ExperienceKind.TOOL_RELIABILITY,
                content,
                TOOL_RELIABILITY_CONFIDENCE,
                [first.tool],
                f"tool_error:{key}",
                [_observed(ctx, "error_observed")],
                occurrences=len(group),
                status=str(first.status),
                subject=key,
            )
        )
    return lessons


def anti_patterns(ctx: Context) -> list[Lesson]:
    """Review question 4: the same failing call (same tool, same arguments) repeated, and
    not going through in the end (a retry that worked is a fix, :func:`fixes`)."""
    repeats: dict[str, list[ToolCall]] = {}
    for call in ctx.calls:
        if call.failed:
            repeats.setdefault(call.signature, []).append(call)
    lessons = []
    seen: set[str] = set()
    for group in repeats.values():
        first = group[0]
        key = f"anti_pattern:{_error_key(ctx, first)}"
        if len(group) < 2 or key in seen:
            continue
        if any(
            c.signature == first.signature and c.succeeded and c.position > group[-1].position
            for c in ctx.calls
        ):
            continue  # the same call went through in the end: repeating it was not the error
        seen.add(key)
        timed_out = first.status is EventStatus.TIMEOUT
        content = render(
            "anti_pattern",
            ctx.lang,
            tool=first.tool,
            failure=_failure(ctx, first),
            advice=repeat_advice(None if timed_out else _error(ctx, first), ctx.lang),
        )
        lessons.append(
            _lesson(
                ctx,
                ExperienceKind.ANTI_PATTERN,
                content,
                ANTI_PATTERN_CONFIDENCE,
                [first.tool],
                key,
                [_observed(ctx, "repeat_observed")],
                occurrences=len(group),
                subject=_error_key(ctx, first),
            )
        )
    return lessons


def _own_count(key: str, cls: str) -> str | None:
    """``cls`` as ``N x item`` when it counts ``key``'s own items (``3 x flight`` or, under a
    plural key, the bare ``flight`` of a one-item list), else ``None``."""
    plural = key.endswith("s") and not key.endswith("ss")
    item = (key[:-1] if plural else key).replace("_", " ")
    if re.sub(r"^\d+ x ", "", cls) != item:
        return None
    if cls == item:
        return f"1 x {item}" if plural else None
    return cls


def _arg_text(ctx: Context, key: str, cls: str) -> str:
    """An argument by its class in a lesson's text: ``key=class``, or the count alone when
    the class counts the key's own items (``3 flights``, not ``flights=3 x flight``)."""
    own = _own_count(key, cls)
    if own is not None:
        return readable_class(own, lang=ctx.lang)
    return f"{key}={readable_class(cls, lang=ctx.lang)}"


def _change_value(ctx: Context, key: str, old: str, new: str) -> str:
    """``key old -> new`` in words; counts of the key's own items without the key
    ("3 flights -> 1 flight", not "flights 3 x flight -> flight")."""
    own_old, own_new = _own_count(key, old), _own_count(key, new)
    if own_old is not None and own_new is not None:
        return render(
            "change_count",
            ctx.lang,
            old=readable_class(own_old, lang=ctx.lang),
            new=readable_class(own_new, lang=ctx.lang),
        )
    old_text = readable_class(old, new, ctx.lang)
    new_text = readable_class(new, old, ctx.lang)
    return render("change_value", ctx.lang, key=key, old=old_text, new=new_text)


def _changes(ctx: Context, before: dict[str, Any], after: dict[str, Any]) -> str:
    phrases = []
    for key in dict.fromkeys([*after, *before]):
        if key in before and key in after and before[key] == after[key]:
            continue
        if key not in before:
            phrases.append(render("change_added", ctx.lang, key=key, value=""))
        elif key not in after:
            phrases.append(render("change_dropped", ctx.lang, key=key))
        else:
            old = value_class(str(key), before[key], ctx.masker)
            new = value_class(str(key), after[key], ctx.masker)
            if old != new and not (old.startswith("a ") or new.startswith("a ")):
                phrase = _change_value(ctx, str(key), old, new)
                if _other_amounts(before[key], after[key]):
                    phrase = render("change_amounts", ctx.lang, change=phrase)
                phrases.append(phrase)
            else:
                plural = str(key).endswith("s") and not str(key).endswith("ss")
                phrases.append(
                    render("change_others" if plural else "change_other", ctx.lang, key=key)
                )
    return render("change_join", ctx.lang).join(phrases[:3])


def _other_amounts(before: Any, after: Any) -> bool:
    """True when the numbers inside an argument changed other than by items dropped or added
    (``certificate 299`` -> ``gift_card 128 + credit_card 247``): the change of kinds alone
    is not all that made the call go through."""
    old, new = Counter(numbers_in(before)), Counter(numbers_in(after))
    return bool(old or new) and not (old <= new or new <= old)


def _related(failed: ToolCall, fix: ToolCall) -> bool:
    """True when an argument that changed between ``failed`` and ``fix`` shares a word with
    ``failed``'s error (``flights`` for "not enough seats on flight ...")."""
    error = tokens(error_text(failed.output, ERROR_CHARS))
    changed = {k for k in {*failed.args, *fix.args} if failed.args.get(k) != fix.args.get(k)}
    return any(tokens(str(k)) & error for k in changed)


_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _name_words(tool: str) -> frozenset[str]:
    """The words of a tool name: ``restart_service_via_ssh`` -> restart, service, via, ssh;
    ``getOrderV2`` -> get, order, v, 2."""
    return frozenset(w.lower() for w in _NAME_WORDS.findall(tool))


def _values(args: dict[str, Any]) -> set[str]:
    """The argument values that name one thing (strings of 3+ characters that are not an
    everyday word or category such as ``json`` or ``economy``, numbers of 2+ digits), as
    text: what two calls on the same object share whatever their keys."""
    out = set()
    for value in args.values():
        if isinstance(value, str) and len(value.strip()) >= 3 and not is_categorical(value):
            out.add(value.strip())
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10:
            out.add(str(value))
    return out


def _substitute(ctx: Context, failed: ToolCall) -> ToolCall | None:
    """A later successful call of another tool of the same sort (both read-only or both not)
    that does the same job: it shares most argument names (a cached twin), or its name holds
    every word of the failed tool's and more (``restart_service`` ->
    ``restart_service_via_ssh``, ``getOrder`` -> ``getOrderV2``; never a broader tool, not
    ``cancel_order_item`` -> ``cancel_order``) and it passes a value the failed call passed
    (the same host, the same order)."""
    keys = set(failed.args)
    if not keys:
        return None
    words, values = _name_words(failed.tool), _values(failed.args)
    for call in ctx.calls:
        if call.position <= failed.position or not call.succeeded or call.tool == failed.tool:
            continue
        if is_read_only(call.tool) != is_read_only(failed.tool):
            continue
        other, theirs = set(call.args), _name_words(call.tool)
        if theirs < words:
            continue  # a broader tool (cancel_order for cancel_order_item): another job
        if other and len(keys & other) / len(keys | other) >= 0.5:
            return call
        if words and words < theirs and values & _values(call.args):
            return call
    return None


def fixes(ctx: Context) -> list[Lesson]:
    """Review question 5: a failure followed by a call that went through, and what changed.

    In a successful run the later call "worked". Otherwise it only "went through", at a lower
    confidence: with no outcome known (no reward, no ``set_outcome``), a change of the call's
    arguments counts only when it is about the error itself; in a run known to have failed, a
    change of arguments never counts: the changed request (fewer legs of a trip, another means
    of payment) may be what made the run fail, and nothing in the run says it helps (a change
    that separates outcomes across runs is condition mining's to find,
    docs/review.md#condition-mining). A later call of another tool of the same sort (sharing
    most argument names, e.g. a cached twin) still counts there. The error itself is a
    ``tool_reliability`` lesson either way.
    """
    won = ctx.outcome in (Outcome.SUCCESS, Outcome.PARTIAL)
    failed_run = ctx.outcome is Outcome.FAILURE
    result = render("worked" if won else "went_through", ctx.lang)
    lessons = []
    seen: set[str] = set()
    for failed in ctx.calls:
        if not failed.failed or _error_key(ctx, failed) in seen:
            continue
        seen.add(_error_key(ctx, failed))
        failure = _failure(ctx, failed)
        fix = next(
            (
                c
                for c in ctx.calls
                if c.position > failed.position and c.tool == failed.tool and c.succeeded
            ),
            None,
        )
        if fix is not None and (failed_run or not (won or _related(failed, fix))):
            continue  # the changed request may be why the run failed (docstring)
        if fix is not None:
            changes = _changes(ctx, failed.args, fix.args)
            # the same call failing before the fix: one retry, or several ("retry once"
            # would be wrong advice when it took three)
            before = sum(
                1
                for c in ctx.calls
                if c.failed and c.signature == fix.signature
                and failed.position <= c.position < fix.position
            )  # fmt: skip
            template = "fix_changed" if changes else "fix_retries" if before > 1 else "fix_retry"
            content = render(
                template, ctx.lang, tool=failed.tool, failure=failure, changes=changes,
                result=result, attempt=before + 1, failed=before,
            )  # fmt: skip
            confidence = FIX_CONFIDENCE if won else FIX_WITHOUT_SUCCESS_CONFIDENCE
            # one lesson per error and result: another run's change is another value of its
            # one varying part (hindsight.writeback.variants), not another lesson
            kind_of_fix = "changed" if changes else "retries" if before > 1 else "retry"
            key = f"fix:{_error_key(ctx, failed)}:{kind_of_fix}:{'worked' if won else 'through'}"
            extra: dict[str, Any] = (
                {variants.KEY: _variants_entry(ctx, content, changes, "variants_join")}
                if changes
                else {}
            )
            tools = [failed.tool]
        else:
            other = _substitute(ctx, failed)
            if other is None:
                continue
            content = render(
                "fix_other", ctx.lang, tool=failed.tool, failure=failure, other=other.tool,
                args="", result=result,
            )  # fmt: skip
            confidence = FIX_OTHER_TOOL_CONFIDENCE
            key = f"fix:{_error_key(ctx, failed)}:use:{other.tool}"
            extra = {}
            tools = [failed.tool, other.tool]
        lessons.append(
            _lesson(
                ctx,
                ExperienceKind.IMPROVEMENT,
                content,
                confidence,
                tools,
                key,
                [_observed(ctx, "fix_observed" if won else "fix_without_success")],
                subject=_error_key(ctx, failed),
                **extra,
            )
        )
    return lessons


def _variants_entry(ctx: Context, content: str, part: str, join: str) -> dict[str, Any] | None:
    """The varying part of a lesson (the change of a fix, what a failed run did instead of a
    missing call): its masked text with the masked ``part`` as the slot and the template
    ``join`` as the separator (:mod:`hindsight.writeback.variants`), or ``None`` when the part
    cannot be found once in the text (it was shortened, or masking joined it with its
    neighbours)."""
    text, value = ctx.masker.mask(content), ctx.masker.mask(part)
    if not value or text.count(value) != 1 or variants.SLOT in text:
        return None
    template = text.replace(value, variants.SLOT)
    if len(template) > MAX_LESSON_CHARS - variants.MAX_SHOWN * len(value):
        return None  # three changes would not fit in one lesson
    return {
        "template": template,
        "values": [value],
        "join": render(join, ctx.lang),
    }
