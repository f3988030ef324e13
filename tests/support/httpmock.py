"""A real ``mockmcp run SCENARIO --http 0`` process and a raw HTTP client for it (http.client).

The process is spawned like a suite in any language would: read the first
stdout line for the URL, POST to it, close stdin to stop it. ``post`` builds a
request with the headers a conforming client sends (each overridable, ``None``
drops one); ``stream`` opens a POST and hands back the live response so SSE
events can be read one at a time (or the connection closed mid-stream).
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit
from support.process import mockmcp_prefix

V = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": V, "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-http-test", "version": "1.0.0"}}
NAME_KEY = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def msg(rid: Any, method: str, params: dict[str, Any] | None = None, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    p = dict(params or {})
    p["_meta"] = {**META, **(meta or {})}
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": p}
    if rid is not None:
        out["id"] = rid
    return out


def mcp_headers(message: dict[str, Any]) -> dict[str, str]:
    """The headers a conforming client sends with ``message`` (plain values only)."""
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if "id" in message and "method" in message:
        h["MCP-Protocol-Version"] = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        h["Mcp-Method"] = message["method"]
        key = NAME_KEY.get(message["method"])
        if key is not None:
            h["Mcp-Name"] = message["params"][key]
    return h


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    def events(self) -> list[Any]:
        return [json.loads(e) for e in sse_data(self.body)]

    def __repr__(self) -> str:
        return f"Response({self.status}, {self.headers}, {self.body[:300]!r})"


def sse_data(body: bytes) -> list[bytes]:
    """The data of each SSE event in ``body`` (comments and other fields skipped)."""
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")]
        if data:
            out.append(b"\n".join(data))
    return out


class HttpMock:
    def __init__(self, scenario: str | Path, *args: str, cwd: Path | None = None, stderr: Any = subprocess.PIPE) -> None:
        """``stderr``: a file for a mock that writes much there (a pipe nobody reads would block it)."""
        self.proc = subprocess.Popen(
            [*mockmcp_prefix(), "run", str(scenario), "--http", "0", *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd,
        )
        assert self.proc.stdout is not None
        self.first_line = self.proc.stdout.readline().decode()
        self.url = self.first_line.strip()
        parts = urlsplit(self.url)
        assert parts.hostname and parts.port, f"no URL on the first stdout line: {self.first_line!r}: {self.stderr()}"
        self.host, self.port = parts.hostname, parts.port

    def connection(self, timeout: float = 10) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def post(self, message: dict[str, Any] | bytes | list[Any], headers: dict[str, str | None] | None = None, *,
             method: str = "POST", path: str = "/mcp", conn: http.client.HTTPConnection | None = None) -> Response:
        c = conn or self.connection()
        try:
            r = self._send(c, message, headers, method, path)
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read())
        finally:
            if conn is None:
                c.close()

    def stream(self, message: dict[str, Any], headers: dict[str, str | None] | None = None) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        c = self.connection()
        return c, self._send(c, message, headers, "POST", "/mcp")

    def _send(self, c: http.client.HTTPConnection, message: Any, headers: dict[str, str | None] | None,
              method: str, path: str) -> http.client.HTTPResponse:
        base: dict[str, str | None] = dict(mcp_headers(message)) if isinstance(message, dict) else {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        base.update(headers or {})
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        c.putrequest(method, path, skip_accept_encoding=True)
        for k, v in base.items():
            if v is not None:
                c.putheader(k, v)
        c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        return c.getresponse()

    def raw(self, data: bytes, timeout: float = 5) -> bytes:
        """Write raw bytes on a fresh socket; everything read until the server closes (or the timeout)."""
        with socket.create_connection((self.host, self.port), timeout=timeout) as s:
            s.sendall(data)
            return read_all(s)

    def stop(self, timeout: float = 10) -> int:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        return self.proc.wait(timeout)

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        if self.proc.stderr is None:
            return "(stderr not piped)"
        return self.proc.stderr.read().decode(errors="replace")

    def __enter__(self) -> HttpMock:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()


def read_all(s: socket.socket) -> bytes:
    chunks = []
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            chunks.append(data)
    except (socket.timeout, ConnectionResetError):
        pass
    return b"".join(chunks)


def read_events(resp: http.client.HTTPResponse, n: int, timeout: float = 10) -> Iterator[bytes]:
    """Read SSE blocks (each up to its blank line) from a live response, ``n`` of them."""
    deadline = time.monotonic() + timeout
    block = b""
    while n and time.monotonic() < deadline:
        line = resp.readline()
        if not line:
            return
        if line in (b"\n", b"\r\n"):
            yield block
            block = b""
            n -= 1
        else:
            block += line


TASKS = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


class HttpClient:
    """A raw JSON-RPC client over ``HttpMock``: numbered requests, the answer from a JSON body or
    an SSE stream (the message with the request's id; the others kept in ``notifications``)."""

    def __init__(self, mock: HttpMock, caps: Any = TASKS, start_id: int = 1) -> None:
        self.mock, self.caps, self.next_id = mock, caps, start_id
        self.notifications: list[dict[str, Any]] = []

    def message(self, method: str, params: dict[str, Any] | None = None, caps: Any = None) -> dict[str, Any]:
        rid, self.next_id = self.next_id, self.next_id + 1
        return msg(rid, method, params, {"io.modelcontextprotocol/clientCapabilities": self.caps if caps is None else caps})

    def ask(self, method: str, params: dict[str, Any] | None = None, caps: Any = None) -> dict[str, Any]:
        m = self.message(method, params, caps)
        r = self.mock.post(m)
        if r.headers.get("content-type", "").startswith("text/event-stream"):
            found = None
            for event in r.events():
                if event.get("id") == m["id"] and "method" not in event:
                    found = event
                else:
                    self.notifications.append(event)
            assert found is not None, r
            return found
        assert r.status in (200, 400, 404), r
        return r.json()  # type: ignore[no-any-return]

    def call(self, tool: str, caps: Any = None, **arguments: Any) -> dict[str, Any]:
        return self.ask("tools/call", {"name": tool, "arguments": arguments}, caps)

    def get(self, task_id: Any) -> dict[str, Any]:
        return self.ask("tasks/get", {"taskId": task_id})
