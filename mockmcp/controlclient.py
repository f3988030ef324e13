"""The Python side of the control channel: drive a running mock from a test.

``AsyncControl`` works under asyncio and trio alike: each call opens the Unix
socket with the running loop's own primitives (``asyncio.open_unix_connection``
or ``trio.open_unix_socket``; trio is a dependency of mockmcp anyway, and no
other library is needed), sends one request line and reads one response line.
A connection per call keeps concurrent calls (a ``wait_for`` in one task, an
``emit`` in another) independent. ``SyncControl`` is the same over a blocking
socket, for plain pytest tests. Both wait for the socket to appear, since the
client under test spawns the mock when it connects.

The operations are written once (``ControlOperations``, which ``MockServer``
shares); a call returns the
operation's ``result`` (or one field of it), and an error response raises
``ControlError`` (``WaitTimedOut`` for a ``wait_for`` that timed out, an
``AssertionError`` too, so pytest shows its near miss as a failure); anything
else that comes back raises ``NotAnAnswer``.
"""

from __future__ import annotations

import abc

import itertools
import json
import socket
import time
from typing import Any

__all__ = ["AsyncControl", "ControlError", "ControlOperations", "NotAnAnswer", "SyncControl", "WaitTimedOut"]

TIMED_OUT = -32008  # control.TIMED_OUT (not imported: this module stays light)
CONNECT_TIMEOUT = 10.0  # seconds to wait for the mock's socket to appear
# Seconds an answer may take beyond the operation's own ``timeout`` (a ``waitFor``): a live mock
# answers every operation at once, so only a stopped mock or another program's socket takes longer.
ANSWER_TIMEOUT = 30.0
MAX_ANSWER = 64 * 1024 * 1024  # the longest answer line read (a journal page is the longest a mock sends)


class NotAnAnswer(ConnectionError):
    """What came back over the control socket is not a control answer: a line that is not a JSON-RPC
    response, one past ``MAX_ANSWER``, or none at all. A path that names another program's socket,
    or a mock that died mid-answer; the message quotes the start of what came."""


