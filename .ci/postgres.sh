#!/usr/bin/env bash
# Install (if missing) and start PostgreSQL on 127.0.0.1, then create the test role and database.
#
# Idempotent; run as root on Debian (12+). Progress goes to stderr; stdout gets exactly one line,
# the variable to export, so callers can do:   eval "$(bash .ci/postgres.sh)"
#
# Settings (environment): HINDSIGHT_PG_PORT (5432), HINDSIGHT_PG_USER (hindsight),
# HINDSIGHT_PG_PASSWORD (hindsight), HINDSIGHT_PG_DB (hindsight_test).
set -euo pipefail

PORT="${HINDSIGHT_PG_PORT:-5432}"
ROLE="${HINDSIGHT_PG_USER:-hindsight}"
PASSWORD="${HINDSIGHT_PG_PASSWORD:-hindsight}"
DB="${HINDSIGHT_PG_DB:-hindsight_test}"

log() { echo "postgres.sh: $*" >&2; }

if [ "$(id -u)" -ne 0 ]; then
    log "must run as root (it installs and starts PostgreSQL)"
    exit 1
fi

# 1. Install Debian's PostgreSQL when no server binaries are present.
if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || ! command -v pg_lsclusters >/dev/null; then
    log "installing postgresql (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq postgresql >&2
fi
VERSION="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"

# 2. Make sure a cluster exists (the package creates "main"; recreate it if it was removed).
if ! pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main"' | grep -q .; then
    log "creating cluster $VERSION/main on port $PORT"
    pg_createcluster "$VERSION" main --port "$PORT" >&2
fi
CLUSTER_PORT="$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $3}')"
if [ "$CLUSTER_PORT" != "$PORT" ]; then
    log "cluster $VERSION/main uses port $CLUSTER_PORT, switching it to $PORT"
    pg_conftool "$VERSION" main set port "$PORT"
    pg_ctlcluster "$VERSION" main stop >&2 2>/dev/null || true
fi
# Loopback only (conf.d is included last, so this wins over postgresql.conf).
CONF_D="/etc/postgresql/$VERSION/main/conf.d"
mkdir -p "$CONF_D"
if [ "$(cat "$CONF_D/hindsight.conf" 2>/dev/null)" != "listen_addresses = '127.0.0.1'" ]; then
    echo "listen_addresses = '127.0.0.1'" >"$CONF_D/hindsight.conf"
    pg_ctlcluster "$VERSION" main stop >&2 2>/dev/null || true
fi

# 3. Start it (no systemd needed) and wait until it accepts connections.
STATUS="$(pg_lsclusters -h | awk -v v="$VERSION" '$1 == v && $2 == "main" {print $4}')"
if [ "$STATUS" != "online" ]; then
    log "starting cluster $VERSION/main"
    pg_ctlcluster "$VERSION" main start >&2
fi
for _ in $(seq 1 60); do
    if pg_isready -q -h 127.0.0.1 -p "$PORT"; then
        break
    fi
    sleep 0.5
done
if ! pg_isready -q -h 127.0.0.1 -p "$PORT"; then
    log "PostgreSQL did not become ready on 127.0.0.1:$PORT"
    exit 1
fi

# 4. Role (password login, may create databases) and database, both idempotent.
as_postgres() { (cd / && runuser -u postgres -- "$@"); }
as_postgres psql -q -v ON_ERROR_STOP=1 -p "$PORT" -d postgres >&2 <<SQL
DO \$\$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${ROLE}') THEN
        CREATE ROLE "${ROLE}" LOGIN CREATEDB PASSWORD '${PASSWORD}';
    ELSE
        ALTER ROLE "${ROLE}" LOGIN CREATEDB PASSWORD '${PASSWORD}';
    END IF;
END
\$\$;
SQL
if ! as_postgres psql -tA -p "$PORT" -d postgres \
    -c "SELECT 1 FROM pg_database WHERE datname = '${DB}'" | grep -q 1; then
    log "creating database $DB"
    as_postgres createdb -p "$PORT" -O "$ROLE" "$DB"
fi

log "PostgreSQL $VERSION ready on 127.0.0.1:$PORT, database $DB owned by $ROLE"
echo "export HINDSIGHT_TEST_DATABASE_URL=postgresql+psycopg://${ROLE}:${PASSWORD}@127.0.0.1:${PORT}/${DB}"
