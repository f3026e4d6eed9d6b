#!/usr/bin/env bash
# The shared-memory benchmark (benches/memory.rs) against a throwaway PostgreSQL server, the
# same one the tests use (scripts/test-postgres.sh). Arguments go to criterion, e.g.
# `scripts/bench-memory.sh memory_recall`.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/test-postgres.sh
source scripts/test-postgres.sh
trap pg_stop EXIT
pg_install
# Durable like a production server: fsync and synchronous commit on.
PG_TEST_DURABLE=${PG_TEST_DURABLE:-1} pg_start
cargo bench --bench memory -- "$@"