class ControlError(Exception):
    """An error response on the control channel (``code``, ``message``, ``data``)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class WaitTimedOut(ControlError, AssertionError):
    """``wait_for`` saw no matching request in time; ``data["nearMiss"]`` is the closest one."""


def _request(rid: int, op: str, params: dict[str, Any]) -> bytes:
    """One request line in ASCII: a value may hold a lone surrogate (a test waiting for the
    ``\\ud800`` its client sends, or arming a reply that holds one), which UTF-8 cannot encode."""
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": op, "params": params}) + "\n").encode("ascii")


def _result(line: bytes, pick: str | None) -> Any:
    if not line:
        raise NotAnAnswer("the mock closed the control connection without answering")
    if len(line) > MAX_ANSWER:
        raise NotAnAnswer(f"the control socket's answer is longer than {MAX_ANSWER} bytes: {line[:200]!r}...")
    try:
        response = json.loads(line)
    except (ValueError, RecursionError):
        response = None
    error = response.get("error") if type(response) is dict else None
    if type(error) is dict and type(code := error.get("code")) is int:
        cls = WaitTimedOut if code == TIMED_OUT else ControlError
        raise cls(code, str(error.get("message", "")), error.get("data"))
    if type(response) is not dict or error is not None or "result" not in response:
        raise NotAnAnswer(f"the control socket answered with something that is not a JSON-RPC response: {line[:200]!r}")
    result = response["result"]
    if pick is None:
        return result
    if type(result) is not dict or pick not in result:
        raise NotAnAnswer(f"the control socket's answer has no {pick!r}: {line[:200]!r}")
    return result[pick]


def answer_timeout(params: dict[str, Any], beyond: float = ANSWER_TIMEOUT) -> float:
    """How long to wait for the answer to an operation with ``params``: ``beyond`` seconds more than
    the wait the operation itself asks for (``timeout``, which the mock bounds)."""
    wait = params.get("timeout")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 < wait < 1e6:
        return beyond  # no wait asked for, or one the mock refuses at once
    return beyond + float(wait)


def _silent(path: str, seconds: float) -> NotAnAnswer:
    return NotAnAnswer(f"no answer from {path} within {seconds:g} s: it accepted the connection but said nothing "
                       "(a stopped mock, or another program's socket)")


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}


class ControlOperations(abc.ABC):
    """Every control operation but ``journal``, once, over a subclass's ``call``: a coroutine
    function in the async client (and in ``MockServer``, whose own ``journal()`` reads the file),
    a blocking one in the sync client. Declared here, not forwarded, so IDEs and mypy see them."""

    @abc.abstractmethod
    def call(self, op: str, params: dict[str, Any], pick: str | None = None) -> Any:
        """Send the operation named ``op`` (its wire name, e.g. ``"getState"``) with ``params`` and
        return its result (``pick``: one field of it); each subclass's transport."""

    # events
    def emit(self, event: str, uri: str | None = None) -> Any:
        """Deliver ``event`` now to every listening stream that asked for it; the number delivered."""
        return self.call("emit", _clean({"event": event, "uri": uri}), "delivered")

    def emit_tools_changed(self) -> Any:
        return self.emit("tools/list_changed")

    def emit_prompts_changed(self) -> Any:
        return self.emit("prompts/list_changed")

    def emit_resources_changed(self) -> Any:
        return self.emit("resources/list_changed")

    def emit_resource_updated(self, uri: str) -> Any:
        return self.emit("resources/updated", uri)

    def emit_log(self, level: str, data: Any, logger: str | None = None) -> Any:
        """A log message on every stream whose listen request set a log level at or below ``level``."""
        return self.call("emit", _clean({"event": "log", "level": level, "data": data, "logger": logger}), "delivered")

    def emit_task(self, task_id: str) -> Any:
        """``notifications/tasks`` with the task's whole state, now, to every stream listening for it."""
        return self.call("emit", {"event": "tasks", "taskId": task_id}, "delivered")

    # tasks (the Tasks extension)
    def list_tasks(self) -> Any:
        """The newest tasks (``taskId``, ``status``, ``tool``), oldest first."""
        return self.call("listTasks", {}, "tasks")

    def get_task(self, task_id: str) -> Any:
        """The task as ``tasks/get`` shows it (with its result, error or outstanding input requests)."""
        return self.call("getTask", {"taskId": task_id}, "task")

    def set_task(
        self,
        task_id: str,
        status: str,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        input_requests: dict[str, Any] | None = None,
        poll_interval_ms: int | None = None,
        notify: bool = True,
        force: bool = False,
    ) -> Any:
        """Put a task in ``status`` now (it leaves its script); the task as ``tasks/get`` shows it.

        ``completed`` takes a ``result`` (default: no content), ``failed`` an ``error``,
        ``input_required`` its ``input_requests``. A terminal status never changes unless
        ``force`` (a deliberate fault)."""
        params = _clean({
            "taskId": task_id, "status": status, "statusMessage": message, "result": result, "error": error,
            "inputRequests": input_requests, "pollIntervalMs": poll_interval_ms,
        })
        return self.call("setTask", params | {"notify": notify, "force": force}, "task")

    def complete_task(self, task_id: str, result: dict[str, Any] | None = None, *, message: str | None = None) -> Any:
        return self.set_task(task_id, "completed", result=result, message=message)

    def fail_task(self, task_id: str, error: dict[str, Any], *, message: str | None = None) -> Any:
        return self.set_task(task_id, "failed", error=error, message=message)

    def cancel_task(self, task_id: str, *, message: str | None = None) -> Any:
        return self.set_task(task_id, "cancelled", message=message)

    def require_input(self, task_id: str, input_requests: dict[str, Any], *, message: str | None = None) -> Any:
        return self.set_task(task_id, "input_required", input_requests=input_requests, message=message)

    # definitions
    def add(self, kind: str, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.call("add", {"kind": kind, "definition": definition, "notify": notify})

    def replace(self, kind: str, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.call("replace", {"kind": kind, "definition": definition, "notify": notify})

    def remove(self, kind: str, key: str, *, notify: bool = True) -> Any:
        return self.call("remove", {"kind": kind, "key": key, "notify": notify})

    def add_tool(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.add("tool", definition, notify=notify)

    def replace_tool(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.replace("tool", definition, notify=notify)

    def remove_tool(self, name: str, *, notify: bool = True) -> Any:
        return self.remove("tool", name, notify=notify)

    def add_prompt(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.add("prompt", definition, notify=notify)

    def replace_prompt(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.replace("prompt", definition, notify=notify)

    def remove_prompt(self, name: str, *, notify: bool = True) -> Any:
        return self.remove("prompt", name, notify=notify)

    def add_resource(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.add("resource", definition, notify=notify)

    def replace_resource(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.replace("resource", definition, notify=notify)

    def remove_resource(self, uri: str, *, notify: bool = True) -> Any:
        return self.remove("resource", uri, notify=notify)

    def add_template(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.add("template", definition, notify=notify)

    def replace_template(self, definition: dict[str, Any], *, notify: bool = True) -> Any:
        return self.replace("template", definition, notify=notify)

    def remove_template(self, uri_template: str, *, notify: bool = True) -> Any:
        return self.remove("template", uri_template, notify=notify)

    # state and counters
    def get_state(self) -> Any:
        return self.call("getState", {}, "state")

    def set_state(self, state: str) -> Any:
        return self.call("setState", {"state": state}, "previous")

    def counters(self) -> Any:
        return self.call("counters", {})

    # armed replies
    def arm(self, when: dict[str, Any], steps: list[Any], times: int = 1) -> Any:
        """Answer the next ``times`` requests matching ``when`` (``method`` and optionally
        ``name``/``uri`` plus any rule ``when`` key) with ``steps``; the armed reply's id."""
        return self.call("arm", {"when": when, "steps": steps, "times": times}, "id")

    def disarm(self, id: int | None = None) -> Any:
        return self.call("disarm", _clean({"id": id}), "disarmed")

    # stdin
    def pause(self, seconds: float | None = None) -> Any:
        return self.call("pause", _clean({"seconds": seconds}))

    def resume(self) -> Any:
        return self.call("resume", {})

    # traffic
    def position(self) -> Any:
        """The journal position the next MCP message will get (for ``since=``)."""
        return self.call("ping", {}, "position")

    def wait_for(
        self,
        method: str | None = None,
        *,
        name: str | None = None,
        uri: str | None = None,
        timeout: float = 5.0,
        since: int | None = None,
        **when: Any,
    ) -> Any:
        """The first request matching (read from now on, or from position ``since``); raises
        ``WaitTimedOut`` with the closest request after ``timeout`` seconds."""
        spec = _clean({"method": method, "name": name, "uri": uri}) | when
        return self.call("waitFor", _clean({"when": spec, "timeout": timeout, "since": since}), "message")

    # authorization (a scenario with auth, over HTTP)
    def expire_tokens(self, *, client_id: str | None = None, scope: str | None = None, refresh: bool = False) -> Any:
        """Expire now the access tokens (``refresh``: refresh tokens too) of a client, or holding a
        scope, or all: the client meets ``401 invalid_token`` and may refresh. The number expired."""
        return self.call("expireTokens", _clean({"clientId": client_id, "scope": scope}) | {"refresh": refresh}, "expired")

    def revoke_tokens(self, *, client_id: str | None = None, scope: str | None = None, refresh: bool = True) -> Any:
        """Revoke now (refresh tokens too unless ``refresh=False``): the client must authorize again."""
        return self.call("revokeTokens", _clean({"clientId": client_id, "scope": scope}) | {"refresh": refresh}, "revoked")

    def require_scope(self, scopes: list[str], *, method: str | None = None, tool: str | None = None,
                      prompt: str | None = None, resource: str | None = None) -> Any:
        """From now on a method, tool, prompt or resource (none named: every request) needs ``scopes``
        (``403 insufficient_scope``: step-up on demand); every requirement now."""
        return self.call("requireScope", _clean({"scopes": scopes, "method": method, "tool": tool, "prompt": prompt,
                                                 "resource": resource}))

    def pending_authorizations(self) -> Any:
        """The authorization requests waiting for a decision (``decision: wait``), oldest first."""
        return self.call("listAuthorizations", {}, "pending")

    def approve_authorization(self, id: str | None = None, *, scopes: list[str] | None = None) -> Any:
        """Approve one waiting request (every one without ``id``); ``scopes``: grant only these of those
        asked. The ids decided."""
        return self.call("approveAuthorization", _clean({"id": id, "scopes": scopes}), "decided")

    def deny_authorization(self, id: str | None = None, *, description: str | None = None) -> Any:
        """Deny one waiting request (every one without ``id``): ``access_denied`` on its redirect URI."""
        return self.call("denyAuthorization", _clean({"id": id, "description": description}), "decided")

    def set_auth_metadata(self, *, resource: dict[str, Any] | None = None, server: dict[str, Any] | None = None) -> Any:
        """Override fields of the protected resource's (``resource``) or the authorization server's
        (``server``) metadata from now on; a ``None`` value removes the field."""
        return self.call("setAuthMetadata", _clean({"resource": resource, "server": server}))

    def migrate(self) -> Any:
        """Move the resource to the second authorization server now (``auth.server.migration``); its URL."""
        return self.call("migrate", {}, "authorizationServer")

    def auth_state(self) -> Any:
        """Where things are: the MCP URL, the authorization server the resource names, the second origin."""
        return self.call("getState", {}, "auth")

    def shutdown(self, *, crash: bool = False, status: int | None = None) -> Any:
        """End the mock: like the end of stdin, or (``crash``) at once with ``status`` (default 1)."""
        return self.call("shutdown", _clean({"mode": "crash" if crash else "graceful", "status": status}))


class _Client(ControlOperations):
    """The two control clients: every operation, the control channel's ``journal`` too."""

    def journal(self, since: int = 0, limit: int | None = None) -> Any:
        """Journal records from position ``since`` (at most ``limit``): ``{records, next, dropped}``."""
        return self.call("journal", _clean({"since": since, "limit": limit}))


class SyncControl(_Client):
    """Blocking control calls (plain pytest tests, scripts)."""

    def __init__(self, path: str, *, connect_timeout: float = CONNECT_TIMEOUT,
                 answer_timeout: float = ANSWER_TIMEOUT) -> None:
        self.path = path
        self.connect_timeout = connect_timeout
        self.answer_timeout = answer_timeout
        self._ids = itertools.count(1)

    def call(self, op: str, params: dict[str, Any], pick: str | None = None) -> Any:
        data = _request(next(self._ids), op, params)
        return _result(exchange(self.path, data, self.connect_timeout, answer_timeout(params, self.answer_timeout)), pick)


def _unreachable(exc: OSError, path: str) -> OSError:
    """The connect error, naming the path (``connect`` leaves it out)."""
    return type(exc)(exc.errno, exc.strerror, path)


def exchange(path: str, data: bytes, connect_timeout: float = CONNECT_TIMEOUT,
             answer_timeout: float = ANSWER_TIMEOUT) -> bytes:
    """Send one request line over a new connection and read its response line (blocking); a peer
    that says nothing for ``answer_timeout`` seconds raises ``NotAnAnswer``."""
    deadline = time.monotonic() + connect_timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            if time.monotonic() >= deadline:
                raise _unreachable(exc, path) from None
            time.sleep(0.01)
    with sock:
        sock.settimeout(answer_timeout)
        try:
            sock.sendall(data)
            with sock.makefile("rb") as f:
                return f.readline(MAX_ANSWER + 1)
        except TimeoutError:
            raise _silent(path, answer_timeout) from None


class AsyncControl(_Client):
    """Control calls to ``await`` under asyncio or trio (whichever loop is running)."""

    def __init__(self, path: str, *, connect_timeout: float = CONNECT_TIMEOUT,
                 answer_timeout: float = ANSWER_TIMEOUT) -> None:
        self.path = path
        self.connect_timeout = connect_timeout
        self.answer_timeout = answer_timeout
        self._ids = itertools.count(1)

    async def call(self, op: str, params: dict[str, Any], pick: str | None = None) -> Any:
        import asyncio

        data = _request(next(self._ids), op, params)
        seconds = answer_timeout(params, self.answer_timeout)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _result(await self._trio_exchange(data, seconds), pick)
        return _result(await self._asyncio_exchange(data, seconds), pick)

    async def _asyncio_exchange(self, data: bytes, seconds: float) -> bytes:
        import asyncio

        deadline = time.monotonic() + self.connect_timeout
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(self.path, limit=MAX_ANSWER + 1)
                break
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                if time.monotonic() >= deadline:
                    raise _unreachable(exc, self.path) from None
                await asyncio.sleep(0.01)
        try:
            writer.write(data)
            await writer.drain()
            try:
                return await asyncio.wait_for(reader.readline(), seconds)
            except ValueError:  # past the reader's limit
                raise NotAnAnswer(f"the control socket's answer is longer than {MAX_ANSWER} bytes") from None
            except TimeoutError:
                raise _silent(self.path, seconds) from None
        finally:
            writer.close()

    async def _trio_exchange(self, data: bytes, seconds: float) -> bytes:
        import trio

        deadline = time.monotonic() + self.connect_timeout
        while True:
            try:
                stream = await trio.open_unix_socket(self.path)
                break
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                if time.monotonic() >= deadline:
                    raise _unreachable(exc, self.path) from None
                await trio.sleep(0.01)
        async with stream:
            buf = bytearray()
            with trio.move_on_after(seconds) as waited:
                await stream.send_all(data)
                while len(buf) <= MAX_ANSWER:
                    chunk = await stream.receive_some(65536)
                    if not chunk:
                        break
                    end = chunk.find(b"\n")  # (in the new chunk only: a search of the whole buffer is quadratic)
                    buf += chunk if end < 0 else chunk[:end + 1]
                    if end >= 0:
                        break
            if waited.cancelled_caught:
                raise _silent(self.path, seconds)
            return bytes(buf)
