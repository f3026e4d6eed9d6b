#!/usr/bin/env bash
# Which meta-agent binary the GitHub Action runs (action.yml calls this; tests/suite/action.rs
# drives it against a loopback server). Everything comes in through environment variables; no
# value is ever spliced into a command.
#
#   action-binary.sh digest     prints the digest of the action's sources (the files that go
#                               into the binary: Cargo.toml, Cargo.lock, build.rs, src, crates,
#                               gates, hindsight), the same as the release workflow records
#   action-binary.sh manifest   prints release/binaries.sha256 for VERSION from the checksums in
#                               SHA256SUMS (the release workflow calls this)
#   action-binary.sh resolve    fetches the release binary recorded in release/binaries.sha256
#                               when it was built from exactly these sources, verifies its
#                               SHA-256 against that committed file (never against anything
#                               downloaded), and writes `how=download` and `bin=PATH` to
#                               GITHUB_OUTPUT; otherwise says why and writes `how=build` with the
#                               `bin`, `bin-dir` and cache `key` for building from source.
#                               A binary whose checksum does not match is refused (exit 1).
#
# Inputs: ACTION_PATH (default GITHUB_ACTION_PATH), GITHUB_OUTPUT; for resolve also BIN_DIR
# (where a downloaded binary goes), BUILD_DIR (where a built one goes), RUNNER_OS, RUNNER_ARCH
# (X64, ARM64; default from uname), RELEASE_BASE_URL (default
# GITHUB_SERVER_URL/<the action's repository>/releases/download), ImageOS (cache key only).
# For manifest: VERSION, SHA256SUMS (a `sha256sum` file).
set -euo pipefail

action_path=${ACTION_PATH:-${GITHUB_ACTION_PATH:-$(cd "$(dirname "$0")/.." && pwd)}}
manifest_file="$action_path/release/binaries.sha256"

if command -v sha256sum >/dev/null 2>&1; then sha256=(sha256sum); else sha256=(shasum -a 256); fi
sha256() { "${sha256[@]}" "$@"; }

# sha256 of the `sha256sum` lines of every source file, in C order (one process for all files).
source_digest() {
  (
    cd "$action_path"
    { find Cargo.toml Cargo.lock build.rs src crates gates hindsight -type f -print0 2>/dev/null || true; } |
      LC_ALL=C sort -z | xargs -0 -r "${sha256[@]}" | sha256 | cut -c1-32
  )
}

# The release target for this runner, or nothing when there is no prebuilt binary for it.
target_triple() {
  local os=${RUNNER_OS:-$(uname -s)} arch=${RUNNER_ARCH:-$(uname -m)}
  case "$os" in Linux) ;; *) return 0 ;; esac
  case "$arch" in
    X64 | x86_64 | amd64) echo x86_64-unknown-linux-musl ;;
    ARM64 | aarch64 | arm64) echo aarch64-unknown-linux-musl ;;
  esac
}

# owner/name of the action's repository: GitHub's variable when it is set, else the checkout
# path of a remote action (.../_actions/OWNER/NAME/REF), else the workflow's own repository
# (`uses: ./`).
action_repository() {
  local rest
  if [ -n "${GITHUB_ACTION_REPOSITORY:-}" ]; then
    echo "$GITHUB_ACTION_REPOSITORY"
    return
  fi
  case "$action_path" in
    */_actions/*/*/*)
      rest=${action_path#*/_actions/}
      echo "${rest%%/*}/$(echo "${rest#*/}" | cut -d/ -f1)"
      ;;
    *) echo "${GITHUB_REPOSITORY:-}" ;;
  esac
}

output() {
  printf '%s\n' "$@" >> "${GITHUB_OUTPUT:-/dev/stdout}"
}

# A field (`version`, `source`) of the committed manifest.
field() {
  awk -v name="$1" '$1 == name { print $2; exit }' "$manifest_file"
}

build_instead() {
  local digest=$1 reason=$2
  local build_dir=${BUILD_DIR:-${HOME:-/tmp}/.cache/meta-agent-action/bin}
  echo "::notice title=meta-agent::Building meta-agent from source (cargo build --release --locked): ${reason}."
  output "how=build" "bin-dir=${build_dir}" "bin=${build_dir}/meta-agent" \
    "key=meta-agent-bin-${RUNNER_OS:-unknown}-${RUNNER_ARCH:-unknown}-${ImageOS:-unknown}-${digest}"
}

resolve() {
  local digest target version recorded expected base url bin_dir tmp actual
  digest=$(source_digest)
  target=$(target_triple)
  if [ -z "$target" ]; then
    build_instead "$digest" "no prebuilt binary for ${RUNNER_OS:-$(uname -s)}/${RUNNER_ARCH:-$(uname -m)}"
    return
  fi
  if [ ! -f "$manifest_file" ]; then
    build_instead "$digest" "this commit of the action records no release binaries (release/binaries.sha256)"
    return
  fi
  version=$(field version)
  recorded=$(field source)
  if [ -z "$version" ] || [ "$recorded" != "$digest" ]; then
    build_instead "$digest" "the action's sources are not those release v${version:-?} was built from"
    return
  fi
  expected=$(awk -v name="meta-agent-$target" '$2 == name { print $1; exit }' "$manifest_file")
  if [ -z "$expected" ]; then
    build_instead "$digest" "release v${version} records no binary for ${target}"
    return
  fi
  base=${RELEASE_BASE_URL:-${GITHUB_SERVER_URL:-https://github.com}/$(action_repository)/releases/download}
  url="${base}/v${version}/meta-agent-${target}"
  bin_dir=${BIN_DIR:-${RUNNER_TEMP:-/tmp}/meta-agent-bin}
  mkdir -p "$bin_dir"
  tmp=$(mktemp "$bin_dir/.download.XXXXXX")
  if ! curl --fail --silent --show-error --location --proto '=https,http' \
      --retry 3 --retry-delay 2 --connect-timeout 20 --max-time 300 \
      --output "$tmp" "$url"; then
    rm -f "$tmp"
    build_instead "$digest" "the release binary could not be downloaded from ${url}"
    return
  fi
  actual=$(sha256 "$tmp" | cut -d' ' -f1)
  if [ "$actual" != "$expected" ]; then
    rm -f "$tmp"
    echo "::error title=meta-agent::Refusing the downloaded binary: its SHA-256 is ${actual}, release/binaries.sha256 records ${expected} for meta-agent-${target} v${version} (${url})."
    exit 1
  fi
  chmod 0755 "$tmp"
  mv -f "$tmp" "$bin_dir/meta-agent"
  echo "Using the release binary meta-agent-${target} v${version}, SHA-256 ${actual} as recorded in release/binaries.sha256."
  output "how=download" "bin=${bin_dir}/meta-agent"
}

manifest() {
  : "${VERSION:?VERSION names the release}" "${SHA256SUMS:?SHA256SUMS names the checksum file}"
  echo "# meta-agent release binaries: the version, the digest of the sources they were built from"
  echo "# (scripts/action-binary.sh digest), and their SHA-256. The Action runs a binary only when"
  echo "# its own sources have this digest and the download has this checksum."
  echo "version ${VERSION}"
  echo "source $(source_digest)"
  grep -E '^[0-9a-f]{64}  meta-agent-[a-z0-9_]+-unknown-linux-musl$' "$SHA256SUMS"
}

case "${1:-}" in
  digest) source_digest ;;
  resolve) resolve ;;
  manifest) manifest ;;
  *)
    echo "usage: $0 digest|resolve|manifest" >&2
    exit 2
    ;;
esac
