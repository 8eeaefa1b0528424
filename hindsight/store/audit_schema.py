"""Tables of the human audit (docs/console.md): audit runs and their verdicts.

Created by migration ``0005_audit_runs``. A run is a reproducible random sample of a tenant's
active lessons (its seed and the ids drawn); each verdict a human gives is one row of
``audit_verdicts`` (the latest verdict per experience and run) and one ``verdict`` row of
``experience_audit`` (the experience's own trail). A verdict goes with its experience when
that is hard-deleted (``ON DELETE CASCADE``); ``forget(everything=True)`` removes the runs.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String, Table, Text

from hindsight.store.schema import ID, TENANT, metadata
from hindsight.store.types import Json, UtcDateTime

__all__ = ["audit_runs", "audit_verdicts"]

audit_runs = Table(
    "audit_runs",
    metadata,
    Column("id", ID, primary_key=True),
    Column("tenant_id", TENANT, nullable=False),
    # The seed of the draw: the same seed over the same active lessons draws the same sample.
    Column("seed", BigInteger, nullable=False),
    Column("size", Integer, nullable=False),
    # The ids drawn, in the order shown.
    Column("experience_ids", Json, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Index(None, "tenant_id", "created_at"),
)

audit_verdicts = Table(
    "audit_verdicts",
    metadata,
    Column("run_id", ID, ForeignKey("audit_runs.id", ondelete="CASCADE"), primary_key=True),
    Column(
        "experience_id",
        ID,
        ForeignKey("experiences.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("tenant_id", TENANT, nullable=False),
    # correct / wrong / needs_edit
    Column("verdict", String(16), nullable=False),
    Column("note", Text, nullable=True),
    # What was done about a wrong lesson: archive / demote / quarantine (None otherwise).
    Column("action", String(16), nullable=True),
    Column("actor", String(200), nullable=False),
    Column("at", UtcDateTime, nullable=False),
)
