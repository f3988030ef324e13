"""``mockmcp run --http 0 --control PATH``: the control channel drives the HTTP shell.

One real process with both channels: the MCP side over raw HTTP (POSTs, a live
``subscriptions/listen`` SSE stream), the control side through ``SyncControl``. Every
operation that has an effect on the transport is checked on the wire: emitted events
reach the listen stream, added and removed tools show in ``tools/list`` (with their
``x-mcp-header`` rules) and announce themselves, armed replies and HTTP faults hit the
next request, ``waitFor`` and ``journal`` see HTTP traffic, pause holds new requests
until resume, and both kinds of shutdown end the process.
"""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

from support.httpmock import HttpClient, HttpMock, read_events, sse_data
from mockmcp.controlclient import SyncControl
from support.process import mockmcp_prefix

SCENARIO = """\
mockmcp: 1
server: {name: http-control, version: 1.0.0}
tools:
  - name: greet
    replies:
      - steps: [{text: "hello {{ arguments.who }}"}]
resources:
  - {uri: "file:///a.txt", name: a, text: A}
"""

HDR_TOOL = {
    "name": "regional",
    "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}},
    "replies": [{"steps": [{"text": "in {{ arguments.region }}"}]}],
}


def _events(resp: Any) -> Iterator[dict[str, Any]]:
    for block in read_events(resp, 1000, timeout=10):
        for data in sse_data(block + b"\n\n"):
            yield json.loads(data)


def _start(tmp_path: Path) -> tuple[HttpMock, SyncControl]:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    mock = HttpMock(scenario, "--control", str(tmp_path / "c.sock"), "--sse-keepalive", "0")
    return mock, SyncControl(str(tmp_path / "c.sock"))  # bound before the URL line: usable at once


def _text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


