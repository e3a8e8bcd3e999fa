#!/usr/bin/env bash
# with-redis.sh CMD...: run CMD with TRADEWIRE_TEST_REDIS_URL pointing at a
# real redis-server, for the tests of transport/redisbudget and
# idempotency/redisstore.
#
# - TRADEWIRE_TEST_REDIS_URL already set: run CMD as it is.
# - redis-server not installed: stop at once, saying how to install it.
# - otherwise: start redis-server on a free loopback port, durable as the
#   store demands (appendonly yes, appendfsync always) in a temporary
#   directory, export its URL, run CMD, and stop the server afterwards.
set -euo pipefail

if [ -n "${TRADEWIRE_TEST_REDIS_URL:-}" ]; then
  exec "$@"
fi
if ! command -v redis-server >/dev/null; then
  cat >&2 <<'EOF'
with-redis.sh: redis-server not found. The Redis-backed tests (idempotency/redisstore,
transport/redisbudget, broker's fleet tests) run against a real one. Install it:
  Debian/Ubuntu: sudo apt-get install redis-server
  macOS:         brew install redis
or point them at a running Redis with appendonly yes and appendfsync always:
  TRADEWIRE_TEST_REDIS_URL=redis://127.0.0.1:6379/0 make test
EOF
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/tradewire-redis.XXXXXX")
pid=""
stop() {
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap stop EXIT

# port_free: nothing accepts connections on 127.0.0.1:$1.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

started=""
for port in $(seq 6390 6490); do
  port_free "$port" || continue
  # Run in the foreground of a background job (not --daemonize), so this
  # shell is its parent: it can tell that the server is alive, and reap it.
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --daemonize no \
    --logfile "$dir/redis.log" --save "" \
    --appendonly yes --appendfsync always </dev/null >/dev/null 2>&1 &
  pid=$!
  for _ in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break # exited: the port was taken
    if ! port_free "$port"; then started=$port; break; fi
    sleep 0.1
  done
  [ -n "$started" ] && break
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  pid=""
done
if [ -z "$started" ]; then
  echo "with-redis.sh: could not start redis-server on 127.0.0.1:6390-6490" >&2
  cat "$dir/redis.log" >&2 2>/dev/null || true
  exit 1
fi
export TRADEWIRE_TEST_REDIS_URL="redis://127.0.0.1:$started/0"
echo "with-redis.sh: redis-server on $TRADEWIRE_TEST_REDIS_URL (appendfsync always)" >&2
"$@"
