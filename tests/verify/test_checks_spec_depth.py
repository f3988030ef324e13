"""Client checks of the spec's finer points: reserved _meta prefixes, W3C trace context
formats, sub-capability shapes, legacy initialize params.

Unit tests feed ClientChecker directly; the last test runs the real process with
--report and a client that breaks all four.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.messages import META, line, request
from support.process import run_mock

from mockmcp.verify.checks import CHECKS, ClientChecker
from mockmcp.wire.tracecontext import baggage_problem, traceparent_problem, tracestate_problem


def found(meta_extra: dict[str, Any] | None = None, caps: Any = None) -> list[str]:
    meta = {**META, **(meta_extra or {})}
    if caps is not None:
        meta["io.modelcontextprotocol/clientCapabilities"] = caps
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    return [f.check for f in ClientChecker().request(1, "tools/list", msg["params"], msg)]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("io.modelcontextprotocol/custom", ["meta.reserved"]),
        ("dev.mcp/x", ["meta.reserved"]),
        ("org.modelcontextprotocol.api/x", ["meta.reserved"]),
        ("com.mcp.tools/x", ["meta.reserved"]),
        ("com.example.mcp/x", []),  # the second label is example: not reserved
        ("mcp/x", []),  # one label: no second label
        ("com.example/x", []),
        ("io.modelcontextprotocol/logLevel", []),  # defined (and a valid level below)
    ],
)
def test_reserved_prefixes(key: str, expected: list[str]) -> None:
    value = "info" if key.endswith("logLevel") else 1
    assert found({key: value}) == expected


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", True),
        ("01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-what-the-future-says", True),
        ("00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01", False),  # uppercase
        ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", False),
        ("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", False),
        ("ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01", False),
        ("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra", False),  # version 00 is exact
        ("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7", False),
        (12, False),
    ],
)
def test_traceparent(value: Any, ok: bool) -> None:
    assert (traceparent_problem(value) is None) == ok
    assert found({"traceparent": value}) == ([] if ok else ["meta.traceparent.format"])


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", True),
        ("tenant@vendor=x, other=y ,", True),
        ("", True),
        ("Rojo=1", False),  # keys are lowercase
        ("rojo", False),
        ("rojo=a,rojo=b", False),
        ("rojo=a=b", False),
        (",".join(f"k{i}=v" for i in range(33)), False),
    ],
)
def test_tracestate(value: str, ok: bool) -> None:
    assert (tracestate_problem(value) is None) == ok
    assert found({"tracestate": value}) == ([] if ok else ["meta.tracestate.format"])


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("userId=alice,serverNode=DF%2028,isProduction=false", True),
        ("key1=value1;property1;property2=x, key2 = value2", True),
        ("no value", False),
        ("k=has space", False),
        ("k=bad%zz", False),
        ("k=" + "v" * 9000, False),
    ],
)
def test_baggage(value: str, ok: bool) -> None:
    assert (baggage_problem(value) is None) == ok
    assert found({"baggage": value}) == ([] if ok else ["meta.baggage.format"])


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        ({"roots": {"listChanged": True}, "sampling": {"tools": {}}, "elicitation": {"form": {}, "url": {}}}, 0),
        ({"roots": True}, 1),
        ({"sampling": []}, 1),
        ({"elicitation": "form"}, 1),
        ({"elicitation": {"form": True}}, 1),
        ({"sampling": {"context": "yes"}}, 1),
        ({"roots": {"listChanged": "yes"}}, 1),
        ({"extensions": {"io.modelcontextprotocol/tasks": True}}, 1),
        ({"roots": None, "sampling": 1, "elicitation": []}, 3),
    ],
)
def test_sub_capability_shapes(caps: dict[str, Any], expected: int) -> None:
    assert found(caps=caps) == ["meta.clientCapabilities.shape"] * expected


def legacy_init(params: dict[str, Any]) -> list[str]:
    checker = ClientChecker(modern_only=False)
    msg = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
    return [f.check for f in checker.request(0, "initialize", params, msg)]


def test_legacy_initialize_params() -> None:
    good = {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": {"name": "c", "version": "1"}}
    assert legacy_init(good) == []
    assert legacy_init({}) == ["initialize.protocolVersion", "initialize.clientInfo", "initialize.capabilities"]
    assert legacy_init({**good, "protocolVersion": 20251125}) == ["initialize.protocolVersion"]
    assert legacy_init({**good, "clientInfo": {"name": "c"}}) == ["initialize.clientInfo"]
    assert legacy_init({**good, "capabilities": {"sampling": True}}) == ["meta.clientCapabilities.shape"]


def test_levels_and_sections() -> None:
    assert CHECKS["meta.reserved"][0] == "warning"
    for check in ("meta.traceparent.format", "meta.tracestate.format", "meta.baggage.format", "meta.clientCapabilities.shape",
                  "initialize.protocolVersion", "initialize.clientInfo", "initialize.capabilities"):
        assert CHECKS[check][0] == "error"
    assert CHECKS["initialize.clientInfo"][1].startswith("https://modelcontextprotocol.io/specification/2025-11-25/")


def test_the_real_process_reports_them(tmp_path) -> None:
    scenario = tmp_path / "dual.yaml"
    scenario.write_text("mockmcp: 1\nprotocol: {era: dual, versions: ['2026-07-28', '2025-11-25']}\ntools: [{name: t}]\n")
    report = tmp_path / "report.json"
    bad_meta = {"traceparent": "00-xyz", "io.modelcontextprotocol/mine": 1,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": True}}
    data = line(request(1, "tools/list", meta=bad_meta)) + line(
        {"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}
    )
    proc = run_mock("run", str(scenario), "--report", str(report), input=data)
    assert proc.returncode == 0, proc.stderr
    checks = sorted(f["check"] for f in json.loads(report.read_text())["findings"])
    assert checks == ["initialize.clientInfo", "meta.clientCapabilities.shape", "meta.reserved", "meta.traceparent.format"]


def test_an_answer_to_the_servers_own_request_is_no_finding() -> None:
    checker = ClientChecker(modern_only=False)
    checker.server_message({"jsonrpc": "2.0", "id": "mockmcp-1", "method": "roots/list", "params": {}})
    assert checker.response({"jsonrpc": "2.0", "id": "mockmcp-1", "result": {"roots": []}}) == []
    # answered once: a second answer, or one to an id the server never used, is a finding
    assert [f.check for f in checker.response({"jsonrpc": "2.0", "id": "mockmcp-1", "result": {}})] == ["jsonrpc.response"]
    assert [f.check for f in checker.response({"jsonrpc": "2.0", "id": 7, "result": {}})] == ["jsonrpc.response"]
    # an answer that crosses the server's notifications/cancelled is a race, not a mistake (once)
    checker.server_message({"jsonrpc": "2.0", "id": "mockmcp-2", "method": "ping"})
    checker.server_message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "mockmcp-2"}})
    assert checker.response({"jsonrpc": "2.0", "id": "mockmcp-2", "result": {}}) == []
    assert [f.check for f in checker.response({"jsonrpc": "2.0", "id": "mockmcp-2", "result": {}})] == ["jsonrpc.response"]
