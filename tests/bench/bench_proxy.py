"""``mockmcp proxy`` in front of real servers: pipelined throughput and added round-trip latency.

Each real server is measured directly and through ``mockmcp proxy -- SERVER`` (no
faults file: the cost of the pass-through itself, which every proxied request pays)
by the same driver, rounds alternating, each keeping its best (noise only slows a
round down). Servers: the official Python SDK's ``MCPServer`` (tests/servers/sdk_server.py),
the reference ``everything`` server on Node when it is installed (tests/servers/everything,
``npm ci`` by the test suite), and the floor (a trio NDJSON echo, the fastest
"server" there is: the hardest ratio). Targets: through the proxy to a real
server, pipelined >= 0.5x direct; median added round trip <= 1 ms. The floor is no real
server: its pipelined ratio is shown as a reference, the proxy's own ceiling (each line
is read, parsed and written twice), and not judged against the 0.5x line.
"""

from __future__ import annotations

import statistics
import time

from _common import HERE, PY, ROOT, Server, call, floor_cmd, request, write_in_thread

ROUNDS = 3
EVERYTHING = HERE.parent / "servers" / "everything" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def servers() -> list[tuple[str, list[str], str, dict, int, int]]:
    """(name, command, tool, arguments, pipelined count, ping-pong count)."""
    out = [
        ("floor (trio echo)", floor_cmd(), "echo", {"text": "hi"}, 20_000, 3_000),
        ("Python SDK MCPServer", [PY, str(HERE.parent / "servers" / "sdk_server.py")], "echo", {"text": "hi"}, 2_000, 500),
    ]
    if EVERYTHING.exists():
        out.append(("everything (Node)", ["node", str(EVERYTHING), "stdio"], "echo", {"message": "hi"}, 10_000, 2_000))
    return out


def proxied(cmd: list[str]) -> list[str]:
    return [PY, "-m", "mockmcp", "proxy", "--", *cmd]


def handshake(s: Server, legacy: bool) -> None:
    if legacy:
        s.ask(b'{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25",'
              b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n')
        s.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    else:
        s.ask(request("warm", "server/discover"))


def pipelined_once(cmd: list[str], data: bytes, n: int, legacy: bool) -> float:
    s = Server(cmd)
    handshake(s, legacy)
    t = time.perf_counter()
    th = write_in_thread(s, data)
    s.read_lines(n)
    rate = n / (time.perf_counter() - t)
    th.join()
    s.close()
    return rate


def pingpong_once(cmd: list[str], msgs: list[bytes], legacy: bool) -> float:
    s = Server(cmd)
    handshake(s, legacy)
    for m in msgs[:50]:
        s.write(m)
        s.readline()
    times = []
    for m in msgs:
        t = time.perf_counter()
        s.write(m)
        s.readline()
        times.append(time.perf_counter() - t)
    s.close()
    return statistics.median(times)


def bench() -> list[dict]:
    rows: list[dict] = []
    for name, cmd, tool, args, n, m in servers():
        legacy = name.startswith("everything")
        data = b"".join(call(i, tool, args) for i in range(n))
        msgs = [call(i, tool, args) for i in range(n, n + m)]
        d_rates, p_rates, d_rtts, p_rtts = [], [], [], []
        for _ in range(ROUNDS):
            d_rates.append(pipelined_once(cmd, data, n, legacy))
            p_rates.append(pipelined_once(proxied(cmd), data, n, legacy))
            d_rtts.append(pingpong_once(cmd, msgs, legacy))
            p_rtts.append(pingpong_once(proxied(cmd), msgs, legacy))
        d_rate, p_rate, d_rtt, p_rtt = max(d_rates), max(p_rates), min(d_rtts), min(p_rtts)
        added = (p_rtt - d_rtt) * 1000
        # the floor's ratio is a reference (see the docstring); a real server's is judged
        judged = {} if cmd == floor_cmd() else dict(target=">= 0.5x direct", ok=p_rate / d_rate >= 0.5)
        rows += [
            dict(name=f"{name}: pipelined, direct", value=d_rate, unit="req/s"),
            dict(name=f"{name}: pipelined, through proxy", value=p_rate, unit="req/s", ratio=p_rate / d_rate, **judged),
            dict(name=f"{name}: median round trip, direct", value=d_rtt * 1e6, unit="us"),
            dict(name=f"{name}: median round trip added by the proxy", value=added * 1000, unit="us",
                 target="<= 1 ms", ok=added <= 1.0),
        ]
    return rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    for row in bench():
        print(row)
