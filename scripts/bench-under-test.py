#!/usr/bin/env python3
"""The code-under-test targets (issue #25), measured end to end: the real `meta-agent` binary,
real git and real gates (pytest and ruff, vitest, cargo fmt/clippy/nextest) on the repositories
of fixtures/under-test/, each first-seen bug of its scenarios.json put in alone and committed,
and the oracle model of scripts/oracle.py (the fix in its first answer only when the prompt shows
the faulty line; otherwise it reads the file first). The task names no code ("The tests fail;
make them pass"), so only the failure and the code the prompt shows lead to the fix.

Scenarios: for each of Python, TypeScript and Rust, a function the test imports unqualified
through the package's re-export (target: 1 call, <= 3,000 prompt tokens with the tool schemas),
a method of a class the test makes an instance of, and a helper whose callee two calls away is
wrong (targets: 1 call, <= 3,500 tokens); and a real library's real bug: humanize 4.12.3 with
the one-line fix of its #250 reverted (fixtures/under-test/README.md).

Prints one JSON line per scenario: model calls, prompt tokens per call and in all, the baseline's
time (the gates' own), the harness overhead per iteration and the wall time to the verified
commit. With --only REPO, that repository's scenarios (python, typescript, rust, humanize).

Usage: scripts/bench-under-test.py [--only REPO] [BINARY]
BENCH_PROMPTS=DIR writes every prompt the oracle was sent to DIR/<scenario>.<call>.txt.
Needs on PATH: pytest and ruff (scripts/test.sh's virtualenv), npm and npx (vitest is installed
by each run's setup from npm's cache: scripts/test.sh fills it), cargo with fmt, clippy and
nextest; and tiktoken for the counts.
"""

import json
import os
import shutil
import sys
import tempfile

from oracle import ROOT, Bug, Oracle, binary_from, git, run

FIXTURES = os.path.join(ROOT, "fixtures", "under-test")


def broken(oracle, scenario):
    """The scenario's repository in a new directory, its bug committed, its model the oracle."""
    top = tempfile.mkdtemp(prefix="bench-under-test-")
    work = os.path.join(top, "work")
    shutil.copytree(os.path.join(FIXTURES, scenario["repo"]), work,
                    ignore=shutil.ignore_patterns("node_modules", "target", "__pycache__"))
    config = os.path.join(work, ".meta-agent.yml")
    existing = open(config).read() if os.path.exists(config) else "version: 1\n"
    with open(config, "w") as handle:
        handle.write(existing + oracle.llm_config())
    path = os.path.join(work, scenario["file"])
    text = open(path).read()
    if scenario["fixed"] not in text:
        sys.exit(f"bench-under-test: {scenario['file']} does not hold {scenario['fixed']!r}")
    open(path, "w").write(text.replace(scenario["fixed"], scenario["bug"], 1))
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "the bug")
    return top, work


def main():
    args = sys.argv[1:]
    only = None
    if args[:1] == ["--only"]:
        only, args = args[1], args[2:]
    binary = binary_from([sys.argv[0], *args])
    with open(os.path.join(FIXTURES, "scenarios.json")) as handle:
        spec = json.load(handle)
    with Oracle() as oracle:
        for scenario in spec["scenarios"]:
            if only and scenario["repo"] != only:
                continue
            name = f"{scenario['repo']}-{scenario['shape']}"
            bug = Bug(scenario["bug"], scenario["fixed"], scenario["file"],
                      f"Correct the {scenario['shape']} bug")
            top, work = broken(oracle, scenario)
            try:
                result = run(binary, work, spec["task"], name, bug)
            finally:
                shutil.rmtree(top, ignore_errors=True)
            print(json.dumps({"scenario": name, "budget": scenario["budget"], **result}),
                  flush=True)


if __name__ == "__main__":
    main()
