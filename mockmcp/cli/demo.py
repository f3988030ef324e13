"""``mockmcp demo [SCENARIO]``: spawn the mock, drive it with a small client, print the exchange.

The quickest way to see what a scenario does, and a tour of what a client of
this revision has to cope with. A synchronous client on plain subprocess pipes
(no SDK, no trio: only the standard library, so it starts fast) discovers the
server, calls every tool with example arguments made up from its
``inputSchema``, gets every prompt, reads every resource and one URI per
template, and prints each message readably. Like a capable client it:

- declares elicitation (form and url), sampling (with tools and context) and
  roots, and answers every ``input_required`` request with a canned answer it
  prints, retrying with the exact ``requestState`` until the request completes
  (at most ``MAX_ROUNDS`` rounds);
- declares the Tasks extension (``io.modelcontextprotocol/tasks``) and follows
  a tool call answered with a task to its end: it polls ``tasks/get`` at the
  task's interval, answers its input requests with ``tasks/update``, cancels
  one that runs on and on, and prints each change of status (``demotasks``);
- sends a ``progressToken`` and a log level with each tool call and prints the
  progress and log notifications that come back;
- skips lines that are not JSON (with a note), gives an unanswered request
  ``timeout`` seconds (from when the mock has read it: a freshly spawned mock's
  start-up on a busy machine is not a slow answer), then sends
  ``notifications/cancelled`` and goes on;
- restarts the mock when it crashes or exits, and goes on with the next call;
- retries an internal error (-32603) twice, as a client would a transient fault;
- ends with one summary line per call (ok, error code, crashed, timed out...).

The exit status is 0 when the tour got to the end, whatever the scenario's
faults did; 1 only when the mock cannot be started at all (an invalid
scenario) or keeps dying.
"""

from __future__ import annotations

import json
import os
import re
import select
import struct
import subprocess
import sys
import tempfile
import time
from typing import IO, Any

from mockmcp.cli.demotasks import TASKS_EXTENSION, follow

PROTOCOL_VERSION = "2026-07-28"
CAPABILITIES: dict[str, Any] = {
    "elicitation": {"form": {}, "url": {}},
    "sampling": {"tools": {}, "context": {}},
    "roots": {},
    "extensions": {TASKS_EXTENSION: {}},
}
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES,
    "io.modelcontextprotocol/clientInfo": {"name": "mockmcp-demo", "version": "1"},
}
LOG_LEVEL = "debug"  # the demo wants to see every log message a tool sends
WIDTH = 100  # longest printed JSON line before it is shortened
TIMEOUT = 3.0  # seconds to wait for one answer: longer than a scripted slow answer, short enough for a hang
# A fresh mock's start-up (interpreter, imports, scenario) is not the answer's time: the timeout
# runs from when the process has read the request, but a process that has read nothing this
# long after its spawn is given up on all the same (it may never read: a stopped reader).
STARTUP_LIMIT = 30.0
STARTUP_POLL = 0.05  # seconds between looks at whether a starting mock has read its input
MAX_ROUNDS = 10  # input_required rounds before the demo gives up on a request
MAX_RESTARTS = 5  # a mock that keeps dying is not worth more restarts
INTERNAL_ERROR_RETRIES = 2
STDERR_LINES = 20  # last lines of each mock's stderr shown at the end

SAMPLING_ANSWER = {
    "role": "assistant",
    "model": "mockmcp-demo-model",
    "content": {"type": "text", "text": "Hello from the demo's canned model!"},
    "stopReason": "endTurn",
}
ROOTS_ANSWER = {"roots": [{"uri": "file:///home/demo/project", "name": "project"}, {"uri": "file:///home/demo/notes", "name": "notes"}]}


class DemoError(Exception):
    """The demo cannot go on: the mock cannot be started, or keeps dying."""


class Exited(Exception):
    """The mock process ended (EOF on its stdout, or its stdin is closed)."""


