#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this). Installs what the tests need first:
# Python tools in a virtualenv under target/, cargo-nextest if it is missing, Debian's toolchains
# the end-to-end tests run, GitHub's webhook examples from npm, a PostgreSQL server.
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

# Toolchains the end-to-end tests run for real (the Go preset's test, and the sandbox toolchain
# tests: node with WebAssembly, go test, the JVM): Debian's packages, installed when missing, as
# root; otherwise those tests fail saying so (they never skip).
apt_install_missing() { # COMMAND PACKAGE WHAT
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "!!! test.sh: $1 is missing and this is not root: $3 will FAIL !!!" >&2
    return 0
  fi
  echo "test.sh: installing Debian's $2" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2" >&2 \
    || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2" >&2; } \
    || echo "!!! test.sh: $2 could not be installed: $3 will FAIL !!!" >&2
}
apt_install_missing go golang-go "the Go preset test and the sandbox toolchain tests"
apt_install_missing gotestsum gotestsum "the go re-run filter test"
apt_install_missing javac default-jdk-headless "the sandbox's JVM test"
apt_install_missing node nodejs "the sandbox's WebAssembly test"
apt_install_missing npm npm "the GitHub payload tests (npm installs their reference data)"
apt_install_missing chromium chromium "the report.html tests in a headless browser"

# GitHub's published webhook examples (MIT, from octokit/webhooks), the reference shapes of the
# GitHub tests: an npm package, pinned, installed under target/. Named in the environment, so
# under this script those tests fail rather than skip when it could not be installed.
examples=target/test-tools/npm
examples_pkg=@octokit/webhooks-examples@7.6.1
if [ ! -f "$examples/node_modules/@octokit/webhooks-examples/api.github.com/index.json" ]; then
  mkdir -p "$examples"
  npm install --prefix "$examples" --no-audit --no-fund --ignore-scripts --loglevel=error "$examples_pkg" >&2 \
    || echo "!!! test.sh: $examples_pkg could not be installed: the GitHub payload tests will FAIL !!!" >&2
fi
export META_AGENT_TEST_WEBHOOK_EXAMPLES="$PWD/$examples/node_modules/@octokit/webhooks-examples"

# The real open-source projects of tests/suite/real_projects.rs, from their registries (PyPI,
# crates.io, Debian's Go packages) into target/real-projects/: those tests fail, never skip,
# without them.
scripts/real-projects.sh \
  || echo "!!! test.sh: the real projects could not be fetched: the real_projects tests will FAIL !!!" >&2

# jest, jest-junit and vitest for the re-run filter tests (tests/suite/rerun.rs), pinned by
# fixtures/rerun-tools/package-lock.json.
if [ ! -d fixtures/rerun-tools/node_modules ]; then
  npm ci --prefix fixtures/rerun-tools --no-audit --no-fund --ignore-scripts >&2 \
    || echo "!!! test.sh: npm ci in fixtures/rerun-tools failed: the jest and vitest re-run tests will FAIL !!!" >&2
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
# The `pull_request_target` trap (a pull request's head checked out where a stranger's push starts
# the job, or run by a step of it), linted in the same files (tests/suite/workflow_trap.rs).
cargo nextest run --test all --status-level fail -E 'test(/^suite::workflow_trap::/)'

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo test --workspace --doc --quiet
# Every module's doc names real items: a broken or private link is an error.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
# The whole suite last, so its summary line is the run's closing line.
cargo nextest run --workspace --lib --bins --tests --no-fail-fast --status-level fail --final-status-level fail
