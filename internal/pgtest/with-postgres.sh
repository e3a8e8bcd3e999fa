#!/usr/bin/env bash
# with-postgres.sh CMD...: run CMD with TRADEWIRE_TEST_POSTGRES_URL naming a
# real PostgreSQL primary and its synchronous standby, for the tests of
# idempotency/pgstore, transport/pgbudget and broker's PostgreSQL fleet.
#
# - TRADEWIRE_TEST_POSTGRES_URL already set: run CMD as it is.
# - otherwise: start a primary and a synchronous standby (Debian's
#   postgresql package; as the postgres user when run as root, since
#   PostgreSQL refuses root) on free loopback ports in a temporary
#   directory, export the URL naming both, run CMD, and stop them after.
#   Without PostgreSQL installed, stop at once, saying how to install it.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec go run ./internal/pgtest/withpostgres "$@"
