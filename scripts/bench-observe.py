#!/usr/bin/env python3
"""The observe-first targets, measured end to end: the real `meta-agent` binary, real git, the
example Python repository with real pytest gates, and an oracle model (a loopback
OpenAI-compatible server that gives the fix at the earliest moment the prompt allows).

The oracle knows the bug (`sum(values) // len(values)` in calc.py) and nothing else: it answers
with the edit and `finish` in one answer only when the prompt it was sent shows that exact faulty
text (a real model cannot write an `edit_file` whose `old_string` it has never seen; the tool
refuses one that does not match). The text can come from the code excerpts the prompt opens with,
from a tool result (the file it read), or from a hindsight hint's diff (`-    return sum(values)
// len(values)` under `+++ b/calc.py`: a near miss shows the very change that fixed a failure of
the same family). Otherwise it explores first: it reads calc.py, the module the failing test
calls, and answers from the file it was shown. So it is the best case of any model, no better
than the prompt allows: one call where the prompt holds the fix's context, two where it must look.

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
gates minus model), and the wall time to the verified commit.

Usage: scripts/bench-observe.py [BINARY]   (default target/release/meta-agent, else debug)
BENCH_OBSERVE_PROMPTS=DIR writes every prompt the oracle was sent to DIR/<scenario>.<call>.txt.
The gates need pytest, pytest-cov and ruff on PATH (scripts/test.sh's virtualenv has them), and
the counts need tiktoken (`pip install tiktoken` there); its o200k_base table is read from
tiktoken-rs's copy in the cargo registry (the same table the Rust test counts with; tiktoken
checks its SHA-256), so no download is needed.
"""

import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUG = "sum(values) // len(values)"
FIX = "sum(values) / len(values)"

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def o200k():
    """tiktoken's o200k_base, its table seeded into tiktoken's cache from tiktoken-rs's copy."""
    import glob
    import hashlib

    import tiktoken  # noqa: PLC0415 - a clear error below when missing

    cache = os.environ.setdefault(
        "TIKTOKEN_CACHE_DIR", os.path.join(ROOT, "target", "tiktoken-cache"))
    os.makedirs(cache, exist_ok=True)
    cached = os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest())
    if not os.path.exists(cached):
        home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
        tables = sorted(glob.glob(
            os.path.join(home, "registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken")))
        if not tables:
            sys.exit("bench-observe: no o200k_base table in the cargo registry (build first)")
        shutil.copyfile(tables[-1], cached)
    return tiktoken.get_encoding("o200k_base")


try:
    ENC = o200k()
except ImportError:
    sys.exit("bench-observe: exact token counts need tiktoken: pip install tiktoken")


def prompt_text(request):
    """What the model was sent, as suite::observe::prompt_text joins it."""
    contents = [m["content"] for m in request["messages"] if isinstance(m.get("content"), str)]
    tools = json.dumps(request.get("tools"), separators=(",", ":"), sort_keys=True,
                       ensure_ascii=False)
    return "\n".join(contents) + "\n" + tools


class Oracle(http.server.BaseHTTPRequestHandler):
    requests = []
    prompts = []
    bug_file = "calc.py"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        request = json.loads(body)
        prompt = prompt_text(request)
        Oracle.requests.append(len(ENC.encode(prompt)))
        Oracle.prompts.append(prompt)
        if BUG in prompt:
            calls = [
                ("edit_file", {"path": Oracle.bug_file, "old_string": BUG, "new_string": FIX}),
                ("finish", {"summary": "Use true division in mean"}),
            ]
        else:
            calls = [("read_file", {"path": Oracle.bug_file})]
        answer = {
            "id": "oracle", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "",
                "tool_calls": [
                    {"id": f"c{i}", "type": "function",
                     "function": {"name": name, "arguments": json.dumps(args)}}
                    for i, (name, args) in enumerate(calls)]}}],
            "usage": {"prompt_tokens": Oracle.requests[-1], "completion_tokens": 40,
                      "total_tokens": Oracle.requests[-1] + 40},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def git(work, *args):
    return subprocess.run(
        ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", *args],
        cwd=work, check=True, capture_output=True, text=True).stdout


def repository(base_url, helper=False):
    """The example in a new repository, the bug committed; with `helper`, mean() delegates to
    averages.mean_of() (the fault one module away from what the failure names)."""
    top = tempfile.mkdtemp(prefix="bench-observe-")
    work = os.path.join(top, "work")
    shutil.copytree(os.path.join(ROOT, "examples/python-calc"), work)
    with open(os.path.join(work, ".meta-agent.yml"), "a") as config:
        config.write(f'llm: {{provider: openai, base_url: "{base_url}", model: oracle, '
                     'stream: false}\n')
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
    break_mean(work)
    git(work, "commit", "-q", "-am", "break mean")
    return top, work


def break_mean(work):
    path = os.path.join(work, Oracle.bug_file)
    text = open(path).read().replace(FIX, BUG, 1)
    open(path, "w").write(text)