class Mock:
    """One spawned ``mockmcp run`` process: write lines to it, read lines from it with a deadline."""

    def __init__(self, argv: list[str]) -> None:
        self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: a mock flooding stderr never blocks
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.spawned = time.monotonic()
        self.reading = False  # it has read its input once: it is up, answers are timed from now on
        self.buffer = b""
        self.lines_read = 0
        self.closed: tuple[int, str] | None = None  # (status, stderr tail) once closed

    def starting(self) -> bool:
        """Whether the process is still starting: it has not read what was written to it yet
        (bytes left in its stdin pipe), and it was spawned less than ``STARTUP_LIMIT`` ago. Where
        the pipe cannot be asked (no ``FIONREAD``), it counts as started."""
        if self.reading or self.proc.stdin is None or self.proc.stdin.closed:
            return False
        try:
            import fcntl
            import termios

            unread = struct.unpack("i", fcntl.ioctl(self.proc.stdin.fileno(), termios.FIONREAD, b"\0" * 4))[0]
        except (ImportError, OSError, AttributeError):
            unread = 0
        if unread == 0:
            self.reading = True
        return not self.reading and time.monotonic() - self.spawned < STARTUP_LIMIT

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):  # ValueError: we closed it already
            raise Exited() from None

    def readline(self, deadline: float) -> bytes | None:
        """One line; ``None`` if nothing came before ``deadline``; raises ``Exited`` at EOF."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                if self.buffer:  # a last line without its newline
                    line, self.buffer = self.buffer, b""
                    return line
                raise Exited()
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        self.lines_read += 1
        return line

    def close(self) -> tuple[int, str]:
        """EOF to the mock, wait for it, and return its status and the tail of its stderr."""
        if self.closed is not None:  # a restart already closed it, then the session ended
            return self.closed
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()  # EOF: the mock exits on its own
            except BrokenPipeError:
                pass
        try:
            status = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.stderr.seek(0)
        lines = self.stderr.read().decode(errors="replace").splitlines()
        self.stderr.close()
        if len(lines) > STDERR_LINES:
            lines = [f"... ({len(lines) - STDERR_LINES} earlier lines)"] + lines[-STDERR_LINES:]
        self.closed = (status, "\n".join(lines))
        return self.closed


class Session:
    """The demo client: requests, notifications, input_required rounds and restarts over ``Mock``."""

    def __init__(self, argv: list[str], out: IO[str], timeout: float = TIMEOUT, time_scale: float = 1.0) -> None:
        self.argv = argv
        self.out = out
        self.timeout = timeout
        self.time_scale = time_scale  # the mock's --time-scale: a task's pollIntervalMs is waited for scaled by it
        self.next_id = 1
        self.restarts = 0
        self.stderr_tails: list[tuple[int, str]] = []
        self.mock = Mock(argv)

    def close(self) -> None:
        if self.mock.closed is None:  # (else a restart closed it, and kept or told its stderr)
            self.stderr_tails.append(self.mock.close())

    def restart(self, why: str) -> None:
        """The mock died: keep its stderr, spawn a fresh one (state starts over, as for any client)."""
        answered = self.mock.lines_read
        status, err = self.mock.close()
        if answered == 0 and self.restarts == 0 and status == 2:
            raise DemoError(f"the mock could not start (status 2):\n{err}")  # (its stderr, told once)
        self.stderr_tails.append((status, err))
        if self.restarts >= MAX_RESTARTS:
            raise DemoError(f"the mock died {self.restarts + 1} times; giving up")
        self.restarts += 1
        self.out.write(f"    (the mock {why} with status {status}: restarting it, as a client would)\n")
        self.out.write(f"$ {' '.join(self.argv[2:])}   (restart {self.restarts})\n")
        self.mock = Mock(self.argv)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.out.write(f"--> {method} {_short(params)}\n")
        try:
            self.mock.send({"jsonrpc": "2.0", "method": method, "params": params})
        except Exited:
            pass  # it is gone anyway; the next request restarts it

    def request(self, method: str, params: dict[str, Any] | None = None, *, tool: bool = False, quiet: bool = False) -> dict[str, Any]:
        """One request and its answer; a timeout, a crash or garbage become a synthetic error reply.

        ``quiet``: print neither the request nor its answer (a task's polls, whose changes
        ``demotasks`` prints instead); notifications, timeouts and restarts are printed all the same."""
        rid = self.next_id
        self.next_id += 1
        body = dict(params or {})
        meta = dict(META)
        if tool:
            meta["progressToken"] = f"progress-{rid}"
            meta["io.modelcontextprotocol/logLevel"] = LOG_LEVEL
        body["_meta"] = meta
        shown = {k: v for k, v in body.items() if k not in ("_meta", "requestState")}
        if "requestState" in body:
            shown["requestState"] = _cut(str(body["requestState"]), 24)
        if not quiet:
            self.out.write(f"\n--> #{rid} {method} {_short(shown) if shown else ''}\n")
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": body}
        try:
            self.mock.send(message)
        except Exited:  # it died between requests (an exitAfter, say): a fresh one gets this request
            self.restart("had exited")
            self.mock.send(message)
        return self._answer(rid, quiet)

    def _answer(self, rid: int, quiet: bool) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            starting = self.mock.starting()
            try:
                line = self.mock.readline(min(deadline, time.monotonic() + STARTUP_POLL) if starting else deadline)
            except Exited:
                status = self.mock.proc.wait()
                self.out.write(f"<-- (the mock exited with status {status} before answering #{rid})\n")
                self.restart("exited")
                return _synthetic(rid, f"crashed (exit status {status})")
            if line is None and starting:
                if self.mock.starting():  # not yet read: the time it takes to start is not the answer's
                    deadline = time.monotonic() + self.timeout
                continue
            if line is None:
                self.out.write(f"<-- (no answer to #{rid} within {self.timeout:g} s: cancelling it and moving on)\n")
                self.notify("notifications/cancelled", {"requestId": rid, "reason": "demo timeout"})
                return _synthetic(rid, "timed out (cancelled)")
            reply = _parse(line)
            if reply is None:
                self.out.write(f"<-- (skipped a line that is not a JSON object: {_cut(repr(line)[2:-1], WIDTH - 40)})\n")
                continue
            if reply.get("id") == rid and "method" not in reply:
                if not quiet:
                    self.show(reply)
                return reply
            self.out.write(f"<-- {reply.get('method', 'message')} {_short(reply.get('params', reply))}\n")

    def show(self, reply: dict[str, Any]) -> None:
        """One answer, readably: its error, or its result without what every result carries."""
        if isinstance(reply.get("error"), dict):
            e = reply["error"]
            self.out.write(f"<-- error {e.get('code')}: {e.get('message')}\n")
        else:
            self.out.write(f"<-- {_short(_trim(reply.get('result')))}\n")

    def call(self, method: str, params: dict[str, Any], *, tool: bool = False) -> str:
        """A request carried through its input_required rounds and internal-error retries; its summary."""
        attempts = 0
        while True:
            attempts += 1
            reply, rounds = self._rounds(method, params, tool=tool)
            code = _error_code(reply)
            if code == -32603 and attempts <= INTERNAL_ERROR_RETRIES:
                self.out.write("    (an internal error may be transient: trying again)\n")
                continue
            return _verdict(reply, rounds, attempts)

    def _rounds(self, method: str, params: dict[str, Any], *, tool: bool) -> tuple[dict[str, Any], int]:
        retry = dict(params)
        for round_ in range(1, MAX_ROUNDS + 1):
            reply = self.request(method, retry, tool=tool)
            result = reply.get("result")
            if method == "tools/call" and isinstance(result, dict) and result.get("resultType") == "task":
                return follow(self, result), round_
            if not isinstance(result, dict) or result.get("resultType") != "input_required":
                return reply, round_
            self.out.write(f"    (round {round_}: the server needs input; the demo answers and retries)\n")
            retry = dict(params)
            requests = result.get("inputRequests")
            if isinstance(requests, dict) and requests:
                retry["inputResponses"] = {key: self.canned_answer(key, req) for key, req in requests.items()}
            if "requestState" in result:
                retry["requestState"] = result["requestState"]  # exactly as received
        self.out.write(f"    (still input_required after {MAX_ROUNDS} rounds: giving up on it)\n")
        return _synthetic(0, f"gave up after {MAX_ROUNDS} rounds"), MAX_ROUNDS

    def canned_answer(self, key: str, req: Any) -> dict[str, Any]:
        """The canned answer to one input request, printed as the user/model/client would give it."""
        method = req.get("method") if isinstance(req, dict) else None
        raw = req.get("params") if isinstance(req, dict) else None
        params: dict[str, Any] = raw if isinstance(raw, dict) else {}
        answer: dict[str, Any]
        match method:
            case "elicitation/create" if params.get("mode") == "url":
                answer = {"action": "accept"}
                who = f"the user opens {params.get('url')} and accepts"
            case "elicitation/create":
                content = example_value(params.get("requestedSchema") or {"type": "object"})
                answer = {"action": "accept", "content": content if isinstance(content, dict) else {}}
                who = f"the user answers {params.get('message', '')!r}"
            case "sampling/createMessage":
                answer = dict(SAMPLING_ANSWER)
                who = "the model answers"
            case "roots/list":
                answer = dict(ROOTS_ANSWER)
                who = "the client lists its roots"
            case _:
                answer = {}
                who = f"unknown input request {method!r}: an empty answer"
        self.out.write(f"    {key}: {who}: {_cut(_compact(answer), WIDTH)}\n")
        return answer


def _synthetic(rid: int, verdict: str) -> dict[str, Any]:
    """A stand-in reply for an answer that never came; ``_verdict`` reads its note."""
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": None, "message": verdict}, "demo": verdict}


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _error_code(reply: dict[str, Any]) -> Any:
    return reply["error"].get("code") if isinstance(reply.get("error"), dict) and "demo" not in reply else None


def _verdict(reply: dict[str, Any], rounds: int, attempts: int) -> str:
    """The summary of one call: ok (after N rounds / attempts), error CODE, crashed, timed out, bad result."""
    if "demo" in reply:
        return str(reply["demo"])
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    if isinstance(reply.get("error"), dict):
        return f"error {reply['error'].get('code')}{tries}"
    result = reply.get("result")
    if not isinstance(result, dict) or "resultType" not in result:
        return "bad result (no resultType)"
    if result["resultType"] != "complete":
        return f"bad result (resultType {result['resultType']!r})"
    detail = [f"after {rounds} rounds"] if rounds > 1 else []
    if tries:
        detail.append(tries.strip())
    ok = "ok (isError)" if result.get("isError") is True else "ok"
    return ok + (f" {', '.join(detail)}" if detail else "")


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
    """A plausible value for a JSON Schema (enough for the tools and elicitations of a demo)."""
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


_STRINGS = {"city": "Paris", "text": "Hello, mockmcp!", "code": "print('hi')", "language": "python", "name": "Ada", "color": "teal"}


def _example_string(name: str) -> str:
    return _STRINGS.get(name, f"example {name}")


def expand_template(template: str) -> str:
    """A URI for an RFC 6570 template, with example values for its variables."""
    return re.sub(r"\{[+#./;?&]?([^}]+)\}", lambda m: _example_string(m.group(1).split(",")[0].split(":")[0].rstrip("*")), template)


def _all(session: Session, method: str, key: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor = None
    while True:
        reply = session.request(method, {"cursor": cursor} if cursor else {})
        result = reply.get("result")
        if not isinstance(result, dict):
            return items
        items += [x for x in result.get(key) or [] if isinstance(x, dict)]
        cursor = result.get("nextCursor")
        if not cursor:
            return items


def drive(session: Session) -> list[tuple[str, str]]:
    """The tour; returns (what, verdict) per call for the summary."""
    summary: list[tuple[str, str]] = []
    discover = session.request("server/discover").get("result")
    caps = discover.get("capabilities") if isinstance(discover, dict) else None
    if not isinstance(caps, dict):
        session.out.write("    (no capabilities from server/discover: nothing more to try)\n")
        return summary
    if "tools" in caps:
        for tool in _all(session, "tools/list", "tools"):
            args = example_value(tool.get("inputSchema") or {"type": "object"})
            params = {"name": tool.get("name"), "arguments": args if isinstance(args, dict) else {}}
            summary.append((f"tool {tool.get('name')}", session.call("tools/call", params, tool=True)))
    if "prompts" in caps:
        for prompt in _all(session, "prompts/list", "prompts"):
            args = {a["name"]: _example_string(a["name"]) for a in prompt.get("arguments") or [] if isinstance(a, dict) and "name" in a}
            summary.append((f"prompt {prompt.get('name')}", session.call("prompts/get", {"name": prompt.get("name"), "arguments": args})))
    if "resources" in caps:
        for resource in _all(session, "resources/list", "resources"):
            summary.append((f"resource {resource.get('uri')}", session.call("resources/read", {"uri": resource.get("uri")})))
        for template in _all(session, "resources/templates/list", "resourceTemplates"):
            uri = expand_template(str(template.get("uriTemplate", "")))
            summary.append((f"resource {uri}", session.call("resources/read", {"uri": uri})))
    return summary


def demo(scenario: str, out: IO[str] | None = None, *, journal: str | None = None, timeout: float = TIMEOUT,
         time_scale: float = 1.0) -> int:
    """Run the demo against ``scenario``; 0 when the tour reached its end, else 1.

    ``time_scale`` is handed to the mock (``--time-scale``): its scripted delays and timed
    task phases, and the demo's waits between a task's polls, are multiplied by it."""
    out = out or sys.stdout
    args = ["run", scenario]
    if journal:
        args += ["--journal", journal]
    if time_scale != 1.0:
        args += ["--time-scale", f"{time_scale:g}"]
    out.write(f"$ mockmcp {' '.join(args)}   (spawned; this demo is the client)\n")
    from mockmcp.warm.paths import prefix_from_env

    argv = [*(prefix_from_env() or [sys.executable, "-m", "mockmcp"]), *args]  # (docs/warm.md: every spawner reads it)
    status = 0
    summary: list[tuple[str, str]] = []
    session = Session(argv, out, timeout, time_scale)
    try:
        summary = drive(session)
    except DemoError as exc:
        out.write(f"\ndemo stopped: {exc}\n")
        status = 1
    finally:
        session.close()
    for code, err in session.stderr_tails:
        if err.strip():
            out.write(f"\nmock stderr (exit status {code}):\n{err}\n")
    if summary:
        width = max(len(what) for what, _ in summary)
        out.write("\nsummary:\n" + "".join(f"  {what:<{width}}  {verdict}\n" for what, verdict in summary))
    if journal and os.path.isfile(journal):  # (not when the mock could not open it)
        out.write(f"\njournal: {journal} (see it as a timeline: mockmcp journal {journal} --html timeline.html)\n")
    out.write(f"\n{'done' if status == 0 else 'failed'}.\n")
    out.flush()
    return status
