"""The control channel: emit latency, wait_for latency, and MCP round trips under control load.

- emit: a control client (one kept-open connection) sends ``emit`` of
  ``tools/list_changed``; the figure is the time until the notification is read
  from the mock's stdout by the listening driver. Targets: median < 5 ms, p99 < 20 ms.
- waitFor: a parked ``waitFor`` for ``tools/call``; the driver writes the call on
  stdin and times the ``waitFor`` answer on the socket (so the figure includes
  the pipe, an upper bound of "after the request is read"). Target: median < 5 ms.
- load: ping-pong ``tools/call`` round trips (the median of each 0.15-second round) of
  the same mock without ``--control`` (what the option costs by itself), and of the
  ``--control`` mock with and without a long-lived second process sending 1,000 control
  operations per second (``getState``, ``counters``, ``journal``, an ``emit`` nobody
  listens to; each its own write, each answer read before the next), in 40 rotations of
  short interleaved rounds; the figure is the median of the per-rotation ratios (loaded
  round / quiet round of the same rotation), with their quartiles. Target: <= 1.10x.
  The same load against a trivial echo process (floor) shows what a third busy
  process costs the round trip on this machine by itself. Last, the mock's own CPU
  per control operation at that rate (from ``/proc/PID/stat``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
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
PAIRS = 40  # interleaved rounds of each condition (quiet, loaded, floor), in a rotating order
ROUND_SECONDS = 0.15
RATE = 1000.0  # control operations per second

# The load: one long-lived process sending RATE control operations a second, each its own
# line and its own socket write, each answer read before the next (so they are 1,000
# separate operations, never a batch). It costs little CPU of its own: the lines are encoded
# once, the loop is sendall/recv on a plain socket, and the pacing wait is the same select
# that reads its commands from stdin ("1": go, "0": stop, EOF: report and end). A deadline
# per operation (not a sleep after it) pins the rate: a late operation is not made up for by
# a burst. On stop it prints the rate it kept while on.
LOAD = r"""
import json, os, select, socket, sys, time
path = sys.argv[1]
ops = [("getState", {}), ("counters", {}), ("journal", {"since": 0, "limit": 10}),
       ("emit", {"event": "resources/updated", "uri": "nobody://listens"})]
lines = [(json.dumps({"jsonrpc": "2.0", "id": n, "method": op, "params": p}) + "\n").encode() for n, (op, p) in enumerate(ops)]
s = socket.socket(socket.AF_UNIX); s.connect(path)
period = 1.0 / float(sys.argv[2]); stdin = sys.stdin.fileno(); clock = time.perf_counter
on = False; n = 0; done = 0; t_on = 0.0; busy = 0.0
print("ready", flush=True)
while True:
    if not on:
        cmd = os.read(stdin, 1)
        if not cmd:
            break
        if cmd == b"1":
            on = True; t_on = clock(); n = 0
        continue
    s.sendall(lines[n & 3])
    buf = s.recv(65536)
    while not buf.endswith(b"\n"):
        buf += s.recv(65536)
    n += 1
    delay = t_on + n * period - clock()
    if select.select([stdin], [], [], max(0.0, delay))[0]:
        cmd = os.read(stdin, 1)
        if cmd != b"1":
            os.write(1, b"%f\n" % (n / (clock() - t_on)))
            on = False
            if not cmd:
                break
