"""Review jobs end in a clear state (docs/review.md#review-jobs).

* ``attempts`` counts failed reviews only: not claims, not leases lost to a dead worker
  (``lost_leases``, bounded), not failures of the store around the review;
* the jobs of a dead worker process on this machine are released at once, not after the lease;
* a lease is renewed while a review runs, and the reviewer's start-up is outside the timeout;
* a 429 with ``Retry-After`` (or repeated 5xx) pauses every job of that model, shared through
  the store, instead of the next job calling the model at once;
* ``hindsight ingest`` waits for the reviews of the file's runs, also those an interrupted
  ingest left pending, and ``--no-wait`` exits 3 while some are pending.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from hindsight import Lesson, StoreError
from hindsight.review.llm.reviewer import LLMReviewer
from hindsight.review.worker import ModelBackoff, provider_failure
from hindsight.store import JobState, SqlStore
from hindsight.store.records import MAX_LOST_LEASES
from hindsight.testing import ManualClock, ScriptedReviewer, test_memory
from tests.cli_helpers import run_cli
from tests.helpers import trajectory
from tests.store_fixtures import store_url  # noqa: F401  (fixture)
from tests.test_review_parse import REPLIES

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def store(store_url: str, clock: ManualClock) -> Iterator[SqlStore]:  # noqa: F811
    with SqlStore(store_url, clock=clock) as s:
        yield s


BASE = "http://127.0.0.1:8998/v1"
URL = f"{BASE}/chat/completions"


# -- the store ----------------------------------------------------------------------------------


def test_a_claim_is_not_an_attempt_a_failed_review_is(store: SqlStore) -> None:
    store.add_trajectory(trajectory("t", "task"))
    job = store.claim_review_job("w1", 30)
    assert job is not None and job.attempts == 0 and job.state is JobState.RUNNING
    store.fail_review_job(job.id, "StoreError: database down", retry_after=0, attempt=False)
    assert store.get_review_job(job.id).attempts == 0  # the store's fault, not the model's
    job = store.claim_review_job("w1", 30)
    assert job is not None and job.attempts == 0
    store.fail_review_job(job.id, "ReviewError: HTTP 500", retry_after=0)
    assert store.get_review_job(job.id).attempts == 1
    store.release_review_jobs("w1")  # nothing held: no change
    job = store.claim_review_job("w1", 30)
    assert job is not None
    store.release_review_jobs("w1", "interrupted by shutdown")
    after = store.get_review_job(job.id)
    assert (after.state, after.attempts, after.lost_leases) == (JobState.PENDING, 1, 0)


def test_lost_leases_are_counted_apart_and_bounded(store: SqlStore, clock: ManualClock) -> None:
    store.add_trajectory(trajectory("t", "crashes its worker"))
    store.add_trajectory(trajectory("t", "an ordinary run"))
    first = store.claim_review_job("dead-1", 30)
    assert first is not None
    for n in range(1, MAX_LOST_LEASES):
        clock.advance(seconds=31)  # the worker died: its lease expires
        again = store.claim_review_job(f"dead-{n + 1}", 30)
        assert again is not None and again.id == first.id
        assert (again.attempts, again.lost_leases) == (0, n)
    clock.advance(seconds=31)
    other = store.claim_review_job("alive", 30)  # the crashing job is given up, the next runs
    assert other is not None and other.id != first.id
    gone = store.get_review_job(first.id)
    assert gone.state is JobState.FAILED and gone.attempts == 0
    assert gone.lost_leases == MAX_LOST_LEASES
    assert gone.last_error is not None and f"died {MAX_LOST_LEASES} times" in gone.last_error
    [retried] = store.retry_review_jobs([first.id])
    assert (retried.attempts, retried.lost_leases) == (0, 0)


def test_the_jobs_of_a_dead_process_on_this_host_are_released_at_once(store: SqlStore) -> None:
    store.add_trajectory(trajectory("t", "a"))
    store.add_trajectory(trajectory("t", "b"))
    mine = store.claim_review_job("box:111:w", 120)
    theirs = store.claim_review_job("other-box:222:w", 120)
    assert mine is not None and theirs is not None
    assert store.release_dead_leases("box", lambda pid: pid != 111) == 1
    released = store.get_review_job(mine.id)
    assert (released.state, released.attempts, released.lost_leases) == (JobState.PENDING, 0, 1)
    assert store.get_review_job(theirs.id).state is JobState.RUNNING  # another machine's
    assert store.release_dead_leases("box", lambda pid: True) == 0


def test_a_lease_is_renewed_only_by_its_owner(store: SqlStore, clock: ManualClock) -> None:
    store.add_trajectory(trajectory("t", "a"))
    job = store.claim_review_job("w1", 30)
    assert job is not None
    clock.advance(seconds=25)
    assert store.renew_review_lease(job.id, "w1", 30)
    clock.advance(seconds=25)  # 50 s after the claim, 25 s after the renewal: still held
    assert store.claim_review_job("w2", 30) is None
    assert not store.renew_review_lease(job.id, "w2", 30)


# -- the worker --------------------------------------------------------------------------------


def test_a_store_failure_around_the_review_is_not_an_attempt() -> None:
    def review(_: Any) -> list[Lesson]:
        raise StoreError("the database is unavailable")

    mem = test_memory(reviewer=ScriptedReviewer(review), review_max_attempts=1)
    mem.store_episode(trajectory("acme", "where is order 8812?"))
    assert mem.flush(timeout=30)
    [job] = mem.review_jobs()
    assert (job.state.value, job.attempts) == ("pending", 0)  # retried later, never "failed"
    assert job.last_error == "StoreError: the database is unavailable"
    mem.close()


class SlowStart:
    """A reviewer whose start-up (imports, a model load) takes longer than the timeout."""

    name = "slow-start"

    def __init__(self) -> None:
        self.prepared = 0

    def prepare(self) -> None:
        time.sleep(1.5)
        self.prepared += 1

    async def review(self, trajectory: Any) -> list[Lesson]:
        return [
            Lesson(kind="rule", content="use the cache when order_query times out", confidence=0.7)
        ]


def test_start_up_is_outside_the_review_timeout() -> None:
    reviewer = SlowStart()
    mem = test_memory(reviewer=reviewer, review_timeout=1.0)
    mem.store_episode(trajectory("acme", "where is order 8812?"))
    mem.store_episode(trajectory("acme", "where is order 8813?"))
    assert mem.flush(timeout=60)
    jobs = mem.review_jobs()
    assert [j.state.value for j in jobs] == ["succeeded", "succeeded"], jobs
    assert reviewer.prepared == 1  # once per process
    mem.close()


def test_provider_failure_is_found_behind_the_reviewers_error() -> None:
    response = httpx.Response(
        429, headers={"Retry-After": "42"}, request=httpx.Request("POST", URL)
    )

    class ProviderError(Exception):
        status_code = 429

        def __init__(self) -> None:
            super().__init__("rate limited")
            self.response = response

    try:
        try:
            raise ProviderError()
        except ProviderError as inner:
            raise RuntimeError("review request failed after 3 tries") from inner
    except RuntimeError as outer:
        assert provider_failure(outer) == (429, 42.0)
    assert provider_failure(ValueError("plain")) == (None, None)


def test_repeated_5xx_pause_the_model_and_a_success_ends_the_streak(store: SqlStore) -> None:
    class Down(Exception):
        status_code = 503

    model = f"openai/m-{uuid.uuid4().hex[:8]}"  # the pause is per model and process-wide
    backoff = ModelBackoff(store, model, base=4)
    assert backoff.failed(Down()) == 0  # one 5xx: that job's own retry only
    assert backoff.failed(Down()) == 4  # the second in a row pauses every job of the model
    assert backoff.failed(Down()) == 8
    assert backoff.delay() == pytest.approx(8, abs=0.01)
    assert ModelBackoff(store, model).delay() == pytest.approx(8, abs=0.01)  # shared
    backoff.succeeded()
    assert backoff.failed(Down()) == 0  # a success ended the streak
    assert ModelBackoff(store, model + "-other").delay() == 0  # other models are not paused
    assert ModelBackoff(store, None).failed(Down()) == 0  # no model, no pause


def test_a_429_pauses_every_job_of_the_model_until_retry_after() -> None:
    """The first review gets 429 + Retry-After: 120. The second job is not sent to the model
    while the pause lasts (the clock stands still), and both succeed once it is over."""
    clock = ManualClock()
    calls: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(clock.now().timestamp())
        if len(calls) == 1:
            return httpx.Response(429, headers={"Retry-After": "120"}, json={"error": "slow down"})
        return httpx.Response(200, json=REPLIES["good"])

    reviewer = LLMReviewer("openai/test-model", api_base=BASE, backoff=0.0, num_retries=0)
    with respx.mock(using="httpx", assert_all_called=False) as api:
        api.post(URL).mock(side_effect=answer)
        mem = test_memory(reviewer=reviewer, clock=clock, review_retry_base=1)
        mem.store_episode(trajectory("acme", "where is order 8812?"))
        assert mem.flush(timeout=60)
        mem.store_episode(trajectory("acme", "where is order 8813?"))
        assert mem.flush(timeout=60)  # idle: nothing may call the model now
        assert len(calls) == 1
        jobs = {j.attempts: j for j in mem.review_jobs()}
        assert set(jobs) == {0, 1} and all(j.state.value == "pending" for j in jobs.values())
        assert "429" in (jobs[1].last_error or "")
        until = float(mem.aio.store.get_meta("review_pause:openai/test-model") or 0)
        assert until == pytest.approx(clock.now().timestamp() + 120, abs=1)
        clock.advance(seconds=121)
        deadline = time.monotonic() + 60
        while mem.review_jobs(state="succeeded").__len__() < 2 and time.monotonic() < deadline:
            mem.flush(timeout=5)
            time.sleep(0.2)
        assert [j.state.value for j in mem.review_jobs()] == ["succeeded", "succeeded"]
        assert len(calls) == 3 and min(calls[1:]) >= calls[0] + 120
        mem.close()


# -- hindsight ingest ---------------------------------------------------------------------------


def _log(path: Path, n: int) -> Path:
    records = [
        {
            "messages": [
                {"role": "user", "content": f"Where is order {i}?"},
                {"role": "assistant", "content": f"Order {i} has shipped."},
            ],
            "reward": 1,
        }
        for i in range(n)
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_ingest_no_wait_exits_3_and_ingest_again_finishes_the_reviews(tmp_path: Path) -> None:
    """The first ingest's reviews cannot succeed (its model server is unreachable) and it does
    not wait: exit 3, the count on stderr. Ingesting the file again (heuristic reviewer) finds
    those reviews pending and waits for them (the bug: it reported ``reviews_pending: 0``, exit
    0, while they waited for some other process to open the store)."""
    data, log = tmp_path / "data", _log(tmp_path / "runs.jsonl", 3)
    unreachable = {
        "REFLECTION_MODEL": "openai/test-model",
        "LLM_BASE_URL": "http://127.0.0.1:9/v1",
        "HINDSIGHT_REVIEW_RETRY_BASE": "1",
        "HINDSIGHT_REVIEW_MAX_ATTEMPTS": "10",
    }
    first = run_cli(
        "ingest",
        str(log),
        "--tenant",
        "acme",
        "--no-wait",
        "--reviewer",
        "llm",
        "--json",
        data_dir=data,
        **unreachable,
    )
    assert first.returncode == 3, first.stderr
    doc = json.loads(first.stdout)
    assert (doc["reviews_queued"], doc["reviews_pending"], doc["reviews_succeeded"]) == (3, 3, 0)
    assert "3 review(s) of this file's runs pending, not waited for (--no-wait)" in first.stderr
    again = run_cli(
        "ingest",
        str(log),
        "--tenant",
        "acme",
        "--json",
        data_dir=data,
        HINDSIGHT_REVIEW_RETRY_BASE="1",
    )
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert doc["trajectories_skipped"] == 3 and doc["reviews_queued"] == 0
    assert doc["reviews_found_pending"] == 3
    assert (doc["reviews_pending"], doc["reviews_succeeded"], doc["reviews_failed"]) == (0, 3, 0)
