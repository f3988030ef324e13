"""Streamable HTTP (``mockmcp run default --http 0``) against an h11-over-trio floor.

- sequential: ``tools/call`` of ``echo`` round trips on one kept-alive connection
  (a raw socket client that only finds Content-Length), floor and mock rounds
  alternating, best of 3 each: requests per second; target >= 0.6x the floor.
- concurrent: 50 clients, each on its own connection in its own thread, 200
  requests each (10,000): every answer must come back with its own id (none lost).
- listen: 1,000 ``subscriptions/listen`` SSE streams held open (each acknowledged):
  the mock's resident memory then; target < 150 MB.
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from _common import META, PY, ROOT, HERE

SEQUENTIAL = 3_000
ROUNDS = 3
CLIENTS = 50
PER_CLIENT = 200
STREAMS = 1_000


class HttpServer:
    def __init__(self, cmd: list[str]) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
        assert self.proc.stdout is not None
        url = self.proc.stdout.readline().decode().strip()
        parts = urlsplit(url)
        self.addr = (parts.hostname or "127.0.0.1", parts.port or 0)

    def rss_kib(self, key: str = "VmRSS") -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        raise KeyError(key)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def post(rid: Any, method: str, params: dict[str, Any], name: str | None = None) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": META}},
                      separators=(",", ":")).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: {method}\r\n" + (f"Mcp-Name: {name}\r\n" if name else "") +
            f"Content-Length: {len(body)}\r\n\r\n")
    return head.encode() + body


def echo(rid: int) -> bytes:
    return post(rid, "tools/call", {"name": "echo", "arguments": {"text": f"hello {rid}"}}, "echo")


class Conn:
    """One kept-alive connection; ``ask`` sends a request and returns the response body."""

    def __init__(self, addr: tuple[str, int]) -> None:
        self.s = socket.create_connection(addr)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def ask(self, data: bytes) -> bytes:
        self.s.sendall(data)
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        i = head.lower().find(b"content-length:")
        length = int(head[i + 15:].split(b"\r\n", 1)[0])
        while len(rest) < length:
            self.buf = rest
            self._more()
            rest = self.buf
        self.buf = rest[length:]
        return rest[:length]

    def _more(self) -> None:
        chunk = self.s.recv(65536)
        if not chunk:
            raise EOFError("the server closed the connection")
        self.buf += chunk

    def close(self) -> None:
        self.s.close()


def sequential_once(cmd: list[str], msgs: list[bytes]) -> float:
    server = HttpServer(cmd)
    c = Conn(server.addr)
    for m in msgs[:200]:
        c.ask(m)
    t = time.perf_counter()
    for m in msgs:
        c.ask(m)
    rate = len(msgs) / (time.perf_counter() - t)
    c.close()
    server.close()
    return rate


def concurrent(cmd: list[str]) -> tuple[int, int, float]:
    """(answered with the right id, lost, seconds) for CLIENTS x PER_CLIENT requests."""
    server = HttpServer(cmd)
    ok = [0] * CLIENTS
    start = threading.Barrier(CLIENTS + 1)

    def client(k: int) -> None:
        c = Conn(server.addr)
        start.wait()
        for j in range(PER_CLIENT):
            rid = k * PER_CLIENT + j
            try:
                body = c.ask(echo(rid))
            except (OSError, EOFError):
                break
            if json.loads(body).get("id") == rid:
                ok[k] += 1
        c.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for th in threads:
        th.start()
    start.wait()
    t = time.perf_counter()
    for th in threads:
        th.join()
    took = time.perf_counter() - t
    server.close()
    answered = sum(ok)
    return answered, CLIENTS * PER_CLIENT - answered, took


def listen_streams(cmd: list[str]) -> tuple[int, int, int]:
    """(streams acknowledged, RSS KiB with them open, RSS KiB before) for STREAMS listen requests."""
    server = HttpServer(cmd)
    before = server.rss_kib()
    socks = []
    acked = 0
    for i in range(STREAMS):
        s = socket.create_connection(server.addr)
        s.sendall(post(i, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
        socks.append(s)
    for s in socks:
        s.settimeout(10)
        got = b""
        while b"subscriptions/acknowledged" not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        acked += b"subscriptions/acknowledged" in got
    rss = server.rss_kib()
    for s in socks:
        s.close()
    server.close()
    return acked, rss, before


def bench() -> list[dict]:
    mock = [PY, "-m", "mockmcp", "run", "default", "--http", "0"]
    floor = [PY, str(HERE / "http_floor.py")]
    msgs = [echo(i) for i in range(SEQUENTIAL)]
    f_rates, m_rates = [], []
    for _ in range(ROUNDS):
        f_rates.append(sequential_once(floor, msgs))
        m_rates.append(sequential_once(mock, msgs))
    f_rate, m_rate = max(f_rates), max(m_rates)
    answered, lost, took = concurrent(mock)
    acked, rss, idle = listen_streams([PY, "-m", "mockmcp", "run", "subscriptions", "--http", "0"])
    return [
        dict(name="HTTP sequential tools/call (h11 floor)", value=f_rate, unit="req/s"),
        dict(name="HTTP sequential tools/call", value=m_rate, unit="req/s", ratio=m_rate / f_rate,
             target=">= 0.6x floor", ok=m_rate / f_rate >= 0.6),
        dict(name=f"HTTP {CLIENTS} clients x {PER_CLIENT}: answered ({took:.1f} s)", value=answered, unit="req"),
        dict(name="HTTP concurrent: lost", value=lost, unit="req", target="0", ok=lost == 0),
        dict(name=f"HTTP {STREAMS} listen streams: acknowledged", value=acked, unit="", target=str(STREAMS),
             ok=acked == STREAMS),
        dict(name=f"HTTP {STREAMS} listen streams: RSS (idle {idle / 1024:.1f} MB)", value=rss / 1024, unit="MB",
             target="< 150 MB", ok=rss / 1024 < 150),
    ]
