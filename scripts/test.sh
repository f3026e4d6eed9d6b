#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this). Installs what the tests need first:
# Python tools in a virtualenv under target/, cargo-nextest if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/test-tools/venv
if [ ! -x "$venv/bin/python3" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r scripts/test-requirements.txt
export PATH="$PWD/$venv/bin:$PATH"

if ! command -v cargo-nextest >/dev/null 2>&1; then
  cargo install --locked cargo-nextest
fi

# Go for the Go preset's end-to-end test (Debian's golang-go): installed when missing, as root;
# otherwise that test fails saying so (it never skips).
if ! command -v go >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "test.sh: installing Debian's golang-go" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go >&2 \
      || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go >&2; } \
      || echo "!!! test.sh: golang-go could not be installed: the Go preset test will FAIL !!!" >&2
  else
    echo "!!! test.sh: go is missing and this is not root: the Go preset test will FAIL !!!" >&2
  fi
fi

# vitest for the TypeScript scenarios of tests/suite/under_test.rs: installed once from the
# fixture's lockfile, so each run's setup (`npm ci --prefer-offline`) finds it in npm's cache.
if command -v npm >/dev/null 2>&1; then
  ts_tools=target/test-tools/under-test-typescript
  mkdir -p "$ts_tools"
  cp fixtures/under-test/typescript/package.json fixtures/under-test/typescript/package-lock.json "$ts_tools/"
  (cd "$ts_tools" && npm ci --no-audit --no-fund --silent) \
    || echo "!!! test.sh: npm ci of vitest failed: the TypeScript scenarios will FAIL !!!" >&2
else
  echo "!!! test.sh: npm is missing: the TypeScript scenarios will FAIL !!!" >&2
fi

# A real PostgreSQL server for the memory tests (scripts/test-postgres.sh): installed when
# missing, one throwaway cluster for the whole run, removed on exit. If it cannot be had, the
# rest still runs and the PostgreSQL tests fail (they never skip under this script).
# shellcheck source=scripts/test-postgres.sh
source scripts/test-postgres.sh
trap pg_stop EXIT
if ! { pg_install && pg_start; }; then
  echo "!!! test.sh: no PostgreSQL server could be installed and started: the memory tests will FAIL !!!" >&2
fi
export META_AGENT_TEST_PG_REQUIRED=1

# The GitHub Action and the workflows: zizmor's security audits (offline) and actionlint; both fail
# the run on any finding. The examples name the Action by placeholder, ignored on that line only.
zizmor --offline --quiet action.yml .github/workflows/*.yml examples/workflows/*.yml examples/eval/*.yml
actionlint .github/workflows/*.yml examples/workflows/*.yml examples/eval/*.yml

cargo fmt --all -- --check
cargo clippy --all-targets --quiet -- -D warnings
cargo test --doc --quiet
# Every module's doc names real items: a broken or private link is an error.
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet
# The whole suite last, so its summary line is the run's closing line.
cargo nextest run --lib --bins --tests --no-fail-fast --status-level fail --final-status-level fail
