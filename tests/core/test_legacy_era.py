"""The legacy era, complete: server-to-client requests, logging/setLevel,
resources/subscribe, list-changed notifications, -32042 and its retry.

Every test drives the real process over pipes, a line at a time, as a
2025-11-25 client would: initialize, then requests, answering the server's own
requests when they come. The bundled everything-legacy scenario is the subject.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from support.paths import SCENARIOS
from support.legacyclient import CAPS, Legacy
from support.fakelink import close_links  # noqa: F401  (autouse: no link outlives its test)

EVERYTHING = SCENARIOS / "everything-legacy.yaml"


def text(msg: dict[str, Any]) -> str:
    return msg["result"]["content"][0]["text"]  # type: ignore[no-any-return]


def test_server_requests_are_sent_with_own_ids_and_their_answers_used(tmp_path):
    report = tmp_path / "report.json"
    c = Legacy(EVERYTHING, "--report", str(report))
    c.tool(1, "trigger-sampling-request", prompt="hi")
    req = c.read()
    assert req["method"] == "sampling/createMessage" and req["id"] == "mockmcp-1"
    assert req["params"]["messages"][0]["content"]["text"].endswith("hi") and req["params"]["maxTokens"] == 100
    c.send({"jsonrpc": "2.0", "id": req["id"], "result": {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"}})
    (done,) = c.until(1)
    assert text(done).startswith("LLM sampling result: ") and '"text":"42"' in text(done)
    c.tool(2, "get-roots-list")
    req = c.read()
    assert req["method"] == "roots/list" and req["id"] == "mockmcp-2"
    c.send({"jsonrpc": "2.0", "id": req["id"], "result": {"roots": [{"uri": "file:///work", "name": "work"}]}})
    assert text(c.until(2)[-1]) == 'Current MCP Roots: [{"uri":"file:///work","name":"work"}]'
    c.tool(3, "trigger-elicitation-request")
    req = c.read()
    assert req["method"] == "elicitation/create" and req["params"]["requestedSchema"]["required"] == ["name"]
    c.send({"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "user closed the dialog"}})
    assert "user closed the dialog" in text(c.until(3)[-1])
    c.close()
    # the answers are what a legacy client should send: no jsonrpc.response finding
    assert json.loads(report.read_text())["findings"] == []


def test_a_missing_answer_times_out_and_the_server_cancels_its_request(tmp_path):
    path = tmp_path / "ask.yaml"
    path.write_text(EVERYTHING.read_text().replace("request: {method: roots/list, timeout: 5s}", "request: {method: roots/list, timeout: 300ms}"))
    c = Legacy(path)
    started = time.monotonic()
    c.tool(1, "get-roots-list")
    assert c.read()["method"] == "roots/list"
    cancel, done = c.until(1)
    assert cancel == {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "mockmcp-1", "reason": "timed out"}}
    assert text(done) == "Current MCP Roots: none (the client did not answer)"
    assert time.monotonic() - started >= 0.3
    # a late answer is ignored (nothing waits for it)
    c.send({"jsonrpc": "2.0", "id": "mockmcp-1", "result": {"roots": []}})
    assert c.call(2, "ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}
    c.close()


def test_requests_are_gated_on_the_capabilities_initialize_declared():
    c = Legacy(EVERYTHING, capabilities={"roots": {}})
    c.tool(1, "trigger-sampling-request", prompt="hi")
    (resp,) = c.until(1)  # nothing was sent to the client first
    assert resp["error"]["code"] == -32600 and resp["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    c.tool(2, "get-roots-list")
    assert c.read()["method"] == "roots/list"
    c.close()
    # elicitation: {} declares form mode only: a URL-mode request needs elicitation.url
    c = Legacy(EVERYTHING, capabilities={"elicitation": {}})
    c.tool(1, "trigger-url-elicitation")
    (resp,) = c.until(1)
    assert resp["error"]["code"] == -32600 and resp["error"]["data"] == {"requiredCapabilities": {"elicitation": {"url": {}}}}
    c.tool(2, "trigger-elicitation-request")
    assert c.read()["params"]["mode"] == "form"
    c.close()


def test_log_steps_follow_logging_set_level():
    c = Legacy(EVERYTHING)
    c.tool(1, "toggle-simulated-logging")
    assert [m.get("method") for m in c.until(1)] == [None]  # before setLevel: no notifications/message
    assert c.call(2, "logging/setLevel", {"level": "critical"}) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    c.tool(3, "toggle-simulated-logging")
    got = c.until(3)
    assert [m["params"]["level"] for m in got[:-1]] == ["critical", "alert", "emergency"]
    assert c.call(4, "logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    c.close()


def test_resource_updates_reach_subscribed_uris_only_and_list_changes_always():
    c = Legacy(EVERYTHING)
    assert c.call(1, "resources/subscribe", {"uri": "demo://resource/dynamic/text/2"})["result"] == {}
    c.tool(2, "toggle-subscriber-updates")
    updates = [m for m in c.until(2) if m.get("method") == "notifications/resources/updated"]
    assert [m["params"] for m in updates] == [{"uri": "demo://resource/dynamic/text/2"}] * 3
    assert c.call(3, "resources/unsubscribe", {"uri": "demo://resource/dynamic/text/2"})["result"] == {}
    c.tool(4, "toggle-subscriber-updates")
    assert [m.get("method") for m in c.until(4)] == [None]
    c.tool(5, "trigger-list-changed")
    assert [m.get("method") for m in c.until(5)] == [
        "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed", None,
    ]
    c.close()


def test_url_elicitation_required_then_the_retry_proceeds():
    c = Legacy(EVERYTHING)
    c.tool(1, "trigger-url-elicitation", errorPath=True)
    (err,) = c.until(1)
    assert err["error"]["code"] == -32042
    (elicitation,) = err["error"]["data"]["elicitations"]
    assert elicitation["mode"] == "url" and elicitation["url"] == "https://modelcontextprotocol.io" and elicitation["elicitationId"]
    c.tool(2, "trigger-url-elicitation", errorPath=True)  # the retry, once the user visited the page
    req = c.read()
    assert req["method"] == "elicitation/create" and req["params"]["mode"] == "url"
    c.send({"jsonrpc": "2.0", "id": req["id"], "result": {"action": "accept"}})
    assert text(c.until(2)[-1]) == "URL elicitation (after the retry): accept"
    c.close()


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_check_keeps_request_steps_to_the_legacy_era(tmp_path, era):
    from mockmcp.scenario.loader import load_text
    from mockmcp.scenario.problems import LoadError

    text_ = f"mockmcp: 1\nprotocol: {{era: {era}}}\ntools: [{{name: t, replies: [{{steps: [{{request: {{method: ping}}}}, {{text: ok}}]}}]}}]\n"
    if era == "legacy":
        load_text(text_, "t.yaml")
    else:
        with pytest.raises(LoadError, match="only in the legacy era"):
            load_text(text_, "t.yaml")


def test_a_dual_scenario_refuses_a_request_step_in_a_modern_request(tmp_path):
    from support.messages import line, request
    from support.process import run_mock

    path = tmp_path / "dual.yaml"
    path.write_text("mockmcp: 1\nprotocol: {era: dual}\ntools: [{name: t, replies: [{steps: [{request: {method: ping}}, {text: ok}]}]}]\n")
    proc = run_mock("run", str(path), input=line(request(1, "tools/call", {"name": "t"})))
    (resp,) = map(json.loads, proc.stdout.splitlines())
    assert resp["error"]["code"] == -32600 and "legacy-era" in resp["error"]["message"]


def _legacy_link(text: str):
    from support.fakelink import FakeLink
    from support.engines import engine_for

    link = FakeLink(engine_for(text))
    link.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": CAPS, "clientInfo": {"name": "t", "version": "1"}}})
    return link


ASKING = """
mockmcp: 1
protocol: {era: legacy}
tools:
  - name: ask
    replies:
      - steps:
          - request: {method: roots/list, timeout: 5s}
          - text: "{{ default(responses.roots.result.roots, 'no roots') }}"
"""


def test_on_the_mock_clock_the_timeout_is_the_scripted_one():
    link = _legacy_link(ASKING)
    start = link.timeline[-1][0]
    out = link.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}})
    assert [m.get("method") for m in out] == ["roots/list", "notifications/cancelled", None]
    assert out[-1]["result"]["content"][0]["text"] == "no roots"
    times = [at for at, _ in link.timeline[-3:]]
    assert times[0] == pytest.approx(start) and times[1] == pytest.approx(start + 5.0)
    assert link.engine.session.legacy.pending == {}
    link.close()


def test_a_request_cancelled_while_the_server_waits_is_forgotten():
    link = _legacy_link(ASKING)
    out = link.send(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask"}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
    )
    # cancelled in the same read as the call: its task stops before it writes the request
    assert out == []
    assert link.engine.session.legacy.pending == {}  # the core forgot the request it had planned
    # a late answer to the forgotten request is routed nowhere, and the session goes on
    assert link.send({"jsonrpc": "2.0", "id": "mockmcp-1", "result": {"roots": []}}) == []
    assert link.send({"jsonrpc": "2.0", "id": 2, "method": "ping"}) == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    link.close()
