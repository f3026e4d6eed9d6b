"""The oracle model the benchmarks run meta-agent against, and how they count and time a run.

An oracle is a loopback OpenAI-compatible server that knows one bug: the faulty text, its fix and
the file. It answers with the edit and `finish` in one answer only when the prompt it was sent
shows that exact faulty text (a real model cannot write an `edit_file` whose `old_string` it has
never seen; the tool refuses one that does not match). Otherwise it reads the file first and
answers from what it was shown. So it is the best case of any model, no better than the prompt
allows: one call where the prompt holds the fix's context, two where it must look.

Prompt tokens are exact o200k_base counts, as `suite::observe` counts them against the README's
budgets: every message's text joined by newlines, then the tool schemas as compact JSON with
sorted keys. The table is read from tiktoken-rs's copy in the cargo registry (the same table the
Rust tests count with; tiktoken checks its SHA-256), so no download is needed.

Used by scripts/bench-observe.py and scripts/bench-under-test.py.
"""

import glob
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def o200k():
    """tiktoken's o200k_base, its table seeded into tiktoken's cache from tiktoken-rs's copy."""
    try:
        import tiktoken  # noqa: PLC0415 - a clear error below when missing
    except ImportError:
        sys.exit("oracle: exact token counts need tiktoken: pip install tiktoken")
    cache = os.environ.setdefault(
        "TIKTOKEN_CACHE_DIR", os.path.join(ROOT, "target", "tiktoken-cache"))
    os.makedirs(cache, exist_ok=True)
    cached = os.path.join(cache, hashlib.sha1(O200K_URL.encode()).hexdigest())
    if not os.path.exists(cached):
        home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
        tables = sorted(glob.glob(
            os.path.join(home, "registry/src/*/tiktoken-rs-*/assets/o200k_base.tiktoken")))
        if not tables:
            sys.exit("oracle: no o200k_base table in the cargo registry (build first)")
        shutil.copyfile(tables[-1], cached)
    return tiktoken.get_encoding("o200k_base")


ENC = o200k()


def prompt_text(request):
    """What the model was sent, as suite::observe::prompt_text joins it."""
    contents = [m["content"] for m in request["messages"] if isinstance(m.get("content"), str)]
    tools = json.dumps(request.get("tools"), separators=(",", ":"), sort_keys=True,
                       ensure_ascii=False)
    return "\n".join(contents) + "\n" + tools


class Bug:
    """What the oracle knows: the faulty text, its fix, the file, the summary it finishes with."""

    def __init__(self, bug, fix, path, summary):
        self.bug, self.fix, self.path, self.summary = bug, fix, path, summary


class Handler(http.server.BaseHTTPRequestHandler):
    bug = None
    requests = []
    prompts = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["content-length"])))
        prompt = prompt_text(request)
        Handler.requests.append(len(ENC.encode(prompt)))
        Handler.prompts.append(prompt)
        bug = Handler.bug
        if bug.bug in prompt:
            calls = [("edit_file", {"path": bug.path, "old_string": bug.bug,
                                    "new_string": bug.fix}),
                     ("finish", {"summary": bug.summary})]
        else:
            calls = [("read_file", {"path": bug.path})]
        answer = {
            "id": "oracle", "object": "chat.completion", "created": 0, "model": request["model"],
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": "",
                "tool_calls": [
                    {"id": f"c{i}", "type": "function",
                     "function": {"name": name, "arguments": json.dumps(args)}}
                    for i, (name, args) in enumerate(calls)]}}],
            "usage": {"prompt_tokens": Handler.requests[-1], "completion_tokens": 40,
                      "total_tokens": Handler.requests[-1] + 40},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Oracle:
    """The server, started on loopback; `base_url` goes into the repository's configuration."""

    def __enter__(self):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc):
        self.server.shutdown()

    def llm_config(self):
        """The `llm:` line of a `.meta-agent.yml` pointing at this oracle."""
        return (f'llm: {{provider: openai, base_url: "{self.base_url}", model: oracle, '
                'stream: false}\n')


def git(work, *args):
    return subprocess.run(
        ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com", *args],
        cwd=work, check=True, capture_output=True, text=True).stdout


def binary_from(argv):
    """The binary named on the command line, else the release build, else the debug one."""
    if len(argv) > 1:
        return argv[1]
    return next(p for p in (os.path.join(ROOT, "target/release/meta-agent"),
                            os.path.join(ROOT, "target/debug/meta-agent")) if os.path.exists(p))


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


def run(binary, work, text, scenario, bug):
    """One `meta-agent run` against the oracle knowing `bug`: calls, tokens, gate runs and times."""
    Handler.bug = bug
    Handler.requests = []
    Handler.prompts = []
    events, stderr, wall = timed_events(binary, work, text)
    dump = os.environ.get("BENCH_PROMPTS")
    for i, prompt in enumerate(Handler.prompts if dump else []):
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
        "llm_calls": len(Handler.requests),
        "prompt_tokens": sum(Handler.requests),
        "prompt_tokens_per_call": list(Handler.requests),
        "baseline_ms": baseline_ms,
        "gate_runs": gate_runs,
        "gates_s": round(gates_s, 2),
        "model_s": round(model_ms / 1000, 2),
        "wall_over_gates_and_model": round(wall / max(gates_s + model_ms / 1000, 1e-9), 2),
        "overhead_ms_per_iteration": round((wall - gates_s - model_ms / 1000) * 1000 / iterations, 1),
        "wall_s": round(wall, 2),
        "stderr_tail": stderr[-400:] if outcome.get("outcome") != "committed" else "",
    }
