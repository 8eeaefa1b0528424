#!/usr/bin/env bash
# Back up a docker compose deployment of hindsight (docs/deploy.md#backup-and-restore).
#
#   examples/deploy/backup.sh [BACKUP_DIR]      default: backups/<UTC time>
#
# Run it from the folder of docker-compose.yml and .env, with the stack up. It writes
#   BACKUP_DIR/hindsight.pgdump   pg_dump (custom format) of PostgreSQL: the source of truth,
#                                 every experience with its embedding (pgvector); run inside
#                                 the postgres container, whose client matches the server
#   BACKUP_DIR/qdrant.snapshot    with the Qdrant option (docker-compose.qdrant.yml) only: a
#                                 snapshot of the collection (optional for a restore:
#                                 restore.sh rebuilds the vectors from SQL without it)
# Both are consistent on their own and safe while the API runs; the snapshot may be a few
# seconds apart from the dump, which restore.sh reconciles (hindsight doctor --repair).
# With the Qdrant option, name both files: COMPOSE="docker compose -f docker-compose.yml -f
# docker-compose.qdrant.yml" (or set COMPOSE_FILE in .env).
set -euo pipefail

COMPOSE="${COMPOSE:-docker compose}"       # e.g. COMPOSE=docker-compose for Compose v1
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-backups/$(date -u +%Y%m%dT%H%M%SZ)}"
SNAPSHOTS="${SNAPSHOTS:-data/snapshots/hindsight_experiences}"

mkdir -p "$OUT"
echo "backing up PostgreSQL to $OUT/hindsight.pgdump" >&2
# shellcheck disable=SC2016  # $POSTGRES_USER / $POSTGRES_DB expand inside the container
$COMPOSE exec -T postgres sh -c \
    'pg_dump --format=custom --no-owner --no-privileges -U "$POSTGRES_USER" -d "$POSTGRES_DB"' \
    >"$OUT/hindsight.pgdump"
if [ "$(head -c 5 "$OUT/hindsight.pgdump")" != "PGDMP" ]; then
    echo "error: $OUT/hindsight.pgdump is not a pg_dump archive" >&2
    exit 1
fi

if $COMPOSE config --services | grep -qx qdrant; then
    echo "taking a Qdrant snapshot" >&2
    NAME="$($COMPOSE exec -T hindsight-api python - create <"$HERE/qdrant_snapshot.py" | tr -d '\r')"
    cp "$SNAPSHOTS/$NAME" "$OUT/qdrant.snapshot"
    rm -f "$SNAPSHOTS/$NAME" "$SNAPSHOTS/$NAME.checksum"
fi

echo "backup written to $OUT" >&2
ls -l "$OUT" >&2
