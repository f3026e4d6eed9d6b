#!/usr/bin/env python3
"""The observe-first targets, measured end to end: the real `meta-agent` binary, real git, the
example Python repository with real pytest gates, and an oracle model (a loopback
OpenAI-compatible server that gives the fix at the earliest moment the prompt allows).

Scenarios:
  first-seen   mean() uses floor division; the oracle edits and finishes in one answer as soon
               as the prompt shows the faulty line, else reads calc.py first.
  recurrence   the fix from first-seen merged, then the bug reintroduced; model configured.
Prints, per scenario: model calls, prompt bytes and tokens (tokens: bytes/4 unless tiktoken is
installed), the baseline's wall time (the gates' own), the harness overhead per iteration
(wall time minus gates minus model), and the wall time to the verified commit.

Usage: scripts/bench-observe.py [BINARY]   (default target/release/meta-agent, else debug)
The gates need pytest, pytest-cov and ruff on PATH (scripts/test.sh's virtualenv has them).
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

try:
    import tiktoken  # type: ignore

    ENC = tiktoken.get_encoding("o200k_base")

    def count_tokens(text):
        return len(ENC.encode(text))

    TOKEN_NOTE = "o200k_base tokens"
except Exception:  # noqa: BLE001 - any failure means: estimate

    def count_tokens(text):
        return (len(text.encode()) + 3) // 4

    TOKEN_NOTE = "tokens estimated as bytes/4 (tiktoken not installed)"


class Oracle(http.server.BaseHTTPRequestHandler):
    requests = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["content-length"]))
        request = json.loads(body)
        prompt = "\n".join(m.get("content") or "" for m in request["messages"])
        prompt += "\n" + json.dumps(request.get("tools", []))
        Oracle.requests.append(count_tokens(prompt))
        if BUG in prompt:
            calls = [
                ("edit_file", {"path": "calc.py", "old_string": BUG, "new_string": FIX}),
                ("finish", {"summary": "Use true division in mean"}),
            ]
        else:
            calls = [("read_file", {"path": "calc.py"})]
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


def repository(base_url):
    top = tempfile.mkdtemp(prefix="bench-observe-")
    work = os.path.join(top, "work")
    shutil.copytree(os.path.join(ROOT, "examples/python-calc"), work)
    with open(os.path.join(work, ".meta-agent.yml"), "a") as config:
        config.write(f'llm: {{provider: openai, base_url: "{base_url}", model: oracle, '
                     'stream: false}\n')
    git(work, "init", "-q", "-b", "main")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "initial")
    break_mean(work)
    git(work, "commit", "-q", "-am", "break mean")
    return top, work


def break_mean(work):
    path = os.path.join(work, "calc.py")
    text = open(path).read().replace(FIX, BUG, 1)
    open(path, "w").write(text)


def run(binary, work, text):
    Oracle.requests = []
    started = time.monotonic()
    out = subprocess.run(
        [binary, "--repo", work, "run", "--text", text, "--json"],
        capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": "bench"})
    wall = time.monotonic() - started
    events = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    outcome = events[-1] if events else {}
    phases = [e for e in events if e.get("event") == "phase_finished"]
    gates_ms = sum(e["duration_ms"] for e in phases if e["phase"] in ("test", "baseline"))
    baseline_ms = sum(e["duration_ms"] for e in phases if e["phase"] == "baseline")
    model_ms = sum(e["duration_ms"] for e in events if e.get("event") == "llm_call")
    iterations = max(1, sum(1 for e in phases if e["phase"] == "test"))
    return {
        "outcome": outcome.get("outcome"),
        "commit": outcome.get("commit"),
        "llm_calls": len(Oracle.requests),
        "prompt_tokens": sum(Oracle.requests),
        "first_prompt_tokens": Oracle.requests[0] if Oracle.requests else 0,
        "baseline_ms": baseline_ms,
        "overhead_ms_per_iteration": round((wall * 1000 - gates_ms - model_ms) / iterations, 1),
        "wall_s": round(wall, 2),
        "stderr_tail": out.stderr[-400:] if outcome.get("outcome") != "committed" else "",
    }


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else next(
        p for p in (os.path.join(ROOT, "target/release/meta-agent"),
                    os.path.join(ROOT, "target/debug/meta-agent")) if os.path.exists(p))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Oracle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    top, work = repository(base_url)
    try:
        first = run(binary, work, "Fix mean of floats")
        print(json.dumps({"scenario": "first-seen", **first}))
        git(work, "checkout", "-q", "main")
        git(work, "merge", "-q", "--ff-only", first["commit"])
        break_mean(work)
        git(work, "commit", "-q", "-am", "the bug comes back")
        again = run(binary, work, "Fix mean of floats again")
        print(json.dumps({"scenario": "recurrence", **again}))
        print(f"# {TOKEN_NOTE}")
    finally:
        server.shutdown()
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
