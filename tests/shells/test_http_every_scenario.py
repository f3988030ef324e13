"""``--http`` serves every bundled scenario: each one through the real process with a raw HTTP client.

For each scenario in ``scenarios/`` (new ones are picked up): spawn ``mockmcp run NAME --http 0``,
read the URL, say hello the scenario's way (``server/discover``, or ``initialize`` for a legacy
one), list tools, prompts and resources, then call every tool, get every prompt and read every
resource with example arguments. Every request gets an HTTP answer (any status: faults are
scripted), or a scripted hang or drop; a scripted exit is followed by a restart. Nothing may
crash: no process ever prints a traceback. The official clients run their generic session over
HTTP in tests/interop/test_interop_matrix.py (every scenario with the TypeScript client in the
default run); that checks the mock's verdict on the client, and a client gives up where this
goes on. What only this test asserts is why it stays beside it: the raw requests an SDK never
sends (lists a scenario does not declare, the Tasks extension's capability, a legacy scenario
reached with ``initialize``), no traceback on any process's stderr, and a process still serving
after all of it (or restarted after a scripted exit). Its cost is one spawn per scenario, which
neither test can share with the other (each drives its own process).
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from support.httpmock import HttpMock, mcp_headers, msg
from mockmcp.scenario import loader

sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))
from python_driver import example_from_schema  # noqa: E402  (a sibling script)

CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}}}
TIMEOUT = 0.4  # seconds a request may take before it counts as a (scripted) hang (or a slow machine)


class _Session:
    """One scenario's process (restarted after a scripted exit) and the outcomes seen."""

    def __init__(self, name: str, legacy: bool, logs: Path) -> None:
        self.name, self.legacy, self.logs = name, legacy, logs
        self.mock: HttpMock | None = None
        self.ids = 0
        self.stderr: list[str] = []
        self.outcomes: list[str] = []

    def start(self) -> HttpMock:
        self.log = (self.logs / f"{self.name}-{len(self.stderr)}.log").open("wb")  # (stderr_flood fills a pipe)
        self.mock = HttpMock(self.name, "--time-scale", "0.01", "--sse-keepalive", "0", "--log-level", "warning",
                             stderr=self.log)
        if self.legacy:
            self.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": CAPS,
                                     "clientInfo": {"name": "every-scenario", "version": "1"}})
            self.post("notifications/initialized", None)
        return self.mock

    def post(self, method: str, params: dict[str, Any] | None, timeout: float = TIMEOUT) -> str:
        mock = self.mock or self.start()
        if params is None:  # a notification
            message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        else:
            self.ids += 1
            message = msg(self.ids, method, params, {"io.modelcontextprotocol/clientCapabilities": CAPS})
            if self.legacy:
                message["params"] = dict(params)
        headers = mcp_headers(message) if not self.legacy and "id" in message else {
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        conn = mock.connection(timeout=timeout)
        try:
            body = json.dumps(message).encode()
            conn.request("POST", "/mcp", body, headers)
            resp = conn.getresponse()
            resp.read()
            outcome = f"{resp.status}"
        except TimeoutError:
            outcome = "hang"
        except (http.client.HTTPException, OSError) as exc:
            outcome = f"dropped ({type(exc).__name__})"
        finally:
            conn.close()
        if mock.proc.poll() is not None or (outcome.startswith("dropped") and _exited(mock)):
            outcome += f", exited {mock.proc.returncode}"
            self.stop()
        self.outcomes.append(f"{method} {outcome}")
        return outcome

    def stop(self) -> None:
        if self.mock is None:
            return
        mock, self.mock = self.mock, None
        if mock.proc.poll() is None:
            mock.stop()
        mock.__exit__()
        self.log.close()
        self.stderr.append(Path(self.log.name).read_text(errors="replace"))


def _exited(mock: HttpMock) -> bool:
    try:
        mock.proc.wait(0.5)
    except Exception:  # still running (subprocess.TimeoutExpired)
        return False
    return True


def _args(schema: Any) -> dict[str, Any]:
    value = example_from_schema(schema or {"type": "object"})
    return value if isinstance(value, dict) else {}


def _serve(name: str, logs: Path) -> _Session:
    scenario, _ = loader.load(name, use_cache=False)
    session = _Session(name, scenario.protocol.era == "legacy", logs)
    try:
        hello = "ping" if session.legacy else "server/discover"
        session.post(hello, {})
        for method in ("tools/list", "prompts/list", "resources/list"):
            session.post(method, {})
        for tool in scenario.tools:
            session.post("tools/call", {"name": tool.name, "arguments": _args(tool.inputSchema)})
        for prompt in scenario.prompts:
            session.post("prompts/get", {"name": prompt.name, "arguments": {a.name: "example" for a in prompt.arguments or []}})
        for resource in scenario.resources:
            session.post("resources/read", {"uri": resource.uri})
        session.post(hello, {}, timeout=20)  # still serving at the end
    finally:
        session.stop()
    return session


@pytest.mark.slow
def test_http_serves_every_bundled_scenario(tmp_path: Path) -> None:
    """Every bundled scenario but the ``auth-*`` ones: without a token a generic session meets
    only their 401 (the same gate as ``auth``, served here), and tests/shells/test_auth_scenarios.py
    serves each of them over HTTP to an OAuth client, to its last call."""
    names = [n for n in loader.bundled_names() if not n.startswith("auth-")]
    assert len(names) >= 40 and "auth" in names
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        sessions = list(pool.map(_serve, names, [tmp_path] * len(names)))
    problems = []
    for s in sessions:
        for err in s.stderr:
            if "Traceback" in err:
                problems.append(f"{s.name}: a traceback on stderr:\n{err[-3000:]}")
        answered = [o for o in s.outcomes if o.split()[1].isdigit()]
        if len(answered) < 4:  # the hello, the lists and the last hello at least
            problems.append(f"{s.name}: too few HTTP answers: {s.outcomes}")
        if not s.outcomes[-1].split()[1].isdigit():
            problems.append(f"{s.name}: the last request was not answered: {s.outcomes[-1]}")
    assert not problems, "\n".join(problems)
