"""The control channel (issue 15): emit latency, wait_for latency, and MCP round trips under control load.

- emit: a control client (one kept-open connection) sends ``emit`` of
  ``tools/list_changed``; the figure is the time until the notification is read
  from the mock's stdout by the listening driver. Targets: median < 5 ms, p99 < 20 ms.
- waitFor: a parked ``waitFor`` for ``tools/call``; the driver writes the call on
  stdin and times the ``waitFor`` answer on the socket (so the figure includes
  the pipe, an upper bound of "after the request is read"). Target: median < 5 ms.
- load: ping-pong ``tools/call`` round trips (the median of each one-second round) of
  the same mock without ``--control`` (what the option costs by itself), and of the
  ``--control`` mock with
  and without a second process sending 1,000 control operations per second
  (``getState``, ``counters``, ``journal``, an ``emit`` nobody listens to), in
  interleaved one-second rounds; the ratio of the medians. Target: <= 1.10x.
  The same load against a trivial echo process (floor) shows what a third busy
  process costs the round trip on this machine by itself.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from _common import PY, Server, call, median, mock_cmd, request, scenario_file

SCENARIO = """\
mockmcp: 1
server: {name: bench-control, version: 1.0.0}
tools:
  - name: echo
    replies: [{steps: [{text: "{{ arguments.x }}"}]}]
"""

EMITS = 500
WAITS = 200
ROUNDS = 4  # per condition, interleaved
ROUND_SECONDS = 1.0

LOAD = r"""
import json, socket, sys, time
path, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rwb")
ops = [("getState", {}), ("counters", {}), ("journal", {"since": 0, "limit": 10}),
       ("emit", {"event": "resources/updated", "uri": "nobody://listens"})]
start = time.perf_counter(); n = 0
while time.perf_counter() - start < seconds:
    op, params = ops[n % len(ops)]
    f.write((json.dumps({"jsonrpc": "2.0", "id": n, "method": op, "params": params}) + "\n").encode()); f.flush()
    assert b"result" in f.readline()
    n += 1
    delay = start + n / rate - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
print(n / (time.perf_counter() - start))
"""


# The floor of the load figure: the same 1,000 ops/s against a trivial Unix-socket server in a
# process of its own, so the machine's share (a third busy process on two shared cores) is
# measured in the same run and told apart from the mock's own.
ECHO = r"""
import os, socket, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept(); f = conn.makefile("rwb")
for line in f:
    f.write(b'{"jsonrpc":"2.0","id":0,"result":{}}\n'); f.flush()
