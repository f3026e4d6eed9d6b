#!/usr/bin/env bash
# Quickstart: the whole build-test-improve loop, offline and with no API key, on the bundled
# example examples/broken-calc (an unused import fails the lint gate, an integer division fails
# two tests). meta-agent runs the real gates (ruff, pytest, coverage), turns the failures into
# signatures, applies what hindsight knows (the bundled catalog's `ruff check --fix`, and a patch
# the example's own store learned earlier) with no LLM call, re-runs the gates green and prints
# the commit it would make, with its trailers. Dry run: the example is copied to a scratch
# directory first, and nothing is committed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "demo: $*" >&2; }

venv=target/test-tools/venv
if [ ! -x "$venv/bin/python3" ]; then
  say "creating a Python virtual environment in $venv for the example's gates"
  python3 -m venv "$venv"
fi
say "installing the gates' tools (ruff, pytest, coverage) into $venv"
"$venv/bin/python3" -m pip install --quiet --disable-pip-version-check -r scripts/test-requirements.txt
if [ -x target/debug/meta-agent ]; then
  say "building meta-agent (cargo build; only what changed)"
else
  say "building meta-agent (cargo build; the first build compiles every dependency and takes a few minutes)"
fi
cargo build

scratch=$(mktemp -d)
cp -r examples/broken-calc "$scratch/broken-calc"
git -C "$scratch/broken-calc" init --quiet --initial-branch=main
git -C "$scratch/broken-calc" add --all
git -C "$scratch/broken-calc" -c user.name=demo -c user.email=demo@example.com commit --quiet -m "broken calc"

echo "example copied to $scratch/broken-calc; running: meta-agent run --dry-run" >&2
PATH="$PWD/$venv/bin:$PATH" exec target/debug/meta-agent --repo "$scratch/broken-calc" \
  run --text "Make the gates pass" --dry-run "$@"
