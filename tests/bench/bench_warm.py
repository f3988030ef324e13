"""The warm fork server (``mockmcp warm``) against a direct spawn, interleaved in one run.

A warm server is started in a runtime folder of the benchmark's own; every figure compares a
spawn through its launcher (``mockmcp warm argv`` + ``run default``) with ``python -m mockmcp
run default``: spawn to the first ``server/discover`` answer, 8 spawns at once until all 8
answered, steady-state traffic (pipelined and ping-pong, the throughput benchmark's drivers) and
the private memory of a running child (``/proc/PID/smaps_rollup``: what is not shared with the
warm server copy-on-write) against a direct process's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from _common import PY, Server, call, median, mock_cmd, request
from bench_throughput import pingpong_once, pipelined_once

SPAWNS = 15
CONCURRENT = 8
CONCURRENT_ROUNDS = 5
TRAFFIC_ROUNDS = 7  # alternating; the best round of each, so one busy moment of the machine decides nothing
PIPELINED = 20_000
PINGPONG = 3_000


def spawn_once(cmd: list[str], env: dict[str, str]) -> float:
    s = Server(cmd, env)
    s.write(request(1, "server/discover"))
    line = s.readline()
    took = time.perf_counter() - s.t0
    assert b'"result"' in line, line
    s.close()
    return took


def concurrent_once(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    servers = [Server(cmd, env) for _ in range(CONCURRENT)]
    for s in servers:
        s.write(request(1, "server/discover"))
    for s in servers:
        assert b'"result"' in s.readline()
    took = time.perf_counter() - t
    for s in servers:
        s.close()
    return took


def private_kib(pid: int) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        return sum(int(line.split()[1]) for line in fh if line.startswith(("Private_Clean:", "Private_Dirty:")))


def private_memory(cmd: list[str], env: dict[str, str], log: Path | None) -> int:
    """KiB private to a mock answering tools/call (the forked child's, not its launcher's)."""
    s = Server(cmd, env)
    s.ask(request(1, "server/discover"))
    for i in range(20):
        s.ask(call(i + 2, "echo", {"text": "x"}))
    pid = s.proc.pid
    if log is not None:
        found = re.search(rf"forked (\d+) for pid {pid}\n", log.read_text())
        assert found, "the warm server did not fork this spawn"
        pid = int(found.group(1))
    kib = private_kib(pid)
    s.close()
    return kib


def bench() -> list[dict]:
    folder = tempfile.mkdtemp(prefix="mockmcp-bench-warm-")
    env = {"MOCKMCP_WARM_DIR": folder}
    full = {**os.environ, **env}
    subprocess.run([PY, "-m", "mockmcp", "warm", "start"], env=full, check=True, capture_output=True)
    try:
        warm = [*json.loads(subprocess.run([PY, "-m", "mockmcp", "warm", "argv"], env=full, check=True,
                                           capture_output=True, text=True).stdout), "run", "default"]
        direct = mock_cmd("default")
        [log] = Path(folder).glob("*.log")
        return _figures(warm, direct, env, log)
    finally:
        subprocess.run([PY, "-m", "mockmcp", "warm", "stop"], env=full, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)  # (its log, and the socket a killed server leaves)


def _figures(warm: list[str], direct: list[str], env: dict[str, str], log: Path) -> list[dict]:
    spawn_once(direct, env)  # the load cache and the OS page cache
    spawn_once(warm, env)
    w_spawn, d_spawn, w_conc, d_conc = [], [], [], []
    for _ in range(SPAWNS):
        d_spawn.append(spawn_once(direct, env))
        w_spawn.append(spawn_once(warm, env))
    for _ in range(CONCURRENT_ROUNDS):
        d_conc.append(concurrent_once(direct, env))
        w_conc.append(concurrent_once(warm, env))
    data = b"".join(call(i, "echo", {"text": f"hello {i}"}) for i in range(PIPELINED))
    msgs = [call(i, "echo", {"text": f"hello {i}"}) for i in range(PINGPONG)]
    os.environ.update(env)  # (the throughput drivers spawn with the process's environment)
    d_rate, w_rate, d_rtt, w_rtt = [], [], [], []
    for _ in range(TRAFFIC_ROUNDS):
        d_rate.append(pipelined_once(direct, data))
        w_rate.append(pipelined_once(warm, data))
        d_rtt.append(pingpong_once(direct, msgs))
        w_rtt.append(pingpong_once(warm, msgs))
    d_mem, w_mem = private_memory(direct, env, None), private_memory(warm, env, log)
    ws, ds, wc, dc = median(w_spawn), median(d_spawn), median(w_conc), median(d_conc)
    return [
        dict(name="spawn to first response, direct", value=ds * 1000, unit="ms"),
        dict(name="spawn to first response, warm", value=ws * 1000, unit="ms", ratio=ws / ds,
             target="<= 0.3x direct", ok=ws / ds <= 0.3),
        dict(name=f"{CONCURRENT} concurrent spawns to all answered, direct", value=dc * 1000, unit="ms"),
        dict(name=f"{CONCURRENT} concurrent spawns to all answered, warm", value=wc * 1000, unit="ms", ratio=wc / dc,
             target="<= 0.2x direct", ok=wc / dc <= 0.2),
        dict(name="pipelined tools/call, warm (direct = 1)", value=max(w_rate), unit="req/s",
             ratio=max(w_rate) / max(d_rate), target=">= 0.95x direct", ok=max(w_rate) / max(d_rate) >= 0.95),
        dict(name="ping-pong round trip, warm (direct = 1)", value=min(w_rtt) * 1e6, unit="us",
             ratio=min(w_rtt) / min(d_rtt), target="<= 1.05x direct", ok=min(w_rtt) / min(d_rtt) <= 1.05),
        dict(name="private memory of a running mock, direct", value=d_mem, unit="KiB"),
        dict(name="private memory of a running mock, warm child", value=w_mem, unit="KiB", ratio=w_mem / d_mem,
             target="<= 0.5x direct", ok=w_mem / d_mem <= 0.5),
    ]
