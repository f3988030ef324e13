"""A tiny raw JSON-lines client for the deliberately buggy test clients.

Each buggy client is run as ``python tests/buggy_clients/NAME.py MOCK_ARGV...``:
it spawns the mock, writes raw JSON lines (bugs included), and prints every
line the mock wrote to its own stdout as ``{"method": ..., "message": ...}``
so the test can validate them against the official schema. It exits with the
mock's exit status.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any, Callable

CAPS = {"elicitation": {"form": {}}}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": CAPS,
    "io.modelcontextprotocol/clientInfo": {"name": "buggy-client", "version": "0"},
}
ANSWER = {"name": {"action": "accept", "content": {"name": "Ada"}}}


def req(rid: Any, method: str, params: dict[str, Any] | None = None, *, meta: bool = True) -> dict[str, Any]:
    p = dict(params or {})
    if meta:
        p["_meta"] = dict(META)
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": p}


def call(rid: Any, name: str, arguments: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return req(rid, "tools/call", {"name": name, "arguments": arguments or {}, **extra})


class Wire:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.methods: dict[Any, str] = {}

    def send(self, msg: dict[str, Any]) -> None:
        if "id" in msg and "method" in msg:
            self.methods.setdefault(json.dumps(msg["id"]), msg["method"])  # a reused id keeps the first
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()

    def recv(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the mock closed stdout early")
        msg = json.loads(line)
        method = self.methods.get(json.dumps(msg.get("id"))) if "method" not in msg else None
        print(json.dumps({"method": method, "message": msg}), flush=True)
        return msg

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        self.send(msg)
        return self.recv()

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        for line in self.proc.stdout:
            print(json.dumps({"method": None, "message": json.loads(line)}), flush=True)
        return self.proc.wait(timeout=30)


def main(script: Callable[[Wire], None]) -> None:
    wire = Wire(sys.argv[1:])
    script(wire)
    sys.exit(wire.close())
