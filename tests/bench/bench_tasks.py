"""The Tasks extension and session directories, against their targets.

- ``tasks/get`` with 1,000 tasks alive: 1,000 ``forever`` tasks of the bundled
  ``tasks`` scenario are created, then ``tasks/get`` of them in turn, ping-pong;
  the figure is the median round trip, against the median round trip of a plain
  ``tools/call`` (``echo`` of ``default``) measured the same way, rounds alternating.
- 8 processes at once on one session directory, 10,000 operations in all
  (``tools/call build``, each creating a task, so each changes the shared counters,
  the task serial and the task records): every update must be there at the end.
- Spawn with a session directory holding 10,000 ended tasks, against a spawn of
  the same scenario without ``--session`` (spawn to the ``server/discover``
  answer, median of 15, interleaved); the same spawn to a ``tasks/get`` of an
  ended task (in the archive, which only that miss reads); and the exit (stdin
  closed to the process gone), where a session's process judges the session
  (its journal holds the 20,000 requests that made it).
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import META, Server, median, mock_cmd, write_in_thread

EXT = {**META, "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}
ALIVE = 1_000
PINGPONG = 3_000
ROUNDS = 3
PROCESSES = 8
OPERATIONS = 10_000
ENDED = 10_000
SPAWNS = 15


def req(rid: Any, method: str, params: dict[str, Any]) -> bytes:
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": EXT}}, separators=(",", ":")) + "\n").encode()


def percentile_50(samples: list[float]) -> float:
    return median(samples)


def get_round() -> float:
    s = Server(mock_cmd("tasks"))
    ids = [s.ask(req(i, "tools/call", {"name": "forever", "arguments": {}}))["result"]["taskId"] for i in range(ALIVE)]
    msgs = [req(ALIVE + i, "tasks/get", {"taskId": ids[i % ALIVE]}) for i in range(PINGPONG)]
    for m in msgs[:200]:
        s.ask(m)
    rtts = []
    for m in msgs:
        t = time.perf_counter()
        s.write(m)
        line = s.readline()
        rtts.append(time.perf_counter() - t)
    assert b'"working"' in line, line
    s.close()
    return percentile_50(rtts)


def call_round() -> float:
    s = Server(mock_cmd("default"))
    msgs = [req(i, "tools/call", {"name": "echo", "arguments": {"text": f"hello {i}"}}) for i in range(PINGPONG)]
    for m in msgs[:200]:
        s.ask(m)
    rtts = []
    for m in msgs:
        t = time.perf_counter()
        s.write(m)
        s.readline()
        rtts.append(time.perf_counter() - t)
    s.close()
    return percentile_50(rtts)


def shared_session() -> tuple[float, int, int, int]:
    """8 processes x 1,250 task creations on one directory: (seconds, tasks, serial, counter)."""
    d = Path(tempfile.mkdtemp(prefix="mockmcp-bench-session-"))
    try:
        each = OPERATIONS // PROCESSES
        Server(mock_cmd("tasks", "--session", str(d / "s"))).close()
        servers = [Server(mock_cmd("tasks", "--session", str(d / "s"))) for _ in range(PROCESSES)]

        def drive(s: Server) -> None:
            for i in range(each):
                s.ask(req(i, "tools/call", {"name": "build", "arguments": {}}))

        t = time.perf_counter()
        threads = [threading.Thread(target=drive, args=(s,)) for s in servers]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        took = time.perf_counter() - t
        for s in servers:
            s.close()
        lines = (d / "s" / "state.log").read_text().splitlines()
        tasks = {line.split(" ", 2)[1] for line in lines if line.startswith("T ")}
        state = json.loads([line for line in lines if line.startswith("E ")][-1][2:])
        return took, len(tasks), state["serial"], state["counters"]["0"][0]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def spawn_once(cmd: list[str], exits: list[float] | None = None, ask: bytes | None = None) -> float:
    """Spawn to the first answer (of ``ask``, else ``server/discover``); the exit's seconds into ``exits``."""
    s = Server(cmd)
    s.write(ask or req(1, "server/discover", {}))
    line = s.readline()
    took = time.perf_counter() - s.t0
    assert b'"result"' in line, line
    closed = s.close()
    if exits is not None:
        exits.append(closed)
    return took


