"""A hostile "real server" for ``mockmcp proxy`` and ``mockmcp record``, and the client that drives them.

The server (``HOSTILE_SERVER``, a few lines of Python written to a file by ``server_script``)
writes, for each call of its ``hostile`` tool, the lines the call asks for (any bytes: deep
nesting, huge lines, invalid UTF-8, lone surrogates, NUL bytes, JSON-RPC with wrong types,
answers to ids nobody asked) and then the call's answer (its result may be hostile too), then a
``notifications/message`` marking the end; its ``flood`` tool writes megabytes of log lines.
``FIXED_LINES`` and ``ANSWERS`` are the worst cases; ``Client`` drives the process in front of
the server over pipes, ``exchange`` sends one hostile call and a probe and waits for both.
"""

from __future__ import annotations

import base64
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

__all__ = ["ANSWERS", "FIXED_LINES", "HOSTILE_SERVER", "Client", "b64", "exchange", "expected", "hostile_call",
           "matches", "probe", "server_script"]

HOSTILE_SERVER = r'''
import base64, json, sys
out = sys.stdout.buffer


def send(data):
    out.write(data)
    out.flush()


def flood(kind, mb):
    pad = "x" * 3900
    msg = {"log": {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": pad}},
           "badlog": {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "loud", "data": pad}}}[kind]
    chunk = ((json.dumps(msg) + "\n") * 256).encode()  # about 1 MB of 4 KB lines
    for _ in range(mb):
        out.write(chunk)


for raw in sys.stdin.buffer:
    try:
        msg = json.loads(raw)
    except (ValueError, RecursionError):  # (a client line nested past the decoder's recursion)
        continue
    if type(msg) is not dict or "id" not in msg or "method" not in msg:
        continue
    rid, params = msg["id"], msg.get("params") or {}
    args = params.get("arguments") or {}
    if msg["method"] == "tools/call" and params.get("name") == "hostile":
        for item in args.get("lines", []):
            if "b64" in item:
                send(base64.b64decode(item["b64"]) + b"\n")
            else:  # a huge line, written in pieces
                for _ in range(item["times"] // 65536):
                    out.write(item["repeat"].encode() * 65536)
                send(b"\n")
        if "answer" in args:  # the answer's result as JSON text spliced in as is (hostile too)
            body = base64.b64decode(args["answer"])
            send(b'{"jsonrpc":"2.0","id":' + json.dumps(rid).encode() + b',"result":' + body + b"}\n")
        else:
            send((json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "ok"}]}}) + "\n").encode())
        send((json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                          "params": {"level": "debug", "data": "end " + str(args.get("n"))}}) + "\n").encode())
    elif msg["method"] == "tools/call" and params.get("name") == "flood":
        flood(args["kind"], args["mb"])
        send((json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": "flooded"}]}}) + "\n").encode())
    else:
        send((json.dumps({"jsonrpc": "2.0", "id": rid, "result": {}}) + "\n").encode())
'''

_J = '{"jsonrpc":"2.0",'
# The worst of what a real server can write, beyond what the stdio fuzzer generates.
FIXED_LINES: list[bytes] = [
    b"[" * 100_000,  # never closed
    b"[" * 100_000 + b"]" * 100_000,  # closed: valid JSON, far past every decoder's recursion
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    _J.encode() + b'"id":"unknown-1","result":' + b"[" * 70 + b"]" * 70 + b"}",  # past the nesting limit
    b"\xff\xfe not UTF-8 \xc3",
    b"\xed\xa0\x80 a surrogate's bytes",
    b"\x00\x00NUL\x00",
    b"",
    b"\r",
    b"   ",
    b"null",
    b"[]",
    b"1e400",
    b"9" * 5000,
    b"plain text, not JSON",
    (_J + '"method":"notifications/message","params":{"level":"info","data":"\\ud800 \\udfff"}}').encode(),
    (_J + '"method":"notifications/message","params":{"level":["info"],"data":{"{{":"x"}}}').encode(),
    (_J + '"method":"notifications/progress","params":[1,2]}').encode(),
    (_J + '"method":"notifications/progress","params":{"progressToken":{"a":[1]},"progress":"x"}}').encode(),
    (_J + '"id":[1],"result":1}').encode(),
    (_J + '"id":{"a":1},"error":5}').encode(),
    (_J + '"id":null,"error":{"code":"x"}}').encode(),
    (_J + '"id":"unknown-2","result":{}}').encode(),
    (_J + '"id":1e400,"result":1}').encode(),
    (_J + '"id":true,"result":null}').encode(),
    (_J + '"id":1.5,"error":{"code":-1,"message":"\\u0000"}}').encode(),
    b'{"jsonrpc":2,"method":5}',
    (_J + '"id":7,"method":"elicitation/create","params":"x"}').encode(),
    (_J + '"id":[],"method":"roots/list"}').encode(),
    (_J + '"method":"notifications/cancelled","params":{"requestId":[1,{"x":null}]}}').encode(),
    b'{"jsonrpc":"2.0","id":1,"result":NaN}',
    b'{"jsonrpc":"2.0","result":1,"result":2,"id":"unknown-3"}',
]
# Answers to the very request in flight, hostile themselves (the result's JSON text).
ANSWERS: list[bytes] = [
    b"[" * 100_000,
    b"[" * 70 + b"1" + b"]" * 70,
    b'{"content":[{"type":"text","text":"\\ud800"}],"structuredContent":{"\\udfff":"\\u0000"}}',
    b"1e400",
    b"NaN",
    b'"\xff"',
    b"null",
    b'{"content":"not a list","isError":"yes"}',
    b'{"content":[{"type":"text"}],"structuredContent":{"{{ id }}":"{{ 1 +"}}',
    b'{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{}}}}',
    b'{"resultType":"input_required","inputRequests":[1]}',
    b'{"resultType":"input_required"}',
    b'{"content":[],"_meta":{"io.modelcontextprotocol/serverInfo":5},"ttlMs":-1,"cacheScope":7}',
    b'{"content":[{"type":"text","text":"' + b"9" * 4000 + b'"}],"n":' + b"9" * 4000 + b"}",
]