def test_the_control_channel_drives_the_http_shell(tmp_path: Path) -> None:
    mock, ctl = _start(tmp_path)
    with mock, concurrent.futures.ThreadPoolExecutor(3) as pool:
        client = HttpClient(mock, caps={})
        listen = client.message("subscriptions/listen", {"notifications": {
            "toolsListChanged": True, "resourceSubscriptions": ["file:///a.txt"]}})
        listen["params"]["_meta"]["io.modelcontextprotocol/logLevel"] = "info"
        sid = listen["id"]
        conn, resp = mock.stream(listen)
        events = _events(resp)
        assert next(events)["method"] == "notifications/subscriptions/acknowledged"

        # emit: events and log messages reach the SSE listen stream
        assert ctl.emit_resource_updated("file:///a.txt") == 1
        note = next(events)
        assert note["method"] == "notifications/resources/updated" and note["params"]["uri"] == "file:///a.txt"
        assert note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == sid
        ctl.emit_log("warning", {"disk": "low"})
        log = next(events)
        assert log["method"] == "notifications/message" and log["params"]["data"] == {"disk": "low"}

        # add a tool: announced on the stream, listed, its x-mcp-header checked over HTTP
        ctl.add_tool(HDR_TOOL)
        assert next(events)["method"] == "notifications/tools/list_changed"
        assert "regional" in [t["name"] for t in client.ask("tools/list")["result"]["tools"]]
        call = client.message("tools/call", {"name": "regional", "arguments": {"region": "eu"}})
        missing = mock.post(call)
        assert missing.status == 400 and missing.json()["error"]["code"] == -32020, missing
        call = client.message("tools/call", {"name": "regional", "arguments": {"region": "eu"}})
        assert _text(mock.post(call, {"Mcp-Param-Region": "eu"}).json()) == "in eu"
        ctl.remove_tool("regional")
        assert next(events)["method"] == "notifications/tools/list_changed"
        assert [t["name"] for t in client.ask("tools/list")["result"]["tools"]] == ["greet"]

        # arm: the next matching request gets the armed reply (an HTTP fault too), then the scenario's
        ctl.arm({"method": "tools/call", "name": "greet"}, [{"error": {"code": -32603, "message": "armed"}}])
        assert client.call("greet", who="a")["error"]["message"] == "armed"
        assert _text(client.call("greet", who="b")) == "hello b"
        ctl.arm({"method": "tools/call", "name": "greet"}, [{"http": {"status": 503, "headers": {"Retry-After": "1"}, "body": "busy"}}, {"text": "not sent"}])
        r = mock.post(client.message("tools/call", {"name": "greet", "arguments": {"who": "c"}}))
        assert r.status == 503 and r.headers["retry-after"] == "1" and r.body == b"busy"
        armed = ctl.arm({"method": "tools/call", "name": "greet"}, [{"text": "never"}])
        assert ctl.disarm(armed) == 1
        assert _text(client.call("greet", who="d")) == "hello d"

        # counters count HTTP requests like stdio lines
        before = ctl.counters()["requests"]
        assert _text(client.call("greet", who="counted")) == "hello counted"
        assert ctl.counters()["requests"] == before + 1

        # waitFor sees an HTTP request as it arrives; journal has both directions
        since = ctl.position()
        waiting = pool.submit(ctl.wait_for, "tools/call", name="greet", timeout=10)
        time.sleep(0.2)
        assert not waiting.done()
        assert _text(client.call("greet", who="e")) == "hello e"
        assert waiting.result(10)["params"]["arguments"] == {"who": "e"}
        records = ctl.journal(since=since)["records"]
        assert [r["dir"] for r in records] == ["in", "out"]
        assert records[0]["message"]["params"]["name"] == "greet" and "hello e" in json.dumps(records[1]["message"])

        # pause: no new HTTP request is read until resume, on a new connection or a kept-alive one
        # that was already waiting for its next request (the listen stream stays live)
        kept = mock.connection()
        first = client.message("tools/call", {"name": "greet", "arguments": {"who": "kept"}})
        assert _text(mock.post(first, conn=kept).json()) == "hello kept"
        ctl.pause()
        pending = pool.submit(client.call, "greet", who="f")
        again = client.message("tools/call", {"name": "greet", "arguments": {"who": "g"}})
        pending_kept = pool.submit(mock.post, again, conn=kept)
        time.sleep(0.5)
        assert not pending.done() and not pending_kept.done()
        ctl.emit_resource_updated("file:///a.txt")
        assert next(events)["method"] == "notifications/resources/updated"
        ctl.resume()
        assert _text(pending.result(10)) == "hello f"
        assert _text(pending_kept.result(10).json()) == "hello g"
        kept.close()

        # graceful shutdown: the process ends as at stdin's EOF
        ctl.shutdown()
        assert mock.proc.wait(10) == 0
        conn.close()
    assert not (tmp_path / "c.sock").exists()


def test_a_graceful_shutdown_ends_an_http_mock_that_ignores_eof(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO + "protocol: {ignoreEof: true}\n")
    with HttpMock(scenario, "--control", str(tmp_path / "c.sock")) as mock:
        ctl = SyncControl(str(tmp_path / "c.sock"))
        mock.proc.stdin.close()  # type: ignore[union-attr]
        time.sleep(0.5)
        assert mock.proc.poll() is None  # EOF ignored, as scripted
        assert _text(HttpClient(mock, caps={}).call("greet", who="still")) == "hello still"
        ctl.shutdown()
        assert mock.proc.wait(10) == 0


def test_a_control_crash_ends_the_http_process(tmp_path: Path) -> None:
    mock, ctl = _start(tmp_path)
    with mock:
        assert _text(HttpClient(mock, caps={}).call("greet", who="x")) == "hello x"
        ctl.shutdown(crash=True, status=3)
        assert mock.proc.wait(10) == 3


def test_an_unusable_control_path_is_refused_before_the_url(tmp_path: Path) -> None:
    (tmp_path / "c.sock").write_text("not a socket")
    proc = subprocess.run([*mockmcp_prefix(), "run", "default", "--http", "0", "--control", str(tmp_path / "c.sock")],
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert proc.returncode == 2 and proc.stdout == b"" and b"not a socket" in proc.stderr

