#!/usr/bin/env python3
"""The cost of "verified means the commit" (SECURITY.md, C6): the observation of a change on a
pristine checkout of the tree to commit, against the same observation in the worktree, with warm
caches.

Two real `meta-agent run`s per sample (the real binary, real git, the repository's real gates, a
scripted one-edit fix, no model): in both the baseline builds and fills the caches and the act
fixes the bug; then, with `verify.pristine: false`, the gates run in the worktree (the normal
gate run, warm: only what the fix touched is rebuilt), and by default they run once on the
pristine checkout instead (fresh checkout of the candidate tree, the dependency snapshot copied
in, every gate: the observation and the verification in one run). Both durations come from the
runs' own `phase_finished` events; the snapshot's cost (taken once per run, before the first
act) from its debug log line.

Repositories:
  python-calc   examples/python-calc (ruff, pytest, pytest-cov)
  broken-calc   examples/broken-calc (the same gates, with a hindsight store)
  rust-crate    a small crate created here (one dependency from the local registry cache:
                itoa), with the Rust preset's gates: cargo fmt, clippy, cargo-nextest

Usage: scripts/bench-pristine.py [BINARY] [SAMPLES]   (default target/release/meta-agent, else
debug; 3 samples). The Python gates need pytest, pytest-cov and ruff on PATH (scripts/test.sh's
virtualenv has them); the Rust one cargo, clippy, rustfmt and cargo-nextest, and no network.
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUG = "sum(values) // len(values)"
FIX = "sum(values) / len(values)"

RUST_CARGO = """[package]
name = "pristine-bench"
version = "0.1.0"
edition = "2021"

[dependencies]
itoa = "1"
"""

RUST_LIB = """//! Formats numbers.

/// The decimal form of `n`, with a sign when negative.
pub fn show(n: i64) -> String {
    let mut buffer = itoa::Buffer::new();
    buffer.format(n).to_owned()
}

/// The mean of `values`, rounded down.
pub fn mean(values: &[i64]) -> i64 {
    values.iter().sum::<i64>() / values.len() as i64 + BUG_TERM
}

const BUG_TERM: i64 = 1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_numbers() {
        assert_eq!(show(-42), "-42");
    }

    #[test]
    fn means() {
        assert_eq!(mean(&[1, 2, 3]), 2);
    }
}
"""


def run(cmd, cwd, env=None, check=True):
    return subprocess.run(cmd, cwd=cwd, env=env, check=check, capture_output=True, text=True)


def git(cwd, *args):
    run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args], cwd)


def binary():
    if len(sys.argv) > 1:
        return os.path.abspath(sys.argv[1])
    for profile in ("release", "debug"):
        path = os.path.join(ROOT, "target", profile, "meta-agent")
        if os.path.exists(path):
            return path
    sys.exit("build meta-agent first (cargo build --release)")


def python_repo(example, work):
    shutil.copytree(os.path.join(ROOT, "examples", example), work)
    calc = os.path.join(work, "calc.py")
    text = open(calc).read()
    open(calc, "w").write(text.replace(FIX, BUG, 1))
    return {"path": "calc.py", "search": BUG, "replace": FIX}


def rust_repo(work):
    os.makedirs(os.path.join(work, "src"))
    open(os.path.join(work, "Cargo.toml"), "w").write(RUST_CARGO)
    open(os.path.join(work, "src", "lib.rs"), "w").write(RUST_LIB)
    open(os.path.join(work, ".gitignore"), "w").write("/target\n")
    open(os.path.join(work, ".meta-agent.yml"), "w").write("version: 1\npreset: rust\nsetup: []\n")
    run(["cargo", "generate-lockfile", "--offline"], work)
    return {"path": "src/lib.rs", "search": "const BUG_TERM: i64 = 1;",
            "replace": "const BUG_TERM: i64 = 0;"}


def sample(meta_agent, name, pristine):
    scratch = tempfile.mkdtemp(prefix="bench-pristine-")
    try:
        work = os.path.join(scratch, "work")
        fix = rust_repo(work) if name == "rust-crate" else python_repo(name, work)
        if not pristine:
            with open(os.path.join(work, ".meta-agent.yml"), "a") as config:
                config.write("verify: {pristine: false}\n")
        git(work, "init", "-q")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", "buggy")
        task = os.path.join(scratch, "task.json")
        json.dump({"title": "Fix the bug", "requirements": "Make the gates pass.",
                   "edits": [{"summary": "fix", "changes": [{"replace": fix}]}]},
                  open(task, "w"))
        env = dict(os.environ, RUST_LOG="meta_agent=debug")
        out = run([meta_agent, "--repo", work, "run", "--task", task, "--json"], scratch, env,
                  check=False)
        events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        outcome = events[-1] if events else {}
        if outcome.get("outcome") != "committed":
            sys.exit(f"{name}: the run did not commit: {out.stdout[-2000:]}\n{out.stderr[-3000:]}")
        finished = [e for e in events if e.get("event") == "phase_finished"]
        wanted = "pristine checkout: gates passed" if pristine else "gates passed"
        observed = [e["duration_ms"] for e in finished
                    if e["iteration"] >= 1 and e["outcome"] == wanted]
        baseline = [e["duration_ms"] for e in finished if e["outcome"].startswith("baseline")]
        seed = re.search(r"dependency snapshot taken in (\d+) ms", out.stderr)
        return {"baseline": baseline[0], "observed": observed[-1],
                "seed": int(seed.group(1)) if seed else 0}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main():
    meta_agent = binary()
    samples = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    print(f"binary: {meta_agent}; {samples} sample(s) per repository; medians in ms")
    print("| repository | baseline (cold for the run) | normal gate run (warm) | pristine "
          "verification | ratio | dependency snapshot |")
    print("|---|---|---|---|---|---|")
    for name in ("python-calc", "broken-calc", "rust-crate"):
        worktree = [sample(meta_agent, name, False) for _ in range(samples)]
        pristine = [sample(meta_agent, name, True) for _ in range(samples)]
        median = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa: E731
        ratio = median(pristine, "observed") / max(median(worktree, "observed"), 1)
        print(f"| {name} | {median(pristine, 'baseline'):.0f} | "
              f"{median(worktree, 'observed'):.0f} | {median(pristine, 'observed'):.0f} | "
              f"{ratio:.2f}x | {median(pristine, 'seed'):.0f} |")


if __name__ == "__main__":
    main()
