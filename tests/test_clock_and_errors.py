"""The memory's clock is the only clock the engine reads, and the errors of a broken store, a
broken vector index folder or a broken embedder say what happened and what to do; on SQLite
and PostgreSQL, through ``Memory``, ``AsyncMemory`` and the CLI (docs/concepts.md#the-clock,
docs/troubleshooting.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import sqlalchemy as sa

from hindsight import AsyncMemory, EmbeddingError, Memory, StoreError, UsageError
from hindsight.embedders import HashEmbedder
from hindsight.testing import ManualClock
from tests.cli_helpers import run_cli
from tests.helpers import make_memory

FROZEN = datetime(2020, 5, 1, 12, 30, tzinfo=UTC)


class NaiveClock:
    """A clock that returns naive datetimes (as ``datetime.utcnow()`` does)."""

    def __init__(self, value: datetime) -> None:
        self.value = value

    def now(self) -> datetime:
        return self.value


class OtherZoneClock:
    """A clock in another time zone (UTC+2)."""

    def now(self) -> datetime:
        return FROZEN.astimezone(timezone(timedelta(hours=2)))


def _check_stamps(mem: Memory, clock_time: datetime) -> None:
    with mem.record("look up order 5", tenant_id="t") as run:
        run.user_message("where is order 5?")
        call = run.tool_call("order_query", {"id": 5})
        run.tool_result(content="timed out", status="timeout", tool_call_id=call.tool_call_id)
    traj = mem.get_trajectory(run.trajectory_id, tenant_id="t")
    assert traj.started_at == traj.ended_at == clock_time
    assert {e.timestamp for e in traj.events} == {clock_time}
    assert mem.list_trajectories(tenant_id="t")[0].stored_at == clock_time
    # a date filter at the memory's time finds the run (it found nothing with the wall clock)
    found = mem.aio.store.list_trajectories("t", since=clock_time - timedelta(seconds=1))
    assert [r.id for r in found] == [run.trajectory_id]
    stored = mem.store_episode({"tenant_id": "t", "task": "dict run", "events": [
        {"event_type": "user_message", "content": "hi"}]}, review=False)  # fmt: skip
    dict_run = mem.get_trajectory(stored.trajectory_id, tenant_id="t")
    assert dict_run.started_at == dict_run.events[0].timestamp == clock_time
    exp = mem.add_experience("Retry order_query once after a timeout.", tenant_id="t")
    assert exp.created_at == exp.updated_at == clock_time
    hits = mem.recall("order_query timed out", tenant_id="t", trajectory_id=run.trajectory_id)
    assert [h.experience.id for h in hits.hits] == [exp.id]


@pytest.mark.parametrize(
    "clock",
    [ManualClock(FROZEN), NaiveClock(FROZEN.replace(tzinfo=None)), OtherZoneClock()],
    ids=["frozen", "naive", "utc+2"],
)
def test_the_memorys_clock_stamps_everything(tmp_path: Path, database_url: str, clock: Any) -> None:
    with make_memory(tmp_path / "data", database_url, clock=clock) as mem:
        _check_stamps(mem, FROZEN)


def test_async_memory_reads_the_same_clock(tmp_path: Path, database_url: str) -> None:
    async def run() -> None:
        clock = NaiveClock(FROZEN.replace(tzinfo=None))
        async with AsyncMemory(
            data_dir=tmp_path / "a", database_url=database_url, clock=clock
        ) as amem:
            async with amem.record("async run", tenant_id="t") as rec:
                rec.user_message("hello")
            traj = await amem.get_trajectory(rec.trajectory_id, tenant_id="t")
            assert traj.started_at == FROZEN and traj.events[0].timestamp == FROZEN
            exp = await amem.add_experience("Check the seat map first.", tenant_id="t")
            assert exp.created_at == FROZEN
            result = await amem.recall("seat map", tenant_id="t")
            assert [h.experience.id for h in result.hits] == [exp.id]

    asyncio.run(run())


def test_a_clock_that_returns_no_datetime_is_refused_at_open(tmp_path: Path) -> None:
    class Broken:
        def now(self) -> str:
            return "2020-05-01"

    with pytest.raises(UsageError, match=r"the memory's clock \(Broken\) must return a datetime"):
        Memory(data_dir=tmp_path / "b", clock=Broken())
    with pytest.raises(UsageError, match="clock must have a now"):
        Memory(data_dir=tmp_path / "c", clock=object())


# -- a store without alembic_version --------------------------------------------------------------


def test_a_store_without_its_version_table_says_what_to_do(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path / "data", database_url) as mem:
        mem.add_experience("Retry the export once.", tenant_id="t")
    engine = sa.create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE alembic_version"))
    engine.dispose()
    for _ in range(2):  # and again: nothing was changed by the refusal
        with pytest.raises(StoreError) as err:
            make_memory(tmp_path / "data", database_url)
        message = str(err.value)
        assert "\n" not in message and "table meta already exists" not in message
        assert "no alembic_version table" in message and "hindsight restore" in message
        assert "empty database" in message
    proc = run_cli(
        "stats", "--json", data_dir=tmp_path / "data", HINDSIGHT_DATABASE_URL=database_url
    )
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "no alembic_version table" in proc.stderr


# -- a vector index folder that lost files ------------------------------------------------------


def _lose_every_file(vectors: Path) -> None:
    for path in vectors.rglob("*"):
        if path.is_file():
            path.unlink()


def _lose_config(vectors: Path) -> None:
    (vectors / "edge_config.json").unlink()


def _lose_segment_files(vectors: Path) -> None:
    for path in (vectors / "segments").rglob("*"):
        if path.is_file():
            path.unlink()


def _cut_files(vectors: Path) -> None:
    for path in (vectors / "segments").rglob("*.json"):
        path.write_text("{", encoding="utf-8")


@pytest.mark.parametrize(
    "damage", [_lose_every_file, _lose_config, _lose_segment_files, _cut_files]
)
def test_a_damaged_vector_folder_is_rebuilt_on_the_first_open(
    tmp_path: Path, damage: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The embedded index of a SQLite store (PostgreSQL keeps the vectors itself, pgvector)."""
    database_url = f"sqlite:///{tmp_path / 'h.db'}"
    data = tmp_path / "data"
    embedder = HashEmbedder(64)
    with Memory(data_dir=data, database_url=database_url, embedder=embedder) as mem:
        exp = mem.add_experience("Retry the export once after a timeout.", tenant_id="t")
    damage(data / "vectors")
    with (
        caplog.at_level(logging.WARNING, logger="hindsight"),
        Memory(data_dir=data, database_url=database_url, embedder=embedder) as mem,
    ):
        hits = mem.recall("export timeout", tenant_id="t", similarity_floor=-1.0)
        assert [h.experience.id for h in hits.hits] == [exp.id]
    kept = sorted(p.name for p in data.iterdir() if p.name.startswith("vectors.damaged-"))
    assert len(kept) <= 1  # moved aside (kept) when Qdrant Edge could not load it
    if kept:
        assert any("rebuilt from the SQL store" in r.getMessage() for r in caplog.records)
    with Memory(data_dir=data, database_url=database_url, embedder=embedder) as mem:
        assert mem.stats(tenant_id="t")["vectors"] == 1


