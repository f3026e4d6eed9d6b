#!/usr/bin/env python3
"""The observe-first targets, measured end to end: the real `meta-agent` binary, real git, the
example Python repository with real pytest gates, and an oracle model (a loopback
OpenAI-compatible server that gives the fix at the earliest moment the prompt allows).

The oracle (scripts/oracle.py) knows the bug (`sum(values) // len(values)` in calc.py) and
nothing else: it edits in its first answer only when the prompt shows that faulty text, from the
code excerpts the prompt opens with, from a tool result (the file it read), or from a hindsight
hint's diff (`-    return sum(values) // len(values)` under `+++ b/calc.py`: a near miss shows the
very change that fixed a failure of the same family); otherwise it reads calc.py first.

Scenarios:
  first-seen         mean() uses floor division; task "Fix mean of floats" (its `mean` leads the
                     prompt to calc.py).
  recurrence         the first-seen fix merged, then the bug reintroduced; model configured.
  near-miss-family   the fix merged, the test renamed (test_mean -> test_mean_of_floats: another
                     test id, so another signature of the same family), the bug back, and a task
                     naming no code ("The test suite fails; make it pass"): the store's entry for
                     test_mean is shown as a hint with its diff.
  near-miss-none     the same, from a store without that entry (removed in a commit).
Prints, per scenario: model calls, prompt tokens per call and in all (o200k_base, counted as
`suite::observe` counts them against the README's 3,000: every message's text joined by newlines,
then the tool schemas as compact JSON with sorted keys), the baseline's wall time (the gates'
own), the gate runs (each run starts the tests gate once: the baseline, a flaky check, a fast
re-run, a full run in the worktree, the pristine verification), the gates' own time (the time
at least one gate command was running, from the --json events stamped as they arrive), the
model's time, the wall time over those two, the harness overhead per iteration (wall time minus
gates minus model), and the wall time to the verified commit (scripts/oracle.py's run()).

Usage: scripts/bench-observe.py [BINARY]   (default target/release/meta-agent, else debug)
BENCH_PROMPTS=DIR writes every prompt the oracle was sent to DIR/<scenario>.<call>.txt.
The gates need pytest, pytest-cov and ruff on PATH (scripts/test.sh's virtualenv has them), and
the counts need tiktoken (`pip install tiktoken` there).
"""

import json
import os
import shutil
import sys
import tempfile

from oracle import ROOT, Bug, Oracle, binary_from, git, run

BUG = "sum(values) // len(values)"
FIX = "sum(values) / len(values)"


def bug_in(path):
    return Bug(BUG, FIX, path, "Use true division in mean")


def repository(oracle, helper=False):
    """The example in a new repository, the bug committed; with `helper`, mean() delegates to
    averages.mean_of() (the fault one module away from what the failure names)."""
    top = tempfile.mkdtemp(prefix="bench-observe-")
    work = os.path.join(top, "work")
    shutil.copytree(os.path.join(ROOT, "examples/python-calc"), work)
    with open(os.path.join(work, ".meta-agent.yml"), "a") as config:
        config.write(oracle.llm_config())
    if helper:
        calc = os.path.join(work, "calc.py")
        text = open(calc).read().replace(f"return {FIX}", "return averages.mean_of(values)")
        open(calc, "w").write("import averages\n\n" + text)
        with open(os.path.join(work, "averages.py"), "w") as averages:
            averages.write(f'"""Averages for calc."""\n\n\ndef mean_of(values: list[float]) -> float:\n'
                           f"    return {FIX}\n")
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "initial")
    return top, work


def break_mean(work, path):
    full = os.path.join(work, path)
    text = open(full).read().replace(FIX, BUG, 1)
    open(full, "w").write(text)


def main():
    binary = binary_from(sys.argv)
    tops = []
    with Oracle() as oracle:
        try:
            top, work = repository(oracle)
            tops.append(top)
            break_mean(work, "calc.py")
            git(work, "commit", "-q", "-am", "break mean")
            first = run(binary, work, "Fix mean of floats", "first-seen", bug_in("calc.py"))
            print(json.dumps({"scenario": "first-seen", **first}))
            merge(work, first["commit"])
            break_mean(work, "calc.py")
            git(work, "commit", "-q", "-am", "the bug comes back")
            again = run(binary, work, "Fix mean of floats again", "recurrence", bug_in("calc.py"))
            print(json.dumps({"scenario": "recurrence", **again}))
            for layout, bug_file, helper in (("same-module", "calc.py", False),
                                             ("helper-module", "averages.py", True)):
                top, work = repository(oracle, helper)
                tops.append(top)
                break_mean(work, bug_file)
                git(work, "commit", "-q", "-am", "break mean")
                near_miss(binary, top, work, layout, bug_file)
        finally:
            for top in tops:
                shutil.rmtree(top, ignore_errors=True)


def merge(work, commit):
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--ff-only", commit)


def near_miss(binary, top, work, layout, bug_file):
    """A fix learned for test_mean; then the test renamed (test_mean_of_floats: another test id,
    so another signature of the same family) and the bug back. Run from two clones of that
    commit (no shared run memory): one whose store has the test_mean entry, one without it."""
    bug = bug_in(bug_file)
    learned = run(binary, work, "Fix mean of floats", f"near-miss-{layout}-learn", bug)
    merge(work, learned["commit"])
    tests = os.path.join(work, "tests", "test_calc.py")
    text = open(tests).read().replace("def test_mean():", "def test_mean_of_floats():", 1)
    open(tests, "w").write(text)
    break_mean(work, bug_file)
    git(work, "commit", "-q", "-am", "rename test_mean; the bug comes back")
    task = "The test suite fails; make it pass"
    for store in ("family", "none"):
        clone = os.path.join(top, store)
        git(top, "clone", "-q", work, clone)
        if store == "none":
            git(clone, "rm", "-q", "-r", ".meta-agent/hindsight/entries")
            git(clone, "commit", "-q", "-m", "a store without the entry")
        scenario = f"near-miss-{layout}-{store}"
        print(json.dumps({"scenario": scenario, **run(binary, clone, task, scenario, bug)}))


if __name__ == "__main__":
    main()