def server_script(tmp_path: Path) -> Path:
    path = tmp_path / "hostile_server.py"
    path.write_text(HOSTILE_SERVER)
    return path


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Client:
    """A process driven over pipes; its stdout read by a thread into a queue of lines."""

    def __init__(self, cmd: list[str], stderr: Path) -> None:
        self.err_path = stderr
        self.err = stderr.open("wb")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.put(raw)
        self.lines.put(b"")

    def send(self, *msgs: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in msgs))
        self.proc.stdin.flush()

    def until(self, done: Callable[[list[bytes]], bool], timeout: float = 60) -> list[bytes]:
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while not done(got):
            try:
                raw = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no answer within {timeout} s; got {[g[:200] for g in got]}; "
                                     f"stderr: {self.stderr()[-2000:]!r}") from None
            if raw == b"":
                raise AssertionError(f"the process closed its stdout (status {self.proc.poll()}); "
                                     f"stderr: {self.stderr()[-3000:]!r}")
            got.append(raw)
        return got

    def close(self, timeout: float = 60) -> int:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.err.close()

    def stderr(self) -> bytes:
        if not self.err.closed:
            self.err.flush()
        return self.err_path.read_bytes()


def hostile_call(n: int, lines: list[Any], mode: str = "pass", answer: bytes | None = None,
                 meta: dict[str, Any] | None = None) -> dict[str, Any]:
    items = [{"b64": b64(x)} if type(x) is bytes else x for x in lines]
    args: dict[str, Any] = {"n": n, "mode": mode, "lines": items}
    if answer is not None:
        args["answer"] = b64(answer)
    params: dict[str, Any] = {"name": "hostile", "arguments": args}
    if meta is not None:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": f"request-{n:06d}", "method": "tools/call", "params": params}


def probe(n: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": f"probe-{n:06d}", "method": "ping", "params": {}}


def matches(raw: bytes, key: str, value: Any) -> bool:
    """Whether ``raw`` is the result whose ``key`` is ``value`` (``key`` "end": the end marker with
    data ``value``); hostile lines (huge, not JSON, not an object) never match."""
    if len(raw) > 4096:
        return False
    try:
        msg = json.loads(raw)
    except ValueError:
        return False
    if type(msg) is not dict:
        return False
    if key == "end":
        params = msg.get("params")
        return msg.get("method") == "notifications/message" and type(params) is dict and params.get("data") == value
    return msg.get(key) == value and "result" in msg


def exchange(client: Client, n: int, call: dict[str, Any]) -> list[bytes]:
    """Send one hostile call and a probe; every line the client got until both are done."""
    client.send(call, probe(n))
    return client.until(lambda got: any(matches(g, "id", f"probe-{n:06d}") for g in got)
                        and any(matches(g, "end", f"end {n}") for g in got))


def expected(lines: list[Any]) -> list[bytes]:
    """What the client must see of the lines the server was asked to write (huge ones compared by size)."""
    return [x + b"\n" for x in lines if type(x) is bytes]