def ended_session(directory: Path) -> str:
    """A session directory with ENDED completed tasks (``quick``: one poll, then completed)."""
    s = Server(mock_cmd("tasks", "--session", str(directory)))
    batch = b"".join(req(i, "tools/call", {"name": "quick", "arguments": {}}) for i in range(ENDED))
    th = write_in_thread(s, batch)  # written while the answers are read (a full pipe would block both)
    ids = [json.loads(s.readline())["result"]["taskId"] for _ in range(ENDED)]
    th.join()
    th = write_in_thread(s, b"".join(req(ENDED + i, "tasks/get", {"taskId": tid}) for i, tid in enumerate(ids)))
    s.read_lines(ENDED)
    th.join()
    s.close()
    check = Server(mock_cmd("tasks", "--session", str(directory)))
    assert b'"completed"' in json.dumps(check.ask(req(1, "tasks/get", {"taskId": ids[0]}))).encode()
    check.close()
    return ids[0]


def bench() -> list[dict]:
    gets, calls = [], []
    for _ in range(ROUNDS):
        gets.append(get_round())
        calls.append(call_round())
    g, c = min(gets), min(calls)
    took, tasks, serial, counter = shared_session()
    lost = OPERATIONS - min(tasks, serial, counter)
    d = Path(tempfile.mkdtemp(prefix="mockmcp-bench-ended-"))
    try:
        first = ended_session(d / "s")
        with_session, without = mock_cmd("tasks", "--session", str(d / "s")), mock_cmd("tasks")
        spawn_once(with_session)
        spawn_once(without)
        a, b, old, exit_a, exit_b = [], [], [], [], []
        old_task = req(1, "tasks/get", {"taskId": first})  # in the archive: read only on this miss
        for _ in range(SPAWNS):
            a.append(spawn_once(without, exit_a))
            b.append(spawn_once(with_session, exit_b))
            old.append(spawn_once(with_session, ask=old_task))
        size = (d / "s" / "state.log").stat().st_size
        archive = (d / "s" / "ended.log").stat().st_size if (d / "s" / "ended.log").exists() else 0
        journal = (d / "s" / "journal.jsonl").stat().st_size
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return [
        dict(name="plain tools/call round trip, p50 (best of 3)", value=c * 1e6, unit="µs"),
        dict(name="tasks/get with 1,000 tasks alive, p50 (best of 3)", value=g * 1e6, unit="µs",
             ratio=g / c, target="<= 1.5x plain call", ok=g / c <= 1.5),
        dict(name=f"8 processes, one session: {OPERATIONS:,} task creations", value=took, unit="s"),
        dict(name="  updates lost (tasks, serial, counter all 10,000)", value=lost, unit="", target="0", ok=lost == 0),
        dict(name="spawn to first response, tasks, no session", value=median(a) * 1000, unit="ms"),
        dict(name=f"same, {ENDED:,} ended tasks ({size / 2**20:.1f} MiB log, {archive / 2**20:.1f} MiB archive)",
             value=median(b) * 1000, unit="ms", ratio=median(b) / median(a), target="<= 1.2x no session", ok=median(b) / median(a) <= 1.2),
        dict(name="  same, to a tasks/get of an archived task", value=median(old) * 1000, unit="ms", ratio=median(old) / median(a)),
        dict(name="exit (stdin closed to exit), no session", value=median(exit_a) * 1000, unit="ms"),
        dict(name=f"  same, the session's verdict ({journal / 2**20:.1f} MiB journal)", value=median(exit_b) * 1000, unit="ms",
             ratio=median(exit_b) / median(exit_a)),
    ]
