"""Vector payloads carry what recall scoring reads: start the vector log over.

Points written from now on carry ``tools``, ``confidence``, ``trust``, ``updated_us``,
``sources`` and ``score_v`` next to the filter fields
(:func:`hindsight.store.codec.payload_from_values`). The points an index already holds do
not, so this revision starts a new vector log (a new ``vector_log_id``, no entries, floor 0),
as ``SqlStore.restart_vector_log`` does after a restore: every replica - an Edge shard with
its checkpoint, a shared Qdrant collection, an in-process index - sees a log it does not
know at its next catch-up and is rebuilt from the experience rows, payloads included. Until
then (and for any point without ``score_v``) recall scores that point from its SQL row, so
the answer never depends on the backfill having run.

A store that never had a log id (no replica yet) is left alone: its first replica is built
from the rows anyway. Downgrade changes nothing (older code ignores the new payload fields).

Revision ID: 0008_scoring_payload
Revises: 0007_experience_stamps
Create Date: 2027-01-24
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_scoring_payload"
down_revision: str | None = "0007_experience_stamps"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_META = sa.table("meta", sa.column("key", sa.String), sa.column("value", sa.Text))
_LOG = sa.table("vector_log", sa.column("seq", sa.BigInteger))
_LOG_ID, _FLOOR = "vector_log_id", "vector_log_floor"


def upgrade() -> None:
    conn = op.get_bind()
    known = conn.execute(sa.select(_META.c.value).where(_META.c.key == _LOG_ID)).first()
    if known is None:
        return
    conn.execute(sa.delete(_LOG))
    conn.execute(sa.update(_META).where(_META.c.key == _LOG_ID).values(value=str(uuid.uuid4())))
    conn.execute(sa.delete(_META).where(_META.c.key == _FLOOR))
    conn.execute(sa.insert(_META).values(key=_FLOOR, value="0"))


def downgrade() -> None:
    pass