"""

# The same load in C, used when a C compiler is there: the loop costs its process a few µs
# of CPU per operation instead of the Python loop's tens, so on two shared cores the load
# process itself takes less from the MCP stream's round trip (the floor row shows how much).
LOAD_C = r"""
/* The control benchmark's load: RATE operations a second on a Unix socket, each its own
   write, each answer read before the next. Switched on ('1') and off ('0') on stdin, which
   the pacing wait (ppoll) also watches; prints the rate it kept at each stop. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4 || argc > 64) return 2;
    double period = 1.0 / atof(argv[2]);
    int nlines = argc - 3;
    size_t lens[64];
    for (int i = 0; i < nlines; i++) lens[i] = strlen(argv[3 + i]);
    struct sockaddr_un addr = {0};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&addr, sizeof addr) < 0) { perror("connect"); return 1; }
    static char buf[1 << 20];
    printf("ready\n");
    fflush(stdout);
    int on = 0;
    long n = 0;
    double t_on = 0;
    char cmd = 0;
    for (;;) {
        if (!on) {
            if (read(0, &cmd, 1) <= 0) return 0;
            if (cmd == '1') { on = 1; t_on = now(); n = 0; }
            continue;
        }
        if (send(s, argv[3 + n % nlines], lens[n % nlines], 0) < 0) { perror("send"); return 1; }
        for (;;) { /* its answer, to the newline */
            ssize_t got = recv(s, buf, sizeof buf, 0);
            if (got <= 0) { perror("recv"); return 1; }
            if (buf[got - 1] == '\n') break;
        }
        n++;
        double delay = t_on + n * period - now();
        if (delay < 0) delay = 0;
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        struct pollfd p = {0, POLLIN, 0};
        if (ppoll(&p, 1, &ts, NULL) > 0) {
            ssize_t r = read(0, &cmd, 1);
            if (r <= 0 || cmd != '1') {
                printf("%f\n", n / (now() - t_on));
                fflush(stdout);
                on = 0;
                if (r <= 0) return 0;
            }
        }
    }
}
"""
OPS = [("getState", {}), ("counters", {}), ("journal", {"since": 0, "limit": 10}),
       ("emit", {"event": "resources/updated", "uri": "nobody://listens"})]


def _c_load() -> str | None:
    """The C load generator built in a temporary directory (``None``: no compiler, use Python)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    d = tempfile.mkdtemp(prefix="mockmcp-bench-load-")
    src, exe = os.path.join(d, "load.c"), os.path.join(d, "load")
    with open(src, "w") as fh:
        fh.write(LOAD_C)
    built = subprocess.run([cc, "-O2", "-o", exe, src], capture_output=True)
    return exe if built.returncode == 0 else None


C_LOAD = _c_load()


# The floor of the load figure: the same load against a trivial Unix-socket server in a
# process of its own, so the machine's share (a third busy process on two shared cores) is
# measured in the same run and told apart from the mock's own.
ECHO = r"""
import os, socket, sys
path = sys.argv[1]
srv = socket.socket(socket.AF_UNIX); srv.bind(path); srv.listen(1)
print("ready", flush=True)
conn, _ = srv.accept()
while True:
    data = conn.recv(65536)
    if not data:
        break
    conn.sendall(b'{"jsonrpc":"2.0","id":0,"result":{}}\n' * data.count(b"\n"))
"""


