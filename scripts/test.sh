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

# A real PostgreSQL server for the memory tests (scripts/test-postgres.sh): installed when
# missing, one throwaway cluster for the whole run, removed on exit. If it cannot be had, the
# rest still runs and the PostgreSQL tests fail (they never skip under this script).
# shellcheck source=scripts/test-postgres.sh
source scripts/test-postgres.sh

# The tests' local runs keep their worktrees (escalated, paused, dry runs) in one directory of the
# temporary directory (tests/common/mod.rs, `worktrees_root`), beside no project; they outlive the
# tests' scratch repositories. Before and after the run, a worktree whose repository is gone is
# removed (one whose repository still exists, another run's, is left alone).
clean_test_worktrees() {
  local root="${TMPDIR:-/tmp}/meta-agent-test-worktrees" tree gitdir
  [ -d "$root" ] || return 0
  for tree in "$root"/*/*/; do
    [ -f "$tree.git" ] || continue
    gitdir=$(sed -n 's/^gitdir: //p' "$tree.git")
    [ -d "$gitdir" ] || rm -rf "$tree"
  done
  find "$root" -mindepth 1 -maxdepth 1 -type d -empty -delete
}
clean_test_worktrees
trap 'pg_stop; clean_test_worktrees' EXIT
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