def timed_events(binary, work, text):
    """Runs meta-agent with --json and stamps every event line as it arrives (the stream is
    flushed line by line), so gate runs can be timed from the outside. Returns the events with
    their arrival time under "_at" (seconds since the start), stderr and the wall time."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [binary, "--repo", work, "run", "--text", text, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OPENAI_API_KEY": "bench"})
    stderr = []
    reader = threading.Thread(target=lambda: stderr.append(proc.stderr.read()), daemon=True)
    reader.start()
    events = []
    for line in proc.stdout:
        if line.startswith("{"):
            event = json.loads(line)
            event["_at"] = time.monotonic() - started
            events.append(event)
    proc.wait()
    reader.join()
    return events, "".join(stderr), time.monotonic() - started


def gate_time(events):
    """The time at least one gate command was running (the union of gate_started→gate_finished
    intervals: gates of one run overlap), in seconds."""
    running, since, total = 0, 0.0, 0.0
    for event in events:
        if event.get("event") == "gate_started":
            if running == 0:
                since = event["_at"]
            running += 1
        elif event.get("event") in ("gate_finished", "gate_skipped") and running > 0:
            running -= 1
            if running == 0:
                total += event["_at"] - since
    return total


def run(binary, work, text, scenario):
    Oracle.requests = []
    Oracle.prompts = []
    events, stderr, wall = timed_events(binary, work, text)
    dump = os.environ.get("BENCH_OBSERVE_PROMPTS")
    for i, prompt in enumerate(Oracle.prompts if dump else []):
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, f"{scenario}.{i + 1}.txt"), "w") as handle:
            handle.write(prompt)
    outcome = events[-1] if events else {}
    phases = [e for e in events if e.get("event") == "phase_finished"]
    baseline_ms = sum(e["duration_ms"] for e in phases if e["phase"] == "baseline")
    model_ms = sum(e["duration_ms"] for e in events if e.get("event") == "llm_call")
    gates_s = gate_time(events)
    # Every gate run (the baseline, a flaky check, a fast re-run, a full run in the worktree, the
    # pristine verification) starts the tests gate once.
    gate_runs = sum(1 for e in events if e.get("event") == "gate_started" and e["gate"] == "tests")
    iterations = max(1, sum(1 for e in phases if e["phase"] in ("test", "verify")))
    return {
        "outcome": outcome.get("outcome"),
        "commit": outcome.get("commit"),
        "llm_calls": len(Oracle.requests),
        "prompt_tokens": sum(Oracle.requests),
        "prompt_tokens_per_call": list(Oracle.requests),
        "baseline_ms": baseline_ms,
        "gate_runs": gate_runs,
        "gates_s": round(gates_s, 2),
        "model_s": round(model_ms / 1000, 2),
        "wall_over_gates_and_model": round(wall / max(gates_s + model_ms / 1000, 1e-9), 2),
        "overhead_ms_per_iteration": round((wall - gates_s - model_ms / 1000) * 1000 / iterations, 1),
        "wall_s": round(wall, 2),
        "stderr_tail": stderr[-400:] if outcome.get("outcome") != "committed" else "",
    }


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else next(
        p for p in (os.path.join(ROOT, "target/release/meta-agent"),
                    os.path.join(ROOT, "target/debug/meta-agent")) if os.path.exists(p))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Oracle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    tops = []
    try:
        Oracle.bug_file = "calc.py"
        top, work = repository(base_url)
        tops.append(top)
        first = run(binary, work, "Fix mean of floats", "first-seen")
        print(json.dumps({"scenario": "first-seen", **first}))
        merge(work, first["commit"])
        break_mean(work)
        git(work, "commit", "-q", "-am", "the bug comes back")
        again = run(binary, work, "Fix mean of floats again", "recurrence")
        print(json.dumps({"scenario": "recurrence", **again}))
        for layout, bug_file, helper in (("same-module", "calc.py", False),
                                         ("helper-module", "averages.py", True)):
            Oracle.bug_file = bug_file
            top, work = repository(base_url, helper)
            tops.append(top)
            near_miss(binary, top, work, layout)
    finally:
        server.shutdown()
        for top in tops:
            shutil.rmtree(top, ignore_errors=True)


def merge(work, commit):
    git(work, "checkout", "-q", "main")
    git(work, "merge", "-q", "--ff-only", commit)


def near_miss(binary, top, work, layout):
    """A fix learned for test_mean; then the test renamed (test_mean_of_floats: another test id,
    so another signature of the same family) and the bug back. Run from two clones of that
    commit (no shared run memory): one whose store has the test_mean entry, one without it."""
    learned = run(binary, work, "Fix mean of floats", f"near-miss-{layout}-learn")
    merge(work, learned["commit"])
    tests = os.path.join(work, "tests", "test_calc.py")
    text = open(tests).read().replace("def test_mean():", "def test_mean_of_floats():", 1)
    open(tests, "w").write(text)
    break_mean(work)
    git(work, "commit", "-q", "-am", "rename test_mean; the bug comes back")
    task = "The test suite fails; make it pass"
    for store in ("family", "none"):
        clone = os.path.join(top, store)
        git(top, "clone", "-q", work, clone)
        if store == "none":
            git(clone, "rm", "-q", "-r", ".meta-agent/hindsight/entries")
            git(clone, "commit", "-q", "-m", "a store without the entry")
        scenario = f"near-miss-{layout}-{store}"
        print(json.dumps({"scenario": scenario, **run(binary, clone, task, scenario)}))


if __name__ == "__main__":
    main()
