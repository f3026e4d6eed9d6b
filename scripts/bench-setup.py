#!/usr/bin/env python3
"""What the presets' setup phase costs on real projects, inside the sandbox.

Usage: scripts/bench-setup.py BINARY DIR [DIR...]

Each DIR (a project as its registry ships it, e.g. target/real-projects/rust/strsim after
scripts/real-projects.sh) is copied without its ignored dependency directories (node_modules,
.venv, target), committed into a scratch repository, and `BINARY run --dry-run` runs on it with
no model: the run's worktree starts empty of dependencies, so the setup commands the preset chose
do their whole job there, with the caches as this machine has them (warm after the first sample).
The script prints, per project, each setup command and its time (the `command_run` events before
the first gate), then the baseline's gates for scale. Nothing is sent anywhere; the scratch
directories are removed.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = {"node_modules", ".venv", "target", ".git"}


def scratch_copy(source, dest):
    shutil.copytree(source, dest, ignore=lambda _dir, names: [n for n in names if n in SKIP])
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=bench", "-c", "user.email=bench@example.com",
                  "commit", "-q", "-m", "as released"]):
        subprocess.run(["git", *args], cwd=dest, check=True)


def setup_events(binary, repo):
    out = subprocess.run(
        [binary, "--repo", repo, "run", "--text", "Report the setup cost", "--json", "--dry-run"],
        capture_output=True, text=True, check=False)
    setup, gates = [], []
    for line in out.stdout.splitlines():
        event = json.loads(line)
        if event.get("event") == "gate_started":
            gates.append(event)
        if event.get("event") == "command_run":
            (gates if gates else setup).append(event)
    return setup, [e for e in gates if e.get("event") == "command_run"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    for source in sys.argv[2:]:
        with tempfile.TemporaryDirectory(prefix="bench-setup-") as tmp:
            repo = os.path.join(tmp, "project")
            scratch_copy(source, repo)
            setup, gates = setup_events(binary, repo)
            print(f"{os.path.basename(os.path.normpath(source))}:")
            for event in setup:
                print(f"  setup {event['command']!r}: {event['duration_ms']} ms ({event['result']})")
            if not setup:
                print("  no setup command")
            for event in gates:
                print(f"  gate  {event['command'][:60]!r}: {event['duration_ms']} ms")


if __name__ == "__main__":
    main()
