#!/usr/bin/env bash
# Fetches the real open-source projects that tests/suite/real_projects.rs runs meta-agent on,
# from the package registries with their ordinary clients, into target/real-projects/ (nothing
# of theirs is committed here; fixtures/README.md lists each with its source, version and licence):
#   python/humanize  humanize 4.10.0, the sdist from PyPI (MIT), and python/venv: the
#                    environment its developers have (its `tests` extra: pytest, pytest-cov,
#                    freezegun; the ruff its pre-commit configuration pins; humanize itself,
#                    for the version its __init__ reads from its metadata)
#   rust/strsim      strsim 0.11.1, the crate from crates.io (MIT), through `cargo fetch`
#   go/go-cmp        github.com/google/go-cmp 0.5.9, Debian's golang-github-google-go-cmp-dev
#                    (BSD-3-Clause; there is no Go module proxy here), through `apt-get download`
#   node/path-to-regexp.cached  path-to-regexp's devDependencies (vitest...), into npm's cache: the
#                    package itself is vendored at a pinned commit (fixtures/real-projects/), and a
#                    run's setup installs them from its lockfile with `npm ci --prefer-offline`
# Idempotent: a project already there is kept. Needs the network (scripts/test.sh runs it first).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD/target/real-projects"
mkdir -p "$root"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

if [ ! -f "$root/python/humanize/pyproject.toml" ]; then
  mkdir -p "$root/python"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    humanize==4.10.0 -d "$scratch/py"
  tar xzf "$scratch/py/humanize-4.10.0.tar.gz" -C "$scratch/py"
  rm -rf "$root/python/humanize"
  mv "$scratch/py/humanize-4.10.0" "$root/python/humanize"
fi
if [ ! -x "$root/python/venv/bin/ruff" ]; then
  python3 -m venv "$root/python/venv"
  "$root/python/venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "humanize[tests]==4.10.0" pytest==9.2.0 pytest-cov==7.1.0 freezegun==1.5.5 ruff==0.5.0
fi

if [ ! -f "$root/rust/strsim/Cargo.toml" ]; then
  mkdir -p "$root/rust" "$scratch/fetch/src"
  printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nstrsim = "=0.11.1"\n' \
    > "$scratch/fetch/Cargo.toml"
  touch "$scratch/fetch/src/lib.rs"
  (cd "$scratch/fetch" && cargo fetch --quiet)
  crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/strsim-0.11.1.crate | head -n 1)
  tar xzf "$crate" -C "$scratch"
  rm -rf "$root/rust/strsim"
  mv "$scratch/strsim-0.11.1" "$root/rust/strsim"
fi

if [ ! -f "$root/go/go-cmp/go.mod" ]; then
  mkdir -p "$root/go" "$scratch/deb"
  (cd "$scratch/deb" && apt-get download -q golang-github-google-go-cmp-dev=0.5.9-1 2>/dev/null \
    || { apt-get update -q >/dev/null && apt-get download -q golang-github-google-go-cmp-dev=0.5.9-1; })
  dpkg-deb -x "$scratch"/deb/*.deb "$scratch/deb/x"
  rm -rf "$root/go/go-cmp"
  cp -r "$scratch/deb/x/usr/share/gocode/src/github.com/google/go-cmp" "$root/go/go-cmp"
  cp "$scratch/deb/x/usr/share/doc/golang-github-google-go-cmp-dev/copyright" "$root/go/go-cmp.copyright"
fi
if [ ! -f "$root/node/path-to-regexp.cached" ]; then
  mkdir -p "$root/node" "$scratch/node"
  cp fixtures/real-projects/path-to-regexp/package.json \
    fixtures/real-projects/path-to-regexp/package-lock.json "$scratch/node/"
  (cd "$scratch/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  touch "$root/node/path-to-regexp.cached"
fi
echo "real-projects.sh: ready in $root" >&2
