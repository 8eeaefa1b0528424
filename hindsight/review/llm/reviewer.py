"""Post-hoc review by a language model through litellm (docs/review.md).

:class:`LLMReviewer` compresses a finished trajectory to a token budget
(:mod:`hindsight.review.compress`), adds the passages of its policy that the run touches
(:mod:`hindsight.review.policy`) and its outcome evidence, asks a separately configured,
usually cheaper model the six constrained questions of :mod:`hindsight.review.llm.prompts` in
forced JSON, repairs or re-asks when the reply is malformed (:mod:`hindsight.review.llm._parse`),
and turns the general answers into lessons (what restates the run goes into its episode).
:meth:`LLMReviewer.contrast` compares a failed run with a successful run of the same task, or
with its expected actions (:mod:`hindsight.review.llm.contrast`, ExpeL-style).
Any litellm provider works: ``openai/<model>`` with ``api_base`` for an
OpenAI-compatible server, ``ollama/qwen2.5:7b``, ``anthropic/...``, ``gpt-4o-mini``.

litellm is imported on first use (it takes seconds to import) and every setting travels with
each call. One global is set: ``litellm.suppress_debug_info = True``, because litellm otherwise
``print``s a debugging hint to stdout on every provider error, which would corrupt a CLI's
``--json`` output or an MCP stdio stream while a review runs in the background.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from pydantic import BaseModel

from hindsight._errors import ReviewError, UsageError
from hindsight._llm import reply_text
from hindsight.config import MemoryConfig
from hindsight.models import EventType, ExpectedAction, ExperienceKind, Trajectory
from hindsight.ports import Lesson
from hindsight.review.compress import MIN_BUDGET, CompressedTrajectory, compress_trajectory
from hindsight.review.episodes import summarize_episode
from hindsight.review.gate import LessonGate
from hindsight.review.llm._parse import ReportParseError, parse_reply
from hindsight.review.llm.contrast import (
    ContrastReport,
    build_contrast_messages,
    contrast_to_lessons,
    differing_tools,
    render_expected_actions,
)
from hindsight.review.llm.prompts import (
    ReviewReport,
    build_messages,
    render_outcome,
    report_to_lessons,
    trajectory_language,
)
from hindsight.review.policy import PolicyExcerpt, run_terms, select_policy
from hindsight.tokens import estimate_tokens

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "OUTCOME_SHARE",
    "POLICY_SHARE",
    "LLMReviewer",
    "ReviewTimeoutError",
]

DEFAULT_MAX_TOKENS = 1024
"""Default ``max_tokens`` of a reply. A single-run reply at its longest (six answers of at most
40 words, three rules with their evidence, a 120-word episode, the JSON keys) is about 800
tokens of English, a contrastive one (five differences, a turning point, three rules) about
600; 512 (the review template's "~512") cut the longest of them off mid-string."""

OUTCOME_SHARE = 0.15
"""Largest share of ``max_input_tokens`` the outcome evidence may take."""

CONDITIONS_SHARE = 0.1
"""Largest share of ``max_input_tokens`` the mined conditions about the run's tools may take
(docs/review.md#condition-mining)."""

POLICY_SHARE = 0.35
"""Share of ``max_input_tokens`` kept for the policy excerpt before the run is compressed; the
run's leftover goes to the policy too, and a short policy takes only what it needs."""

log = logging.getLogger("hindsight.review")

MAX_BACKOFF = 30.0
"""Longest wait between two tries of one request, in seconds (also caps ``Retry-After``)."""

_RETRY_STATUS = frozenset({408, 409, 425, 429})
_BAD_REPLY_CHARS = 4000  # a malformed reply is echoed back to the model at most this long
_NO_KEY = "no-key"  # placeholder for keyless OpenAI-compatible servers (the SDK demands a key)


class ReviewTimeoutError(ReviewError):
    """The model did not answer within the timeout, on the first try and every retry."""


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _is_timeout(exc: BaseException) -> bool:
    from litellm.exceptions import Timeout

    return isinstance(exc, Timeout | httpx.TimeoutException | asyncio.TimeoutError)


def _is_retryable(exc: BaseException) -> bool:
    """429, 408/409/425, any 5xx, timeouts and connection errors are worth another try."""
    from litellm.exceptions import APIConnectionError

    if _is_timeout(exc) or isinstance(exc, APIConnectionError | httpx.TransportError):
        return True
    status = _status_of(exc)
    return status is not None and (status in _RETRY_STATUS or status >= 500)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header of the error's HTTP response, if any."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        return None


def _litellm() -> Any:
    """litellm, kept from printing to stdout (see the module docstring)."""
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 500 else text[:500] + "…"


class LLMReviewer:
    """A :class:`~hindsight.ports.Reviewer` that asks a language model (docs/review.md).

    Args:
        model: litellm model name, e.g. ``"openai/gpt-4o-mini"``, ``"ollama/qwen2.5:7b"``;
            config ``REFLECTION_MODEL``.
        api_base: base URL of the provider, e.g. ``"http://127.0.0.1:8000/v1"`` for an
            OpenAI-compatible server; config ``LLM_BASE_URL``. ``None``: the provider's default.
        api_key: the provider's key; config ``LLM_API_KEY``. ``None``: litellm's usual
            environment variables; for an ``openai/`` model with an ``api_base`` and no key
            anywhere, a placeholder is sent, since keyless local servers ignore it.
        temperature: sampling temperature, 0.2 (the review template: 0.2-0.3).
        max_tokens: maximum tokens of the reply, :data:`DEFAULT_MAX_TOKENS` (1024: what the
            longest single-run or contrastive reply needs; the review template says ~512).
        timeout: seconds one HTTP request may take, 30.0 (clients use ~30 s);
            always passed, since litellm's own default is 6000 s.
        num_retries: extra tries of one request after a 429, a 5xx, a timeout or a connection
            error, with exponential backoff (``backoff * 2**n`` seconds, jittered, at least the
            server's ``Retry-After``, at most :data:`MAX_BACKOFF`); 2.
        max_input_tokens: token budget of what the request shows of the run, 6000: its
            outcome evidence (at most :data:`OUTCOME_SHARE`), its policy excerpt and the
            compressed trajectory (for a contrastive request: both runs, or the failed run and
            the expected actions); the system prompt and the few-shot example add about 2,000
            more.
        few_shot: include the short example exchange of :mod:`hindsight.review.llm.prompts`.
        backoff: base of the backoff, in seconds, 0.5.

    Raises:
        UsageError: an empty model name or an out-of-range number.
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.2,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        timeout: float = 30.0,
        num_retries: int = 2,
        max_input_tokens: int = 6000,
        few_shot: bool = True,
        backoff: float = 0.5,
    ) -> None:
        if not model or not model.strip():
            raise UsageError("LLMReviewer needs a model name, e.g. 'openai/gpt-4o-mini'")
        if timeout <= 0:
            raise UsageError(f"timeout must be > 0 seconds, got {timeout}")
        if num_retries < 0:
            raise UsageError(f"num_retries must be >= 0, got {num_retries}")
        if max_tokens < 1:
            raise UsageError(f"max_tokens must be >= 1, got {max_tokens}")
        if max_input_tokens < MIN_BUDGET:
            raise UsageError(f"max_input_tokens must be >= {MIN_BUDGET}, got {max_input_tokens}")
        if backoff < 0:
            raise UsageError(f"backoff must be >= 0 seconds, got {backoff}")
        self.model = model.strip()
        self.name = f"llm:{self.model}"
        self.api_base = api_base or None
        self.api_key = api_key or None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = float(timeout)
        self.num_retries = num_retries
        self.max_input_tokens = max_input_tokens
        self.few_shot = few_shot
        self.conditions_source: Callable[[Trajectory], Sequence[str]] | None = None
        """Set by the memory that runs the reviews: the texts of the rules mined from the
        tenant's runs about the tools of a run (shown as ``<conditions>``)."""
        self.backoff = backoff

    @classmethod
    def from_config(cls, config: MemoryConfig, **overrides: Any) -> LLMReviewer:
        """A reviewer built from ``config``: ``reflection_model``, ``llm_base_url``,
        ``llm_api_key`` (env ``REFLECTION_MODEL``, ``LLM_BASE_URL``, ``LLM_API_KEY``, also
        with a ``HINDSIGHT_`` prefix).

        The per-request timeout is ``review_timeout / (num_retries + 1)``, so that a first try
        and its retries fit in the time one review job is given. ``overrides`` are passed to
        the constructor (e.g. ``temperature=0.3``) and win over the config.

        Raises:
            UsageError: no reflection model is configured.
        """
        if not config.reflection_model:
            raise UsageError(
                "the LLM reviewer needs a model: set REFLECTION_MODEL (or "
                "HINDSIGHT_REFLECTION_MODEL), e.g. 'openai/gpt-4o-mini' or 'ollama/qwen2.5:7b'"
            )
        num_retries = int(overrides.pop("num_retries", 2))
        kwargs: dict[str, Any] = {
            "api_base": config.llm_base_url,
            "api_key": config.llm_api_key,
            "timeout": config.review_timeout / (num_retries + 1),
            "num_retries": num_retries,
        }
        kwargs.update(overrides)
        return cls(config.reflection_model, **kwargs)

    def __repr__(self) -> str:
        return (
            f"LLMReviewer(model={self.model!r}, api_base={self.api_base!r}, "
            f"timeout={self.timeout}, num_retries={self.num_retries})"
        )

    # -- preparing the request -------------------------------------------------------------

    def prepare(self) -> None:
        """Import litellm (seconds on a cold start), before the first review's timeout runs."""
        _litellm()

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (``litellm.token_counter``; its tokenizers ship
        with litellm, nothing is downloaded). Falls back to
        :func:`hindsight.tokens.estimate_tokens` if litellm cannot count for this model."""
        try:
            import litellm

            return int(litellm.token_counter(model=self.model, text=text))
        except Exception as exc:  # any tokenizer trouble: the estimate errs on the high side
            log.debug("hindsight: token_counter failed for %s (%s); estimating", self.model, exc)
            return estimate_tokens(text)

    def compress(self, traj: Trajectory, max_tokens: int | None = None) -> CompressedTrajectory:
        """``traj`` compressed to ``max_tokens`` (default ``max_input_tokens``) tokens of this
        model.

        Steps are counted with the fast offline estimate; the assembled text is then counted
        once with the model's tokenizer and compressed harder if it is still over budget.
        """
        return self._compress(traj, max_tokens or self.max_input_tokens)[0]

    def _compress(self, traj: Trajectory, limit: int) -> tuple[CompressedTrajectory, int]:
        """:meth:`compress` to ``limit`` tokens, and the tokens of its text for this model."""
        limit = max(MIN_BUDGET, limit)
        budget = limit
        compressed = compress_trajectory(traj, max_tokens=budget, count_tokens=estimate_tokens)
        actual = self.count_tokens(compressed.text)
        for _ in range(3):
            if actual <= limit:
                break
            # Scale what the estimate says the text holds now (not the budget: a text already
            # under the estimated budget would come back unchanged) by the tokenizer's ratio.
            estimated = min(budget, estimate_tokens(compressed.text))
            budget = int(estimated * limit / actual * 0.95)
            if budget < MIN_BUDGET:
                break
            compressed = compress_trajectory(traj, max_tokens=budget, count_tokens=estimate_tokens)
            actual = self.count_tokens(compressed.text)
        return compressed, actual

    def _language(self, traj: Trajectory, fallback: str) -> str:
        user_text = " ".join(
            e.content for e in traj.events[:50] if e.event_type is EventType.USER_MESSAGE
        )
        return trajectory_language(user_text or traj.task or fallback)

    def _outcome(self, traj: Trajectory, *, expected_actions: bool = True) -> tuple[str, int]:
        """The outcome evidence block and its tokens (at most :data:`OUTCOME_SHARE`)."""
        if not expected_actions and traj.evidence is not None:
            traj = traj.model_copy(
                update={"evidence": traj.evidence.model_copy(update={"expected_actions": []})}
            )
        text = render_outcome(
            traj,
            max_tokens=int(self.max_input_tokens * OUTCOME_SHARE),
            count_tokens=self.count_tokens,
        )
        return text, self.count_tokens(text)

    def _policy_reserve(self, policy: str | None) -> int:
        """Tokens kept for the policy before the run is compressed: the whole policy when it
        is shorter than :data:`POLICY_SHARE` of the budget, else that share."""
        if not policy or not policy.strip():
            return 0
        return min(self.count_tokens(policy.strip()), int(self.max_input_tokens * POLICY_SHARE))

    def _policy(self, policy: str | None, query: list[str], max_tokens: int) -> PolicyExcerpt:
        return select_policy(policy, query, max_tokens=max_tokens, count_tokens=self.count_tokens)

    def build_messages(self, traj: Trajectory) -> list[dict[str, str]]:
        """The chat messages that review ``traj``, in the trajectory's language, within
        ``max_input_tokens``: the outcome evidence first, then the trajectory compressed to
        what is left after :data:`POLICY_SHARE` (or the whole policy, when shorter), then the
        policy passages the run touches in whatever is left
        (:func:`hindsight.review.policy.select_policy`)."""
        outcome, outcome_tokens = self._outcome(traj)
        conditions, conditions_tokens = self._conditions(traj)
        left = self.max_input_tokens - outcome_tokens - conditions_tokens
        reserve = self._policy_reserve(traj.system_prompt)
        compressed, run_tokens = self._compress(traj, left - reserve)
        policy = self._policy(traj.system_prompt, run_terms([traj]), left - run_tokens)
        log.debug(
            "hindsight: review of %s: %d -> %d tokens (%d events merged, %d dropped); policy "
            "%d/%d passages, %d tokens; outcome %d tokens",
            traj.id,
            compressed.original_tokens,
            run_tokens,
            compressed.merged_events,
            compressed.dropped_events,
            policy.shown,
            policy.total,
            policy.tokens,
            outcome_tokens,
        )
        return build_messages(
            compressed.text,
            language=self._language(traj, compressed.text),
            few_shot=self.few_shot,
            policy=policy.text,
            outcome=outcome,
            conditions=conditions,
        )

    def _conditions(self, traj: Trajectory) -> tuple[str, int]:
        """The ``<conditions>`` block (one mined rule per line, at most
        :data:`CONDITIONS_SHARE` of the budget, the first lines first) and its tokens."""
        source = self.conditions_source
        if source is None:
            return "", 0
        try:
            texts = list(source(traj))
        except Exception as exc:  # the review goes on without them
            log.warning("hindsight: mined conditions for the review of %s: %s", traj.id, exc)
            return "", 0
        budget = int(self.max_input_tokens * CONDITIONS_SHARE)
        lines: list[str] = []
        used = 0
        for text in texts:
            line = f"- {' '.join(text.split())}"
            cost = self.count_tokens(line)
            if used + cost > budget:
                break
            lines.append(line)
            used += cost
        return "\n".join(lines), used

    def build_contrast_messages(
        self, failed: Trajectory, reference: Trajectory | Sequence[ExpectedAction]
    ) -> list[dict[str, str]]:
        """The chat messages that compare ``failed`` with ``reference`` (a successful run of
        the same task, or the expected actions), within ``max_input_tokens``: the failed run's
        outcome evidence, then the two runs compressed to equal shares of what is left after
        the policy's reserve (the failed run's leftover goes to the reference; expected
        actions are shown whole), then the policy passages the differing calls touch
        (:func:`hindsight.review.llm.contrast.differing_tools`) in whatever is left."""
        is_run = isinstance(reference, Trajectory)
        outcome, outcome_tokens = self._outcome(failed, expected_actions=is_run)
        left = self.max_input_tokens - outcome_tokens
        policy_text = failed.system_prompt
        if isinstance(reference, Trajectory) and not (policy_text and policy_text.strip()):
            policy_text = reference.system_prompt
        left -= self._policy_reserve(policy_text)
        tools = differing_tools(failed, reference)
        if isinstance(reference, Trajectory):
            failed_c, failed_tokens = self._compress(failed, left // 2)
            ref_c, ref_tokens = self._compress(reference, left - failed_tokens)
            reference_text = ref_c.text
            query = run_terms([failed, reference], tools=tools)
        else:
            reference_text = render_expected_actions(reference)
            ref_tokens = self.count_tokens(reference_text)
            failed_c, failed_tokens = self._compress(failed, left - ref_tokens)
            query = run_terms([failed], tools=tools, actions=reference)
        used = outcome_tokens + failed_tokens + ref_tokens
        policy = self._policy(policy_text, query, self.max_input_tokens - used)
        return build_contrast_messages(
            failed_c.text,
            reference_text,
            reference_is_run=is_run,
            language=self._language(failed, failed_c.text),
            policy=policy.text,
            outcome=outcome,
        )

    def _request(
        self, messages: list[dict[str, str]], schema: type[BaseModel] = ReviewReport
    ) -> dict[str, Any]:
        api_key = self.api_key
        if (
            api_key is None
            and self.api_base is not None
            and self.model.startswith("openai/")
            and not os.environ.get("OPENAI_API_KEY")
        ):
            api_key = _NO_KEY
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout,
            "response_format": schema,
            # Retries are ours (below): no second layer inside litellm or the OpenAI SDK.
            "num_retries": 0,
            "max_retries": 0,
            # A provider without json_schema support still gets the prompt's JSON instructions.
            "drop_params": True,
        }
        if self.api_base is not None:
            request["api_base"] = self.api_base
        if api_key is not None:
            request["api_key"] = api_key
        return request

    # -- calling the model -----------------------------------------------------------------

    def _delay(self, attempt: int, exc: BaseException) -> float:
        delay = self.backoff * float(2**attempt) * (1.0 + 0.25 * random.random())
        server = _retry_after(exc)
        if server is not None:
            delay = max(delay, server)
        return min(delay, MAX_BACKOFF)

    def _give_up(self, exc: Exception, tries: int) -> ReviewError:
        what = f"{type(exc).__name__}"
        status = _status_of(exc)
        if status is not None:
            what += f" (HTTP {status})"
        message = (
            f"review request to {self.model} failed after {tries} tries: {what}: {_short(exc)}"
        )
        if _is_timeout(exc):
            return ReviewTimeoutError(
                f"review request to {self.model} timed out after {self.timeout:g} s "
                f"({tries} tries): {_short(exc)}"
            )
        return ReviewError(message)

    def _should_retry(self, exc: Exception, attempt: int) -> bool:
        if attempt >= self.num_retries or not _is_retryable(exc):
            return False
        log.warning(
            "hindsight: review request to %s failed (%s: %s); retrying",
            self.model,
            type(exc).__name__,
            _short(exc),
        )
        return True

    def _complete(
        self, messages: list[dict[str, str]], schema: type[BaseModel] = ReviewReport
    ) -> Any:
        litellm = _litellm()
        request = self._request(messages, schema)
        attempt = 0
        while True:
            try:
                return litellm.completion(**request)
            except Exception as exc:
                if not self._should_retry(exc, attempt):
                    raise self._give_up(exc, attempt + 1) from exc
                time.sleep(self._delay(attempt, exc))
                attempt += 1

    async def _acomplete(
        self, messages: list[dict[str, str]], schema: type[BaseModel] = ReviewReport
    ) -> Any:
        litellm = _litellm()
        request = self._request(messages, schema)
        attempt = 0
        while True:
            try:
                return await litellm.acompletion(**request)
            except Exception as exc:
                if not self._should_retry(exc, attempt):
                    raise self._give_up(exc, attempt + 1) from exc
                await asyncio.sleep(self._delay(attempt, exc))
                attempt += 1

    # -- parsing ---------------------------------------------------------------------------

    @staticmethod
    def _with_error(
        messages: list[dict[str, str]], response: Any, error: ReportParseError
    ) -> list[dict[str, str]]:
        """The conversation plus the bad reply and what was wrong with it (the one retry)."""
        bad = reply_text(response) or "(empty reply)"
        if len(bad) > _BAD_REPLY_CHARS:
            bad = bad[:_BAD_REPLY_CHARS] + "…"
        return [
            *messages,
            {"role": "assistant", "content": bad},
            {
                "role": "user",
                "content": (
                    f"Your reply could not be used: {error.problem}. Reply again for the same "
                    "run with only the JSON object described above: every key present, no "
                    "prose, no code fence."
                ),
            },
        ]

    def _failed(self, first: ReportParseError, second: ReportParseError) -> ReportParseError:
        problem = (
            f"{self.model} gave no usable review report, also after a retry that showed it the "
            f"error: {second.problem} (first reply: {first.problem})"
        )
        return ReportParseError(problem, second.reply)

    def _lessons(self, response: Any, traj: Trajectory) -> list[Lesson]:
        """The lessons in a single-run reply; a reply without a general lesson (every answer
        but the episode null or blank) is unusable too."""
        report = parse_reply(response)
        tools = list(dict.fromkeys(e.tool_name for e in traj.events if e.tool_name))
        gate = LessonGate(traj)
        lessons = report_to_lessons(
            report,
            model=self.model,
            outcome=traj.outcome,
            known_tools=tools,
            trajectory_id=traj.id,
            mask=gate.mask,
            fallback_episode=lambda: summarize_episode(traj),
        )
        if all(lesson.kind is ExperienceKind.EPISODE for lesson in lessons):
            raise ReportParseError(
                "no general lesson: failing_tools, repeated_attempts, do_differently and the "
                "rules were all null or blank; give at least one rule",
                reply_text(response),
            )
        return gate.seal(lessons)

    def _contrast_lessons(
        self,
        response: Any,
        failed: Trajectory,
        reference: Trajectory | Sequence[ExpectedAction],
    ) -> list[Lesson]:
        """The rules of a contrastive reply as lessons; a reply without a rule is unusable."""
        report = parse_reply(response, ContrastReport)
        runs = [failed, *([reference] if isinstance(reference, Trajectory) else [])]
        tools = list(dict.fromkeys(e.tool_name for run in runs for e in run.events if e.tool_name))
        gate = LessonGate(failed, *runs[1:])
        lessons = contrast_to_lessons(
            report,
            model=self.model,
            failed_id=failed.id,
            reference_id=reference.id if isinstance(reference, Trajectory) else None,
            known_tools=tools,
            mask=gate.mask,
        )
        if not lessons:
            raise ReportParseError(
                'no rule: give 1 to 3 rules "When <situation>, do A (not B), because '
                '<evidence>." in "rules"',
                reply_text(response),
            )
        return gate.seal(lessons)

    async def _ask(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        parse: Callable[[Any], list[Lesson]],
    ) -> list[Lesson]:
        """Ask, parse; on an unusable reply ask once more showing the error (async)."""
        response = await self._acomplete(messages, schema)
        try:
            return parse(response)
        except ReportParseError as first:
            log.warning("hindsight: unusable review reply (%s); asking again", first.problem)
            response = await self._acomplete(self._with_error(messages, response, first), schema)
            try:
                return parse(response)
            except ReportParseError as second:
                raise self._failed(first, second) from second

    def _ask_sync(
        self,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        parse: Callable[[Any], list[Lesson]],
    ) -> list[Lesson]:
        """:meth:`_ask` for synchronous code."""
        response = self._complete(messages, schema)
        try:
            return parse(response)
        except ReportParseError as first:
            log.warning("hindsight: unusable review reply (%s); asking again", first.problem)
            response = self._complete(self._with_error(messages, response, first), schema)
            try:
                return parse(response)
            except ReportParseError as second:
                raise self._failed(first, second) from second

    # -- the Reviewer protocol -------------------------------------------------------------

    async def review(self, trajectory: Trajectory) -> list[Lesson]:
        """Review ``trajectory`` with the model (``litellm.acompletion``).

        Returns ``[]`` for an empty or content-free trajectory without any request.
        Compression and token counting run in a worker thread, off the event loop.
        The lessons are the general answers (failing tools, repeated attempts, what to do
        differently, the rules), their text masked; each one's metadata holds
        ``prompt_version`` (:data:`hindsight.review.llm.prompts.PROMPT_VERSION`), ``model``,
        ``question``, ``lesson_key`` and ``support``. The episode summary (with the answers
        that restate the run folded in) comes last as a lesson of kind ``EPISODE``.

        Raises:
            ReviewTimeoutError: every try timed out.
            ReportParseError: the reply, and the one retry that showed the model its error,
                held no valid report; ``problem`` says why
                (docs/review.md#replies-that-are-not-clean-json).
            ReviewError: the provider failed otherwise (after retries where they make sense).
        """
        if trajectory.is_empty():
            return []
        messages = await asyncio.to_thread(self.build_messages, trajectory)
        return await self._ask(messages, ReviewReport, lambda r: self._lessons(r, trajectory))

    def review_sync(self, trajectory: Trajectory) -> list[Lesson]:
        """:meth:`review` for synchronous code (``litellm.completion``); same result and errors."""
        if trajectory.is_empty():
            return []
        messages = self.build_messages(trajectory)
        return self._ask_sync(messages, ReviewReport, lambda r: self._lessons(r, trajectory))

    async def contrast(
        self, failed: Trajectory, reference: Trajectory | list[ExpectedAction]
    ) -> list[Lesson]:
        """Compare ``failed`` with ``reference`` (docs/review.md#the-contrastive-review;
        ExpeL): a successful run of the same task, or the actions a successful run was expected
        to take.

        One forced-JSON request with the contrastive prompt
        (:mod:`hindsight.review.llm.contrast`, version
        :data:`~hindsight.review.llm.contrast.CONTRAST_PROMPT_VERSION`); the reply's 1-3 rules
        become lessons of kind ``RULE``, their text masked, with both runs as ``sources`` and
        ``support`` and ``lesson_key`` ``text:<dedup key>`` in their metadata. Returns ``[]``
        without a request when either side is empty.

        Raises:
            ReviewTimeoutError, ReportParseError, ReviewError: as :meth:`review` (a reply
                without any rule is unusable).
        """
        if failed.is_empty() or _empty_reference(reference):
            return []
        messages = await asyncio.to_thread(self.build_contrast_messages, failed, reference)
        return await self._ask(
            messages, ContrastReport, lambda r: self._contrast_lessons(r, failed, reference)
        )

    def contrast_sync(
        self, failed: Trajectory, reference: Trajectory | list[ExpectedAction]
    ) -> list[Lesson]:
        """:meth:`contrast` for synchronous code; same result and errors."""
        if failed.is_empty() or _empty_reference(reference):
            return []
        messages = self.build_contrast_messages(failed, reference)
        return self._ask_sync(
            messages, ContrastReport, lambda r: self._contrast_lessons(r, failed, reference)
        )


def _empty_reference(reference: Trajectory | Sequence[ExpectedAction]) -> bool:
    if isinstance(reference, Trajectory):
        return reference.is_empty()
    return not reference
