"""``mockmcp demo [SCENARIO]``: spawn the mock, drive it with a tiny client, print the exchange.

The quickest way to see what a scenario does: a synchronous client on plain
subprocess pipes (no SDK, no trio) discovers the server, lists and calls every
tool with example arguments made up from its ``inputSchema``, gets every
prompt, reads every resource and one URI per template, and prints each request
and response readably. Only the standard library is imported, so the demo
starts fast and doubles as a smoke test of ``mockmcp run``.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from typing import IO, Any

PROTOCOL_VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "mockmcp-demo", "version": "1"},
}
WIDTH = 100  # longest printed JSON line before it is shortened
TIMEOUT = 5.0  # seconds to wait for one answer (a scenario may script a hang)


class DemoError(Exception):
    """The mock did something the demo cannot continue from (it exited, or wrote garbage)."""


class Client:
    """A synchronous JSON-RPC client over a child's stdin/stdout (one request at a time)."""

    def __init__(self, proc: subprocess.Popen[bytes], out: IO[str], timeout: float = TIMEOUT) -> None:
        self.proc = proc
        self.out = out
        self.timeout = timeout
        self.next_id = 1
        self._buffer = b""

    def _readline(self) -> bytes | None:
        """One line from the mock; ``b""`` at EOF, ``None`` if nothing came within the timeout."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                line, self._buffer = self._buffer, b""
                return line
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line + b"\n"

    def notify(self, method: str, params: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.out.write(f"--> {method} {_short(params)}\n")
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "method": method, "params": params}) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        body = dict(params or {})
        body["_meta"] = META
        msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": body}
        shown = {k: v for k, v in body.items() if k != "_meta"}
        self.out.write(f"\n--> {method} {_short(shown) if shown else ''}\n")
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise DemoError(f"the mock closed its stdin (status {self.proc.wait()}) before {method}") from None
        while True:
            line = self._readline()
            if line is None:
                self.out.write(f"<-- (no answer within {self.timeout:g} s: cancelling and moving on)\n")
                self.notify("notifications/cancelled", {"requestId": rid, "reason": "demo timeout"})
                return {"jsonrpc": "2.0", "id": rid, "error": {"code": 0, "message": "timed out"}}
            if not line:
                raise DemoError(f"the mock exited (status {self.proc.wait()}) before answering {method}")
            try:
                reply = json.loads(line)
            except ValueError:
                raise DemoError(f"the mock wrote a line that is not JSON: {line[:200]!r}") from None
            if reply.get("id") != rid:  # a notification (progress, log...): show it and read on
                self.out.write(f"<-- {reply.get('method', 'message')} {_short(reply.get('params', reply))}\n")
                continue
            if "error" in reply:
                e = reply["error"]
                self.out.write(f"<-- error {e.get('code')}: {e.get('message')}\n")
            else:
                self.out.write(f"<-- {_short(_trim(reply.get('result')))}\n")
            return reply


def _trim(result: Any) -> Any:
    """Leave out what every result carries (serverInfo) so the interesting part shows."""
    if isinstance(result, dict) and isinstance(result.get("_meta"), dict):
        meta = {k: v for k, v in result["_meta"].items() if k != "io.modelcontextprotocol/serverInfo"}
        result = {k: v for k, v in result.items() if k != "_meta"}
        if meta:
            result["_meta"] = meta
    return result


def _short(value: Any) -> str:
    """Compact JSON when it fits on a line, else one line per key or list item, each cut to fit."""
    text = _compact(value)
    if len(text) <= WIDTH or not isinstance(value, dict):
        return _cut(text, WIDTH)
    lines = []
    for key, item in value.items():
        if isinstance(item, list) and item and len(_compact(item)) > WIDTH - len(key):
            lines.append(f"{key}:")
            lines += [f"  - {_cut(_compact(x), WIDTH - 4)}" for x in item[:20]]
            if len(item) > 20:
                lines.append(f"  ... ({len(item) - 20} more)")
        else:
            lines.append(f"{key}: {_cut(_compact(item), WIDTH - len(key) - 2)}")
    return "\n" + "\n".join("    " + ln for ln in lines)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(10, width - 3)] + "..."


def example_value(schema: Any, name: str = "value") -> Any:
    """A plausible value for a JSON Schema (enough for the tools of a demo)."""
    if not isinstance(schema, dict):
        return "example"
    for key in ("const", "default"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    if "examples" in schema and schema["examples"]:
        return schema["examples"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)
        return {k: example_value(props.get(k, {}), k) for k in required}
    if kind == "array":
        return [example_value(schema.get("items", {}), name)]
    if kind == "integer":
        return 2
    if kind == "number":
        return 3 if name in ("b", "y") else 2
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return _example_string(name)


_STRINGS = {"city": "Paris", "text": "Hello, mockmcp!", "code": "print('hi')", "language": "python", "name": "Ada"}


def _example_string(name: str) -> str:
    return _STRINGS.get(name, f"example {name}")


def expand_template(template: str) -> str:
    """A URI for an RFC 6570 template, with example values for its variables."""
    return re.sub(r"\{[+#./;?&]?([^}]+)\}", lambda m: _example_string(m.group(1).split(",")[0].split(":")[0].rstrip("*")), template)


def _all(client: Client, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        reply = client.request(method, {"cursor": cursor} if cursor else {})
        result = reply.get("result") or {}
        items += result.get(key) or []
        cursor = result.get("nextCursor")
        if not cursor or "error" in reply:
            return items


def drive(client: Client) -> None:
    discover = client.request("server/discover").get("result") or {}
    caps = discover.get("capabilities") or {}
    if "tools" in caps:
        for tool in _all(client, "tools/list", "tools"):
            args = example_value(tool.get("inputSchema") or {"type": "object"})
            client.request("tools/call", {"name": tool["name"], "arguments": args if isinstance(args, dict) else {}})
    if "prompts" in caps:
        for prompt in _all(client, "prompts/list", "prompts"):
            args = {a["name"]: _example_string(a["name"]) for a in prompt.get("arguments") or []}
            client.request("prompts/get", {"name": prompt["name"], "arguments": args})
    if "resources" in caps:
        for resource in _all(client, "resources/list", "resources"):
            client.request("resources/read", {"uri": resource["uri"]})
        for template in _all(client, "resources/templates/list", "resourceTemplates"):
            client.request("resources/read", {"uri": expand_template(template["uriTemplate"])})


def demo(scenario: str, out: IO[str] | None = None) -> int:
    """Run the demo against ``scenario``; 0 if the mock answered everything, else 1."""
    out = out or sys.stdout
    cmd = [sys.executable, "-m", "mockmcp", "run", scenario]
    out.write(f"$ {' '.join(cmd[2:])}   (spawned; this demo is the client)\n")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    status = 0
    try:
        drive(Client(proc, out))
    except DemoError as exc:
        out.write(f"\ndemo stopped: {exc}\n")
        status = 1
    finally:
        if proc.stdin is not None:
            try:
                proc.stdin.close()  # EOF: the mock exits on its own
            except BrokenPipeError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err = proc.stderr.read().decode(errors="replace") if proc.stderr is not None else ""
        if proc.stderr is not None:
            proc.stderr.close()
        if proc.stdout is not None:
            proc.stdout.close()
    if err.strip():
        out.write(f"\nmock stderr:\n{err}")
    if proc.returncode not in (0, None) and status == 0:
        out.write(f"\nthe mock exited with status {proc.returncode}\n")
        status = 1
    out.write(f"\n{'done' if status == 0 else 'failed'}.\n")
    out.flush()
    return status
