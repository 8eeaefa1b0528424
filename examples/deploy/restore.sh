#!/usr/bin/env bash
# Restore a backup made by examples/deploy/backup.sh (docs/deploy.md#backup-and-restore).
#
#   examples/deploy/restore.sh BACKUP_DIR
#
# Run it from the folder of docker-compose.yml and .env (with the Qdrant option, COMPOSE as in
# backup.sh). It stops hindsight-api and the workers, restores PostgreSQL in one transaction
# (all or nothing; with pgvector the vectors come back with the rows), recovers the Qdrant
# snapshot when BACKUP_DIR has one, then `hindsight doctor --repair` rebuilds from SQL any
# vector a Qdrant collection lacks (or all of them without a snapshot) and removes the extra
# ones, and starts the API again. What the store held before is replaced.
set -euo pipefail

COMPOSE="${COMPOSE:-docker compose}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SNAPSHOTS="${SNAPSHOTS:-data/snapshots/hindsight_experiences}"
if [ $# -ne 1 ] || [ ! -f "$1/hindsight.pgdump" ]; then
    echo "usage: $0 BACKUP_DIR   (a folder holding hindsight.pgdump, made by backup.sh)" >&2
    exit 2
fi
IN="$1"

echo "stopping hindsight-api and hindsight-worker" >&2
$COMPOSE stop hindsight-api hindsight-worker

echo "restoring PostgreSQL from $IN/hindsight.pgdump" >&2
# shellcheck disable=SC2016  # $POSTGRES_USER / $POSTGRES_DB expand inside the container
$COMPOSE exec -T postgres sh -c \
    'pg_restore --clean --if-exists --no-owner --no-privileges --single-transaction \
     --exit-on-error -U "$POSTGRES_USER" -d "$POSTGRES_DB"' <"$IN/hindsight.pgdump"

if [ -f "$IN/qdrant.snapshot" ]; then
    NAME="restore-$(date -u +%Y%m%dT%H%M%SZ).snapshot"
    echo "recovering the Qdrant collection from $IN/qdrant.snapshot" >&2
    mkdir -p "$SNAPSHOTS"
    cp "$IN/qdrant.snapshot" "$SNAPSHOTS/$NAME"
    $COMPOSE run --rm --no-deps -T hindsight-api python - recover "$NAME" \
        <"$HERE/qdrant_snapshot.py"
    rm -f "$SNAPSHOTS/$NAME"
fi

echo "rebuilding vectors from SQL where needed (hindsight doctor --repair)" >&2
$COMPOSE run --rm --no-deps -T hindsight-api hindsight doctor --repair

echo "starting hindsight-api" >&2
$COMPOSE up -d hindsight-api