"""


def _echo_load(seconds: float) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
    path = os.path.join(tempfile.mkdtemp(prefix="mockmcp-bench-"), "echo.sock")
    echo = subprocess.Popen([PY, "-c", ECHO, path], stdout=subprocess.PIPE)
    assert echo.stdout is not None and echo.stdout.readline().startswith(b"ready")
    load = subprocess.Popen([PY, "-c", LOAD, path, "1000", str(seconds)], stdout=subprocess.PIPE)
    return echo, load


def _spawn() -> tuple[Server, str]:
    path = os.path.join(tempfile.mkdtemp(prefix="mockmcp-bench-"), "c.sock")
    cmd = mock_cmd(scenario_file("control.yaml", SCENARIO), "--control", path)
    s = Server(cmd)
    s.ask(request("first", "server/discover"))
    while not os.path.exists(path):
        time.sleep(0.01)
    return s, path


def _connect(path: str) -> tuple[socket.socket, object]:
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(path)
    return sock, sock.makefile("rwb")


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _emit_latency(s: Server, path: str) -> list[float]:
    s.write(request("listen", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    s.readline()  # the ack
    sock, f = _connect(path)
    line = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "emit", "params": {"event": "tools/list_changed"}}) + "\n").encode()
    out = []
    for _ in range(EMITS):
        t = time.perf_counter()
        sock.sendall(line)
        s.readline()
        out.append((time.perf_counter() - t) * 1000)
        f.readline()  # type: ignore[attr-defined]
    sock.close()
    return out


def _wait_latency(s: Server, path: str) -> list[float]:
    sock, f = _connect(path)
    out = []
    for i in range(WAITS):
        wait = {"jsonrpc": "2.0", "id": i, "method": "waitFor", "params": {"when": {"method": "tools/call", "arguments": {"x": str(i)}}, "timeout": 10}}
        sock.sendall((json.dumps(wait) + "\n").encode())
        # ping on the same connection: answered after the wait is parked (lines are handled in order)
        sock.sendall(b'{"jsonrpc":"2.0","id":"p","method":"ping"}\n')
        assert b'"p"' in f.readline()  # type: ignore[attr-defined]
        t = time.perf_counter()
        s.write(call(i, "echo", {"x": str(i)}))
        answer = f.readline()  # type: ignore[attr-defined]
        out.append((time.perf_counter() - t) * 1000)
        assert b'"result"' in answer, answer
        s.readline()
    sock.close()
    return out


def _round_trips(s: Server, seconds: float) -> float:
    times = []
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        t = time.perf_counter()
        s.ask(call(i, "echo", {"x": "y"}))
        times.append(time.perf_counter() - t)
        i += 1
    return median(times) * 1e6


def bench() -> list[dict]:
    s, path = _spawn()
    emits = _emit_latency(s, path)
    print("  (emit latency measured)", file=sys.stderr, flush=True)
    waits = _wait_latency(s, path)
    print("  (waitFor latency measured)", file=sys.stderr, flush=True)
    plain = Server(mock_cmd(scenario_file("control.yaml", SCENARIO)))  # the same mock without --control
    plain.ask(request("first", "server/discover"))
    quiet, loaded, floor, rates, without = [], [], [], [], []
    for _ in range(ROUNDS):
        without.append(_round_trips(plain, ROUND_SECONDS))
        quiet.append(_round_trips(s, ROUND_SECONDS))
        load = subprocess.Popen([PY, "-c", LOAD, path, "1000", str(ROUND_SECONDS + 0.3)], stdout=subprocess.PIPE)
        time.sleep(0.15)
        loaded.append(_round_trips(s, ROUND_SECONDS))
        rates.append(float(load.communicate(timeout=30)[0]))
        echo, other = _echo_load(ROUND_SECONDS + 0.3)
        time.sleep(0.15)
        floor.append(_round_trips(s, ROUND_SECONDS))
        other.communicate(timeout=30)
        echo.kill()
        echo.wait()
    s.close()
    plain.close()
    ratio = median(loaded) / median(quiet)
    return [
        dict(name="control emit -> listener's stdout, median", value=median(emits), unit="ms", target="< 5 ms", ok=median(emits) < 5),
        dict(name="control emit -> listener's stdout, p99", value=_pct(emits, 0.99), unit="ms", target="< 20 ms", ok=_pct(emits, 0.99) < 20),
        dict(name="waitFor answered after the request is written, median", value=median(waits), unit="ms", target="< 5 ms", ok=median(waits) < 5),
        dict(name="waitFor answered after the request is written, p99", value=_pct(waits, 0.99), unit="ms"),
        dict(name="tools/call round trip, without --control", value=median(without), unit="us"),
        dict(name="tools/call round trip, quiet control socket", value=median(quiet), unit="us", ratio=median(quiet) / median(without)),
        dict(name=f"tools/call round trip, {median(rates):,.0f} control ops/s", value=median(loaded), unit="us",
             ratio=ratio, target="<= 1.10x", ok=ratio <= 1.10),
        dict(name="tools/call round trip, 1,000 ops/s to an echo process (floor)", value=median(floor), unit="us",
             ratio=median(floor) / median(quiet)),
        dict(name="  the mock's own share: loaded / floor-loaded", value=median(loaded) / median(floor), unit="x"),
    ]


if __name__ == "__main__":
    for row in bench():
        print(row)
    sys.exit(0)
