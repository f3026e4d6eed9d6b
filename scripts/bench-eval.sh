#!/usr/bin/env bash
# Evaluation harness figures (README "Benchmarks"): runs the bundled suite with --jobs 1 and 2
# and prints, from results.jsonl, the wall time of the whole evaluation and the harness overhead
# per run outside the engine (clone, configuration, setup, grading, bookkeeping) for the tasks
# graded by the engine's own gates only (no hidden tests re-run: their time is the tests').
# Usage: scripts/bench-eval.sh [BINARY]   (default target/debug/meta-agent; needs pytest on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/debug/meta-agent}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for jobs in 1 2; do
  start=$(date +%s.%N)
  "$bin" eval run evals/bundled --jobs "$jobs" --out "$out/j$jobs" >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 - "$out/j$jobs/results.jsonl" "$jobs" "$start" "$end" <<'PY'
import json, statistics, sys
path, jobs, start, end = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
rows = [json.loads(line) for line in open(path)]
plain = [r for r in rows if [d["kind"] for d in r["grader_details"]] in (["gates"], ["outcome"])]
over = [r["overhead_s"] * 1000 for r in plain]
print(f"--jobs {jobs}: {len(rows)} runs in {end - start:.1f} s wall; "
      f"overhead per run outside the engine ({len(plain)} gates-graded runs): "
      f"median {statistics.median(over):.0f} ms, max {max(over):.0f} ms")
PY
done
