"""Waiting for queued reviews with a progress bar (``hindsight ingest``), and the reviewer option
shared by the commands that open a memory."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from hindsight.cli._common import fail

__all__ = ["ReviewerOpt", "check_reviewer", "review_wait_seconds", "wait_for_reviews"]

ReviewerOpt = Annotated[
    str | None,
    typer.Option(
        "--reviewer",
        help="heuristic (offline) | llm (REFLECTION_MODEL, LLM_BASE_URL) | both. "
        "Default: the REVIEWER setting, else heuristic.",
    ),
]

POLL_SECONDS = 0.25
"""How often the job states are read while waiting."""


def check_reviewer(name: str | None) -> dict[str, Any]:
    """Config overrides for ``--reviewer`` (``{}`` when not given).

    Raises:
        typer.Exit: (code 2, one line on stderr) an unknown name.
    """
    if name is None:
        return {}
    from hindsight.review.combined import REVIEWER_CHOICES

    if name.strip().lower() not in REVIEWER_CHOICES:
        raise fail(f"--reviewer must be one of {', '.join(REVIEWER_CHOICES)}, got {name!r}", 2)
    return {"reviewer": name.strip().lower()}


def review_wait_seconds(config: Any, queued: int) -> float:
    """Upper bound on waiting for ``queued`` reviews: every attempt of each at its full
    ``review_timeout``, plus the backoffs between attempts, plus one minute."""
    attempts = int(config.review_max_attempts)
    backoff = float(config.review_retry_base) * float(2 ** max(0, attempts - 1) - 1)
    return 60.0 + queued * float(config.review_timeout) * attempts + backoff


def wait_for_reviews(
    mem: Any,
    *,
    tenant_id: str,
    trajectory_ids: Sequence[str],
    progress: Any,
    timeout: float,
) -> dict[str, int]:
    """Wait until every review job of ``trajectory_ids`` succeeded or failed, with a bar.

    A job retried with backoff (a timeout, a provider error) counts as not finished yet, so
    the wait covers its retries. Returns the final ``{state: n}`` counts; ``pending`` or
    ``running`` above zero means ``timeout`` seconds ran out first (the jobs stay queued).
    """
    store = mem.aio.store
    bar = progress.add_task("reviewing", total=len(trajectory_ids))
    deadline = time.monotonic() + timeout
    while True:
        counts: dict[str, int] = store.review_job_states(tenant_id, trajectory_ids)
        progress.update(bar, completed=counts["succeeded"] + counts["failed"])
        if counts["pending"] + counts["running"] == 0 or time.monotonic() >= deadline:
            return counts
        if mem.flush(timeout=POLL_SECONDS):  # nothing claimable right now: a retry is due later
            time.sleep(POLL_SECONDS)