# -- an embedder that returns NaN ---------------------------------------------------------------


class PoisonedEmbedder:
    """Hashes texts, but answers NaN for any text with "poison" in it (a broken model)."""

    name = "poisoned-64"
    dimension = 64
    similarity_floor = 0.0

    def __init__(self) -> None:
        self.inner = HashEmbedder(64)

    def embed(self, texts: Sequence[str]) -> Any:
        out = np.array(self.inner.embed(texts), dtype=np.float32)
        for i, text in enumerate(texts):
            if "poison" in text:
                out[i, 3] = np.nan
        return out


def test_nan_from_the_embedder_names_the_embedder_and_the_field(
    tmp_path: Path, database_url: str
) -> None:
    with make_memory(tmp_path / "data", database_url, embedder=PoisonedEmbedder()) as mem:
        good = mem.add_experience("Retry the export once.", tenant_id="t")
        cases = [
            (lambda: mem.add_experience("poison lesson", tenant_id="t"), "for the content:"),
            (
                lambda: mem.add_experiences(
                    [{"content": "fine one"}, {"content": "poison two"}], tenant_id="t"
                ),
                "for the content of item 1:",
            ),
            (lambda: mem.recall("poison query", tenant_id="t"), "for the query:"),
            (
                lambda: mem.edit_experience(good.id, tenant_id="t", content="poison edit"),
                "for the content:",
            ),
        ]
        for call, where in cases:
            with pytest.raises(EmbeddingError) as err:
                call()
            message = str(err.value)
            assert message.startswith("embedder 'poisoned-64' returned NaN or infinite values")
            assert where in message and "check the embedder" in message, message
            assert "\n" not in message
        assert [e.id for e in mem.list_experiences(tenant_id="t")] == [good.id]
        assert mem.get_experience(good.id, tenant_id="t").content == "Retry the export once."


def test_an_embedder_without_what_the_port_needs_is_refused_at_open(tmp_path: Path) -> None:
    class NoFloor:
        name = "no-floor-8"
        dimension = 8

        def embed(self, texts: Sequence[str]) -> Any:
            return np.ones((len(texts), 8), dtype=np.float32) / np.sqrt(8)

    with pytest.raises(UsageError, match="embedder NoFloor must have a similarity_floor"):
        Memory(data_dir=tmp_path / "e", embedder=NoFloor())
