"""Unit tests of the client checks (sans-I/O: ClientChecker fed messages directly)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mockmcp.verify.checks import CHECKS, ClientChecker, Finding

from support.messages import META, request

STATE = "opaque-state-1"


def send(checker: ClientChecker, msg: dict[str, Any]) -> list[str]:
    """Feed one client message as the verifier would; return the check ids found."""
    if "method" not in msg:
        found = checker.response(msg)
    elif "id" in msg:
        found = checker.request(msg["id"], msg["method"], msg.get("params", {}), msg)
    else:
        found = checker.notification(msg["method"], msg.get("params", {}), msg)
    return [f.check for f in found]


def answer(checker: ClientChecker, rid: Any, result: dict[str, Any] | None = None) -> None:
    checker.server_message({"jsonrpc": "2.0", "id": rid, "result": result or {"resultType": "complete", "content": []}})


def input_required(checker: ClientChecker, rid: Any, *, state: str | None = STATE, asked: tuple[str, ...] = ("name",)) -> None:
    result: dict[str, Any] = {"resultType": "input_required"}
    if asked:
        result["inputRequests"] = {k: {"method": "elicitation/create", "params": {}} for k in asked}
    if state is not None:
        result["requestState"] = state
    answer(checker, rid, result)


def call(rid: Any, name: str = "greet", args: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    msg = request(rid, "tools/call", {"name": name, "arguments": args or {}})
    msg["params"].update(extra)
    return msg


@pytest.fixture
def checker() -> ClientChecker:
    return ClientChecker(modern_only=True)


def test_a_well_behaved_exchange_has_no_findings(checker: ClientChecker) -> None:
    assert send(checker, request(1, "server/discover")) == []
    answer(checker, 1)
    assert send(checker, call(2)) == []
    input_required(checker, 2)
    assert send(checker, call(3, inputResponses={"name": {"action": "accept"}}, requestState=STATE)) == []
    answer(checker, 3)
    assert send(checker, request(4, "tools/list", meta={"progressToken": 4})) == []
    assert send(checker, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}) == []
    assert checker.in_flight == {} and checker.rounds == []


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({"io.modelcontextprotocol/protocolVersion": None}, ["meta.protocolVersion.missing"]),
        ({"io.modelcontextprotocol/protocolVersion": 20260728}, ["meta.protocolVersion.type"]),
        ({"io.modelcontextprotocol/clientCapabilities": None}, ["meta.clientCapabilities.missing"]),
        ({"io.modelcontextprotocol/clientCapabilities": []}, ["meta.clientCapabilities.type"]),
        ({"io.modelcontextprotocol/clientInfo": None}, ["meta.clientInfo.missing"]),
        ({"io.modelcontextprotocol/clientInfo": {"name": "x"}}, ["meta.clientInfo.type"]),
        ({"io.modelcontextprotocol/logLevel": "loud"}, ["meta.logLevel.type"]),
        ({"progressToken": 1.5}, ["meta.progressToken.type"]),
        ({"progressToken": "tok", "io.modelcontextprotocol/logLevel": "debug", "traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}, []),
    ],
)
def test_meta_keys_present_and_well_typed(checker: ClientChecker, meta: dict[str, Any], expected: list[str]) -> None:
    msg = request(1, "tools/list")
    for k, v in meta.items():
        if v is None:
            del msg["params"]["_meta"][k]
        else:
            msg["params"]["_meta"][k] = v
    assert send(checker, msg) == expected


def test_levels_of_meta_findings() -> None:
    assert CHECKS["meta.clientInfo.missing"][0] == "warning"  # a SHOULD
    assert CHECKS["meta.protocolVersion.missing"][0] == "error"
    assert CHECKS["cancel.unknown"][0] == "note"


def test_request_without_meta(checker: ClientChecker) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    found = checker.request(1, "tools/list", {}, msg)
    assert [f.check for f in found] == ["meta.missing"]
    f = found[0].to_json()
    assert f["level"] == "error" and f["message"] == msg and f["id"] == 1
    assert f["spec"].startswith("https://modelcontextprotocol.io/specification/2026-07-28/basic#")


def test_null_and_badly_typed_ids(checker: ClientChecker) -> None:
    null = json.dumps({"jsonrpc": "2.0", "id": None, "method": "tools/list"}).encode()
    assert [f.check for f in checker.invalid_line(null, "bad id")] == ["id.null"]
    floaty = json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}).encode()
    assert [f.check for f in checker.invalid_line(floaty, "bad id")] == ["id.type"]
    assert [f.check for f in checker.invalid_line(b"{not json", "Parse error")] == ["jsonrpc.parse"]
    assert [f.check for f in checker.invalid_line(b"[1,2]", "batch")] == ["jsonrpc.invalid"]
    assert [f.check for f in checker.oversized(10_000_000)] == ["jsonrpc.invalid"]


def test_id_reused_only_while_in_flight(checker: ClientChecker) -> None:
    assert send(checker, request(7, "tools/list")) == []
    assert send(checker, request(7, "prompts/list")) == ["id.reused"]
    answer(checker, 7)
    answer(checker, 7)  # both requests answered
    assert send(checker, request(7, "tools/list")) == []  # the id is free again


def test_client_response_is_a_finding(checker: ClientChecker) -> None:
    assert send(checker, {"jsonrpc": "2.0", "id": 3, "result": {}}) == ["jsonrpc.response"]
    assert send(checker, {"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "x"}}) == ["jsonrpc.response"]


def test_retry_must_use_a_new_id(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1)
    assert send(checker, call(1, inputResponses={"name": {}}, requestState=STATE)) == ["mrtr.retry.sameId"]


def test_retry_must_echo_request_state_exactly(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1)
    assert send(checker, call(2, inputResponses={"name": {}}, requestState=STATE + " ")) == ["mrtr.requestState.altered"]


def test_retry_must_not_drop_request_state(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1)
    assert send(checker, call(2, inputResponses={"name": {}})) == ["mrtr.requestState.dropped"]


def test_no_request_state_when_none_was_given(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1, state=None)
    assert send(checker, call(2, inputResponses={"name": {}}, requestState="made-up")) == ["mrtr.requestState.unexpected"]


def test_retry_must_answer_every_key(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1, asked=("name", "age"))
    assert send(checker, call(2, inputResponses={"name": {}}, requestState=STATE)) == ["mrtr.inputResponses.missing"]


def test_state_only_round_needs_no_answers(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1, asked=())
    assert send(checker, call(2, requestState=STATE)) == []


def test_input_responses_on_a_parallel_call_leak(checker: ClientChecker) -> None:
    send(checker, call(1, "greet"))
    input_required(checker, 1)
    found = send(checker, call(2, "other", inputResponses={"name": {}}))
    assert found == ["mrtr.leak"]
    # the real retry still matches its round afterwards
    assert send(checker, call(3, "greet", inputResponses={"name": {}}, requestState=STATE)) == []


def test_same_tool_other_arguments_is_a_parallel_call(checker: ClientChecker) -> None:
    send(checker, call(1, "greet", {"who": "a"}))
    input_required(checker, 1)
    assert send(checker, call(2, "greet", {"who": "b"}, inputResponses={"name": {}})) == ["mrtr.leak"]


def test_input_responses_without_any_round(checker: ClientChecker) -> None:
    assert send(checker, call(1, inputResponses={"x": {}})) == ["mrtr.leak"]


def test_a_fresh_call_after_input_required_is_fine(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1)
    assert send(checker, call(2)) == []  # the client may start over rather than retry


def test_progress_token_unique_among_active_requests(checker: ClientChecker) -> None:
    assert send(checker, request(1, "tools/list", meta={"progressToken": "p"})) == []
    assert send(checker, request(2, "prompts/list", meta={"progressToken": "p"})) == ["progressToken.reused"]
    answer(checker, 1)
    answer(checker, 2)
    assert send(checker, request(3, "tools/list", meta={"progressToken": "p"})) == []
    assert send(checker, request(4, "tools/list", meta={"progressToken": 1})) == []  # 1 and "p" differ


def test_cancelled_names_a_request_in_flight(checker: ClientChecker) -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    found = checker.notification("notifications/cancelled", cancel["params"], cancel)
    assert [(f.check, f.level) for f in found] == [("cancel.unknown", "note")]
    send(checker, request(9, "tools/list"))
    assert send(checker, cancel) == []
    assert send(checker, cancel) == ["cancel.unknown"]  # the first ended it


@pytest.mark.parametrize(
    ("msg", "check"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}, "removed.initialize"),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, "removed.initialized"),
        (request(1, "ping"), "removed.ping"),
        (request(1, "logging/setLevel", {"level": "info"}), "removed.logging.setLevel"),
        (request(1, "resources/subscribe", {"uri": "file:///a"}), "removed.resources.subscribe"),
        (request(1, "resources/unsubscribe", {"uri": "file:///a"}), "removed.resources.subscribe"),
    ],
)
def test_removed_methods(msg: dict[str, Any], check: str) -> None:
    assert send(ClientChecker(modern_only=True), msg) == [check]


INIT = {
    "jsonrpc": "2.0", "id": 9, "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
}


@pytest.mark.parametrize(
    ("answer_to_probe", "expected"),
    [
        ({"result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}}, ["removed.initialize"]),
        ({"error": {"code": -32022, "message": "Unsupported", "data": {"supported": ["2026-07-28"], "requested": "x"}}}, ["removed.initialize"]),
        ({"error": {"code": -32601, "message": "Method not found"}}, []),  # a legacy-looking answer: fall back
        ({"error": {"code": -32602, "message": "Invalid params"}}, []),
        (None, []),  # no answer (yet): a timeout fallback is allowed
    ],
)
def test_initialize_is_a_fallback_only_after_a_failed_probe(answer_to_probe: dict[str, Any] | None, expected: list[str]) -> None:
    checker = ClientChecker(modern_only=True)
    send(checker, request(1, "server/discover"))
    if answer_to_probe is not None:
        checker.server_message({"jsonrpc": "2.0", "id": 1, **answer_to_probe})
    assert send(checker, INIT) == expected


def test_initialize_without_a_probe_says_so() -> None:
    (f,) = ClientChecker().request(9, "initialize", INIT["params"], INIT)
    assert f.check == "removed.initialize" and "without a server/discover probe" in f.text


def test_a_removed_method_is_one_finding_even_without_meta() -> None:
    assert send(ClientChecker(), {"jsonrpc": "2.0", "id": 1, "method": "ping"}) == ["removed.ping"]


def test_removed_methods_are_fine_on_a_dual_era_server() -> None:
    checker = ClientChecker(modern_only=False)
    assert send(checker, {**INIT, "id": 1}) == []
    assert send(checker, {"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    assert send(checker, {"jsonrpc": "2.0", "id": 2, "method": "ping"}) == []  # legacy session: no _meta needed


def test_every_check_is_documented() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "verification.md").read_text()
    for check, (level, _, _) in CHECKS.items():
        assert f"`{check}`" in doc, f"{check} is not listed in docs/verification.md"


def test_finding_json_shape() -> None:
    f = Finding("id.reused", "text", {"id": 1}, 1, {"extra": True}).to_json()
    assert f == {
        "check": "id.reused",
        "level": "error",
        "spec": "https://modelcontextprotocol.io/specification/2026-07-28/basic#requests",
        "text": "text",
        "id": 1,
        "message": {"id": 1},
        "extra": True,
    }
    assert META  # the shared request helper carries all three _meta keys


def test_altered_state_says_where_it_differs(checker: ClientChecker) -> None:
    send(checker, call(1))
    input_required(checker, 1, state="x" * 60 + "TAIL")
    (f,) = checker.request(2, "tools/call", call(2, inputResponses={"name": {}}, requestState="x" * 60 + "TAIl")["params"], {})
    assert f.check == "mrtr.requestState.altered"
    assert "first difference at character 63" in f.text and "'xxxxxTAIl'" in f.text


def test_a_reused_id_stays_in_flight_until_both_answers(checker: ClientChecker) -> None:
    send(checker, request(1, "tools/call", {"name": "slow"}))
    assert send(checker, request(1, "tools/list")) == ["id.reused"]
    checker.server_message({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600, "message": "in use"}})
    assert send(checker, request(1, "prompts/list")) == ["id.reused"]  # the slow call is still running
    for _ in range(2):
        answer(checker, 1)
    assert send(checker, request(1, "tools/list")) == []


def test_a_subscription_the_server_ended_frees_its_id(checker: ClientChecker) -> None:
    send(checker, request(5, "subscriptions/listen", {"notifications": {"toolsListChanged": True}}))
    assert send(checker, request(5, "tools/list")) == ["id.reused"]
    checker.server_message({"jsonrpc": "2.0", "id": 5, "error": {"code": -32600, "message": "in use"}})
    checker.server_message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}})
    assert send(checker, request(5, "tools/list")) == []
