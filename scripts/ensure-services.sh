#!/usr/bin/env bash
# Makes sure the local Postgres and NATS (with JetStream) the stack and tests use are running,
# starting them with the machine's own commands when they are down. Used by `make run`,
# `make test` and .ci/run. With Docker, `docker compose up` brings its own instead.
set -euo pipefail

PG_HOST=${PGHOST_CHECK:-127.0.0.1}
PG_PORT=${PGPORT_CHECK:-5432}
NATS_HOST=${NATS_HOST_CHECK:-127.0.0.1}
NATS_PORT=${NATS_PORT_CHECK:-4222}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_for() { # name host port
  for _ in $(seq 1 60); do
    if port_open "$2" "$3"; then return 0; fi
    sleep 0.5
  done
  echo "ensure-services: $1 did not come up on $2:$3" >&2
  return 1
}

if ! port_open "$PG_HOST" "$PG_PORT"; then
  echo "ensure-services: Postgres is down on $PG_HOST:$PG_PORT; starting it" >&2
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  else
    echo "ensure-services: no local Postgres to start; install PostgreSQL 15 or set DATABASE_URL" >&2
    exit 1
  fi
  wait_for Postgres "$PG_HOST" "$PG_PORT"
fi
if command -v pg_isready >/dev/null 2>&1; then
  for _ in $(seq 1 60); do pg_isready -h "$PG_HOST" -p "$PG_PORT" -q && break; sleep 0.5; done
fi

if ! port_open "$NATS_HOST" "$NATS_PORT"; then
  echo "ensure-services: NATS is down on $NATS_HOST:$NATS_PORT; starting it with JetStream" >&2
  if [ -x /usr/sbin/nats-server ] || command -v nats-server >/dev/null 2>&1; then
    bin=$(command -v nats-server || echo /usr/sbin/nats-server)
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec "$bin" -- -a 127.0.0.1 -p "$NATS_PORT" -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  else
    echo "ensure-services: no local nats-server to start; install nats-server (apt-get install nats-server) or set NATS_URL" >&2
    exit 1
  fi
  wait_for NATS "$NATS_HOST" "$NATS_PORT"
fi
echo "ensure-services: Postgres $PG_HOST:$PG_PORT and NATS $NATS_HOST:$NATS_PORT are up" >&2
