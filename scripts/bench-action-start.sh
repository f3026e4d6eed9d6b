#!/usr/bin/env bash
# Cold start of the Action's two paths, measured on this machine (README "Benchmarks").
#
#   download  `scripts/action-binary.sh resolve` on a fresh copy of the action's sources whose
#             release/binaries.sha256 records BINARY, against a loopback HTTP server serving it,
#             then `meta-agent --version`: digest of the sources, download, SHA-256 check and the
#             first start. A hosted runner adds the transfer of the binary from GitHub's release
#             storage on top.
#   build     with --build: `cargo build --release --locked` into an empty target directory (the
#             registry already downloaded), what the Action runs when no release binary matches.
#
# Usage: scripts/bench-action-start.sh [--build] [BINARY]   (BINARY: target/release/meta-agent)
set -euo pipefail
cd "$(dirname "$0")/.."

build=false
if [ "${1:-}" = "--build" ]; then
  build=true
  shift
fi
binary=${1:-target/release/meta-agent}
[ -x "$binary" ] || { echo "no binary at $binary: cargo build --release first" >&2; exit 2; }

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

version=0.0.0-bench
asset=meta-agent-x86_64-unknown-linux-musl
mkdir -p "$work/action/release" "$work/srv/v$version"
cp -r Cargo.toml Cargo.lock src crates gates hindsight scripts "$work/action/"
cp "$binary" "$work/srv/v$version/$asset"
(cd "$work/srv/v$version" && sha256sum "$asset" > SHA256SUMS)
ACTION_PATH="$work/action" VERSION=$version SHA256SUMS="$work/srv/v$version/SHA256SUMS" \
  scripts/action-binary.sh manifest > "$work/action/release/binaries.sha256"

python3 -c '
import http.server, socketserver, sys, os
os.chdir(sys.argv[1])
class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args): pass
with socketserver.TCPServer(("127.0.0.1", 0), Quiet) as httpd:
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()
' "$work/srv" > "$work/port" &
server=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(cat "$work/port")

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
runs=()
for run in 1 2 3 4 5; do
  rm -rf "$work/bin" "$work/out"
  start=$(now_ms)
  env -i PATH="$PATH" ACTION_PATH="$work/action" RUNNER_OS=Linux RUNNER_ARCH=X64 \
    RELEASE_BASE_URL="http://127.0.0.1:$port" BIN_DIR="$work/bin" GITHUB_OUTPUT="$work/out" \
    bash scripts/action-binary.sh resolve > /dev/null
  grep -qx 'how=download' "$work/out" || { echo "run $run did not download" >&2; exit 1; }
  "$work/bin/meta-agent" --version > /dev/null
  runs+=($(( $(now_ms) - start )))
done
size=$(stat -c %s "$binary")
echo "download path: $(printf '%s ms ' "${runs[@]}")(5 runs; binary $((size / 1024 / 1024)) MiB, loopback)"

if $build; then
  start=$(now_ms)
  CARGO_TARGET_DIR="$work/target" CARGO_TERM_COLOR=never \
    cargo build --release --locked --quiet --bin meta-agent --manifest-path "$work/action/Cargo.toml"
  echo "build path: $(( ($(now_ms) - start) / 1000 )) s (cargo build --release --locked, empty target directory)"
fi