class Load:
    """The long-lived load process, switched on and off between rounds."""

    def __init__(self, path: str) -> None:
        if C_LOAD is not None:
            lines = [json.dumps({"jsonrpc": "2.0", "id": n, "method": op, "params": p}) + "\n" for n, (op, p) in enumerate(OPS)]
            cmd = [C_LOAD, path, str(RATE), *lines]
        else:
            cmd = [PY, "-c", LOAD, path, str(RATE)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self.proc.stdout is not None and self.proc.stdout.readline().startswith(b"ready")

    def on(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"1")
        time.sleep(0.02)  # its first operations are under way before the round starts

    def off(self) -> float:
        """Stop; the rate it kept while on."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(b"0")
        return float(self.proc.stdout.readline())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def _echo(directory: str) -> tuple[subprocess.Popen[bytes], str]:
    path = os.path.join(directory, "echo.sock")
    echo = subprocess.Popen([PY, "-c", ECHO, path], stdout=subprocess.PIPE)
    assert echo.stdout is not None and echo.stdout.readline().startswith(b"ready")
    return echo, path


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
    """The median ping-pong ``tools/call`` round trip (µs) over ``seconds``."""
    times = []
    end = time.perf_counter() + seconds
    i = 0
    while time.perf_counter() < end:
        t = time.perf_counter()
        s.ask(call(i, "echo", {"x": "y"}))
        times.append(time.perf_counter() - t)
        i += 1
    return median(times) * 1e6


def _spread(xs: list[float]) -> str:
    qs = statistics.quantiles(xs, n=4)
    return f"{qs[0]:.2f}x..{qs[2]:.2f}x"


def _loaded_rounds(s: Server, path: str) -> dict[str, list[float]]:
    """Interleaved short rounds: quiet, under the load, and the load on an echo process (floor).

    Each pair of rounds is ``PAIRS`` times a rotation of the three conditions, so drift of the
    machine (other sessions starting and stopping) falls on all of them alike; each loaded
    round's ratio is taken against the quiet round of its own rotation, and the figure is the
    median of those ratios, its spread the quartiles."""
    load = Load(path)
    echo, echo_path = _echo(os.path.dirname(path))
    floor_load = Load(echo_path)
    out: dict[str, list[float]] = {"quiet": [], "loaded": [], "floor": [], "ratio": [], "floor_ratio": [], "rate": []}
    try:
        for k in range(PAIRS):
            got: dict[str, float] = {}
            order = ["quiet", "loaded", "floor"]
            order = order[k % 3 :] + order[: k % 3]
            for cond in order:
                gen = {"quiet": None, "loaded": load, "floor": floor_load}[cond]
                if gen is not None:
                    gen.on()
                got[cond] = _round_trips(s, ROUND_SECONDS)
                if gen is not None:
                    rate = gen.off()
                    if cond == "loaded":
                        out["rate"].append(rate)
            for cond in ("quiet", "loaded", "floor"):
                out[cond].append(got[cond])
            out["ratio"].append(got["loaded"] / got["quiet"])
            out["floor_ratio"].append(got["floor"] / got["quiet"])
    finally:
        load.close()
        floor_load.close()
        echo.kill()
        echo.wait()
    return out


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cost_per_operation(s: Server, path: str) -> tuple[float, float]:
    """The CPU (user + system, µs) per control operation of the load's mix, at the rate: the
    mock's own, and the load process's."""
    load = Load(path)
    try:
        before, own = _cpu_seconds(s.proc.pid), _cpu_seconds(load.proc.pid)
        load.on()
        time.sleep(2.0)
        rate = load.off()
        used, load_used = _cpu_seconds(s.proc.pid) - before, _cpu_seconds(load.proc.pid) - own
    finally:
        load.close()
    return used / (rate * 2.0) * 1e6, load_used / (rate * 2.0) * 1e6


def bench() -> list[dict]:
    s, path = _spawn()
    emits = _emit_latency(s, path)
    print("  (emit latency measured)", file=sys.stderr, flush=True)
    waits = _wait_latency(s, path)
    print("  (waitFor latency measured)", file=sys.stderr, flush=True)
    plain = Server(mock_cmd(scenario_file("control.yaml", SCENARIO)))  # the same mock without --control
    plain.ask(request("first", "server/discover"))
    without, quiet_alone = [], []
    for _ in range(6):
        without.append(_round_trips(plain, ROUND_SECONDS))
        quiet_alone.append(_round_trips(s, ROUND_SECONDS))
    plain.close()
    rounds = _loaded_rounds(s, path)
    print("  (round trips under load measured)", file=sys.stderr, flush=True)
    cost, load_cost = _cost_per_operation(s, path)
    s.close()
    ratio = median(rounds["ratio"])
    return [
        dict(name="control emit -> listener's stdout, median", value=median(emits), unit="ms", target="< 5 ms", ok=median(emits) < 5),
        dict(name="control emit -> listener's stdout, p99", value=_pct(emits, 0.99), unit="ms", target="< 20 ms", ok=_pct(emits, 0.99) < 20),
        dict(name="waitFor answered after the request is written, median", value=median(waits), unit="ms", target="< 5 ms", ok=median(waits) < 5),
        dict(name="waitFor answered after the request is written, p99", value=_pct(waits, 0.99), unit="ms"),
        dict(name="tools/call round trip, without --control", value=median(without), unit="us"),
        dict(name="tools/call round trip, quiet control socket", value=median(quiet_alone), unit="us",
             ratio=median(quiet_alone) / median(without)),
        dict(name="tools/call round trip, quiet (the load rounds' own)", value=median(rounds["quiet"]), unit="us"),
        dict(name=f"tools/call round trip, {median(rounds['rate']):,.0f} control ops/s", value=median(rounds["loaded"]), unit="us",
             ratio=ratio, target="<= 1.10x", ok=ratio <= 1.10),
        dict(name=f"  per-round ratios, quartiles of {len(rounds['ratio'])}: {_spread(rounds['ratio'])}", value=ratio, unit="x"),
        dict(name="tools/call round trip, 1,000 ops/s to an echo process (floor)", value=median(rounds["floor"]), unit="us",
             ratio=median(rounds["floor_ratio"])),
        dict(name=f"  floor per-round ratios, quartiles: {_spread(rounds['floor_ratio'])}", value=median(rounds["floor_ratio"]), unit="x"),
        dict(name="the mock's CPU per control operation (user + system)", value=cost, unit="us"),
        dict(name=f"the load process's CPU per operation ({'C' if C_LOAD else 'Python'} loop)", value=load_cost, unit="us"),
    ]


if __name__ == "__main__":
    for row in bench():
        print(row)
    sys.exit(0)
