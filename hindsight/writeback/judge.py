"""The LLM write-back judge: ADD / UPDATE / MERGE / NOOP for a new lesson (ExpeL-style
operations: an LLM may decide update-vs-merge), through litellm with forced JSON
(docs/lifecycle.md#dedup-on-write-hindsightwritebackdedup).

Used by :class:`hindsight.writeback.dedup.Deduper` when ``config.reflection_model`` is set.
The judge sees the new lesson and up to five similar stored lessons (ids and texts) and
answers ``{"operation", "target_id", "content", "reason"}``:

* ``ADD`` - a different lesson; stored as a new experience.
* ``UPDATE`` - the new lesson replaces ``target_id`` (a corrected value, a changed fact): the
  older one is superseded (kept, never recalled, restorable).
* ``MERGE`` - both say the same; ``target_id`` absorbs the new one's sources, optionally
  reworded to ``content`` (a new version; the old text stays in its history).
* ``NOOP`` - ``target_id`` already says this; it gains support.

Any failure (timeout, HTTP error, unparsable reply, an unknown ``target_id``, an empty merged
text) returns ``None`` and the rules decide instead: a lesson is never lost to a bad reply.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hindsight.models import Experience
from hindsight.writeback.decision import Decision, Op

__all__ = ["JUDGE_PROMPT", "Judge", "JudgeReply"]

log = logging.getLogger("hindsight")

JUDGE_PROMPT = """You maintain an experience memory for AI agents. A new lesson was learned.
Compare it with similar stored lessons and choose ONE operation:
- ADD: it is a different lesson (other subject, other tool, other situation).
- UPDATE: it corrects or replaces one stored lesson (a changed value, a newer fact); give its id.
- MERGE: it says the same as one stored lesson; give its id and, if useful, one merged wording.
- NOOP: one stored lesson already says exactly this; give its id.
Lessons that differ in a number, a version, a tool or a named entity are not the same lesson.
Answer with JSON only: {"operation": "ADD|UPDATE|MERGE|NOOP", "target_id": "<id or null>",
"content": "<merged wording or null>", "reason": "<one sentence>"}"""

_OPS = {"ADD": Op.ADD, "UPDATE": Op.SUPERSEDE, "MERGE": Op.MERGE, "NOOP": Op.NOOP}


class JudgeReply(BaseModel):
    """The judge's forced-JSON answer."""

    model_config = ConfigDict(extra="ignore")

    operation: Literal["ADD", "UPDATE", "MERGE", "NOOP"]
    target_id: str | None = None
    content: str | None = Field(default=None, max_length=4000)
    reason: str = Field(default="", max_length=1000)


class Judge:
    """Asks a chat model through litellm (sync; the write path runs in a worker thread).

    Args:
        model: litellm model name, e.g. ``"openai/gpt-4o-mini"`` (``REFLECTION_MODEL``).
        api_base: provider base URL (``LLM_BASE_URL``), e.g. ``"http://127.0.0.1:8000/v1"``.
        api_key: provider key (``LLM_API_KEY``); a keyless ``openai/`` server gets a
            placeholder, as in the LLM reviewer.
        timeout: seconds per request (default 30; litellm's own default is 6000 s).
        temperature: 0.0 (a decision, not prose).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout: float = 30.0,
        temperature: float = 0.0,
    ) -> None:
        self.model = model
        self.api_base = api_base or None
        self.api_key = api_key or None
        self.timeout = float(timeout)
        self.temperature = float(temperature)
        self.calls = 0
        self.failures = 0

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        key = self.api_key
        if (
            key is None
            and self.api_base is not None
            and self.model.startswith("openai/")
            and not os.environ.get("OPENAI_API_KEY")
        ):
            key = "no-key"
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": 400,
            "timeout": self.timeout,
            "response_format": JudgeReply,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if self.api_base is not None:
            request["api_base"] = self.api_base
        if key is not None:
            request["api_key"] = key
        return request

    @staticmethod
    def messages(
        new: Experience, candidates: Sequence[tuple[Experience, float]]
    ) -> list[dict[str, str]]:
        """The chat messages sent for ``new`` and its ``candidates``."""
        stored = [
            {"id": c.id, "content": c.content, "kind": c.kind.value, "similarity": round(s, 3)}
            for c, s in candidates
        ]
        user = json.dumps(
            {"new_lesson": {"content": new.content, "kind": new.kind.value}, "stored": stored},
            ensure_ascii=False,
            indent=1,
        )
        return [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": user}]

    def ask(self, new: Experience, candidates: Sequence[tuple[Experience, float]]) -> JudgeReply:
        """One request; returns the validated reply.

        Raises:
            Exception: whatever litellm raised, or ValueError / ValidationError for a reply
                that is not a valid judgement.
        """
        import litellm

        from hindsight._llm import reply_object, reply_text

        self.calls += 1
        response = litellm.completion(**self._request(self.messages(new, candidates)))
        return JudgeReply.model_validate(reply_object(reply_text(response)))

    def decide(
        self, new: Experience, candidates: Sequence[tuple[Experience, float]]
    ) -> Decision | None:
        """The judge's decision, or ``None`` (the rules decide) when it failed or is invalid."""
        try:
            reply = self.ask(new, candidates)
        except (ValidationError, ValueError) as exc:
            return self._fail(f"invalid reply: {str(exc).splitlines()[0]}")
        except Exception as exc:  # any provider failure: the rules decide
            return self._fail(
                f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            )
        op = _OPS[reply.operation]
        reason = f"judge: {reply.reason}".strip()
        if op is Op.ADD:
            return Decision(Op.ADD, reason=reason, by="judge")
        by_id = {c.id: (c, s) for c, s in candidates}
        target = by_id.get((reply.target_id or "").strip().lower())
        if target is None:
            return self._fail(f"{reply.operation} names unknown target {reply.target_id!r}")
        content = (reply.content or "").strip() or None if op is Op.MERGE else None
        return Decision(op, target[0], target[1], reason, content=content, by="judge")

    def _fail(self, why: str) -> Decision | None:
        self.failures += 1
        log.warning("hindsight: write-back judge %s failed (%s); the rules decide", self.model, why)
        return None


ABSTRACT_PROMPT = """You maintain an experience memory for AI agents. These stored lessons are
similar. Write ONE general rule of the form "when X, do Y" that keeps what they share and
drops run-specific details (ids, amounts, dates). Keep the language of the lessons.
Answer with JSON only: {"content": "<the rule>"}"""


class AbstractReply(BaseModel):
    """The compression summarizer's forced-JSON answer."""

    model_config = ConfigDict(extra="ignore")

    content: str = Field(min_length=1, max_length=2000)


def abstract(judge: Judge, members: Sequence[Experience]) -> str | None:
    """One more general rule for a cluster (compression), or ``None`` when the model failed
    (the most supported member then stands for the cluster)."""
    import litellm

    from hindsight._llm import reply_object, reply_text

    lessons = [{"content": m.content, "support": m.support_count} for m in members[:20]]
    messages = [
        {"role": "system", "content": ABSTRACT_PROMPT},
        {"role": "user", "content": json.dumps({"lessons": lessons}, ensure_ascii=False)},
    ]
    request = judge._request(messages)
    request["response_format"] = AbstractReply
    try:
        judge.calls += 1
        response = litellm.completion(**request)
        text = AbstractReply.model_validate(reply_object(reply_text(response))).content.strip()
    except Exception as exc:  # any provider or parse failure: no abstraction
        judge._fail(f"abstract: {type(exc).__name__}")
        return None
    return text or None
