#!/usr/bin/env bash
# Makes sure the Postgres and NATS (with JetStream) the stack and tests use are reachable. Used by
# `make run`, `make test` and .ci/run. With Docker, `docker compose up` brings its own instead.
#
# Where: DATABASE_URL and NATS_URL (the services' own settings; defaults
# postgres://localhost:5432/tasks and nats://127.0.0.1:4222; for a NATS cluster, the first URL of
# the comma-separated list). PGHOST_CHECK / PGPORT_CHECK / NATS_HOST_CHECK / NATS_PORT_CHECK, when
# set, override the host and port taken from the URLs.
# Local (127.0.0.1, localhost, ::1): a server that is down is started with the machine's own
# commands. Anywhere else: only checked, never started; no answer after REMOTE_WAIT_SECONDS
# (default 5) is an error naming the URL. "Answers" means speaks the protocol, not only accepts
# a connection.
set -euo pipefail

# url_host_port URL DEFAULT_PORT: prints "host port" of scheme://[user[:pass]@]host[:port][/path][?query]
url_host_port() {
  local rest=${1#*://}
  rest=${rest%%/*}
  rest=${rest%%\?*}
  rest=${rest##*@}
  local host port
  if [[ $rest == \[* ]]; then # [IPv6]:port
    host=${rest%%]*}
    host=${host#[}
    port=${rest#*]}
    port=${port#:}
  elif [[ $rest == *:* ]]; then
    host=${rest%%:*}
    port=${rest##*:}
  else
    host=$rest
    port=
  fi
  echo "${host:-127.0.0.1} ${port:-$2}"
}

is_local() { [[ $1 == 127.0.0.1 || $1 == localhost || $1 == ::1 ]]; }

# What to print: the URL without its password.
redact() { sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#' <<<"$1"; }

DB_URL=${DATABASE_URL:-postgres://localhost:5432/tasks}
NATS_URL_FIRST=${NATS_URL:-nats://127.0.0.1:4222}
NATS_URL_FIRST=${NATS_URL_FIRST%%,*}
NATS_URL_FIRST=${NATS_URL_FIRST// /}
[[ $NATS_URL_FIRST == *://* ]] || NATS_URL_FIRST="nats://$NATS_URL_FIRST"

read -r PG_URL_HOST PG_URL_PORT < <(url_host_port "$DB_URL" 5432)
read -r NATS_URL_HOST NATS_URL_PORT < <(url_host_port "$NATS_URL_FIRST" 4222)
PG_HOST=${PGHOST_CHECK:-$PG_URL_HOST}
PG_PORT=${PGPORT_CHECK:-$PG_URL_PORT}
NATS_HOST=${NATS_HOST_CHECK:-$NATS_URL_HOST}
NATS_PORT=${NATS_PORT_CHECK:-$NATS_URL_PORT}
# localhost: check over IPv4, as the local servers listen there.
[[ $PG_HOST == localhost ]] && PG_HOST=127.0.0.1
[[ $NATS_HOST == localhost ]] && NATS_HOST=127.0.0.1
REMOTE_WAIT_SECONDS=${REMOTE_WAIT_SECONDS:-5}

# Whether the server on host:port speaks the protocol, not just accepts a connection (a proxy or
# firewall in the path may accept any connection). 2 s at most per try.
# Postgres: an SSLRequest is answered with one byte, S or N. NATS: the server greets with INFO.
answers() { # Postgres|NATS host port
  local reply
  if [[ $1 == Postgres ]]; then
    # shellcheck disable=SC2016
    reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1" && printf "\x00\x00\x00\x08\x04\xd2\x16\x2f" >&3 && head -c 1 <&3' "$2" "$3" 2>/dev/null) || return 1
    [[ $reply == S || $reply == N ]]
  else
    # shellcheck disable=SC2016
    reply=$(timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1" && head -c 4 <&3' "$2" "$3" 2>/dev/null) || return 1
    [[ $reply == INFO ]]
  fi
}

wait_for() { # name host port tries(0.5 s apart)
  for _ in $(seq 1 "${4:-60}"); do
    if answers "$1" "$2" "$3"; then return 0; fi
    sleep 0.5
  done
  return 1
}

# A remote server: wait up to REMOTE_WAIT_SECONDS for it, never start anything.
check_remote() { # name host port url setting
  local deadline=$((SECONDS + REMOTE_WAIT_SECONDS))
  while :; do
    if answers "$1" "$2" "$3"; then return 0; fi
    if ((SECONDS >= deadline)); then
      echo "ensure-services: $1 at $2:$3 ($5=$(redact "$4")) does not answer after ${REMOTE_WAIT_SECONDS}s;" \
        "it is not local, so nothing was started: check the address, the network, or unset $5 to use a local $1" >&2
      exit 1
    fi
    sleep 0.5
  done
}

if ! is_local "$PG_HOST"; then
  check_remote Postgres "$PG_HOST" "$PG_PORT" "$DB_URL" DATABASE_URL
elif ! answers Postgres "$PG_HOST" "$PG_PORT"; then
  echo "ensure-services: Postgres is down on $PG_HOST:$PG_PORT; starting it" >&2
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start
  else
    echo "ensure-services: no local Postgres to start; install PostgreSQL 15 or set DATABASE_URL" >&2
    exit 1
  fi
  wait_for Postgres "$PG_HOST" "$PG_PORT" || { echo "ensure-services: Postgres did not come up on $PG_HOST:$PG_PORT" >&2; exit 1; }
fi
if is_local "$PG_HOST" && command -v pg_isready >/dev/null 2>&1; then
  # A Postgres just started answers before it accepts connections (recovery); wait for that.
  for _ in $(seq 1 60); do pg_isready -h "$PG_HOST" -p "$PG_PORT" -q && break; sleep 0.5; done
fi

if ! is_local "$NATS_HOST"; then
  check_remote NATS "$NATS_HOST" "$NATS_PORT" "$NATS_URL_FIRST" NATS_URL
elif ! answers NATS "$NATS_HOST" "$NATS_PORT"; then
  echo "ensure-services: NATS is down on $NATS_HOST:$NATS_PORT; starting it with JetStream" >&2
  if [ -x /usr/sbin/nats-server ] || command -v nats-server >/dev/null 2>&1; then
    bin=$(command -v nats-server || echo /usr/sbin/nats-server)
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec "$bin" -- -a 127.0.0.1 -p "$NATS_PORT" -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  else
    echo "ensure-services: no local nats-server to start; install nats-server (apt-get install nats-server) or set NATS_URL" >&2
    exit 1
  fi
  wait_for NATS "$NATS_HOST" "$NATS_PORT" || { echo "ensure-services: NATS did not come up on $NATS_HOST:$NATS_PORT" >&2; exit 1; }
fi
echo "ensure-services: Postgres $PG_HOST:$PG_PORT and NATS $NATS_HOST:$NATS_PORT are up" >&2
