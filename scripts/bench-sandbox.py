#!/usr/bin/env python3
"""Sandbox start-up per command: runs `true` under meta-agent's supervisor N times, bare and fully
confined (Landlock reads and writes, user+mount+PID+network namespaces, fresh HOME and TMPDIR, the
UNIX-socket filter), and with one download cache through an overlay, and prints the
mean and median wall-clock time per command. Usage: scripts/bench-sandbox.py [BINARY] [N]"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/meta-agent")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
work = tempfile.mkdtemp()
cache = tempfile.mkdtemp(dir=work)
modes = {
    "bare (supervisor only)": [],
    "confined (landlock + namespaces + fresh HOME and TMPDIR + seccomp)": [
        "--confine-writes", "--no-network"],
    "confined + one cache overlay": ["--confine-writes", "--no-network", "--cache", cache],
}
for name, flags in modes.items():
    times = []
    for _ in range(runs):
        read, write = os.pipe()
        start = time.perf_counter()
        subprocess.run(
            [binary, "__supervise", "--timeout-ms", "10000", "--grace-ms", "100",
             "--status-fd", str(write), *flags, "--", "true"],
            pass_fds=(write,), cwd=work, env={"PATH": "/usr/bin:/bin", "HOME": work},
            check=True, stdout=subprocess.DEVNULL,
        )
        times.append((time.perf_counter() - start) * 1000)
        os.close(write)
        os.read(read, 65536)
        os.close(read)
    print(f"{name}: mean {statistics.mean(times):.1f} ms, median {statistics.median(times):.1f} ms over {runs}")
