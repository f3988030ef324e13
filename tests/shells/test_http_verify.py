"""Client checks and header expectations over HTTP: a raw client breaks each rule once; the report says so."""

from __future__ import annotations

import json
from pathlib import Path

from support.httpmock import HttpMock, msg

SCENARIO = """\
mockmcp: 1
tools:
  - name: sql
    inputSchema: {type: object, properties: {region: {type: string, x-mcp-header: Region}}}
    replies: [{steps: [{text: ok}]}]
  - name: broken
    inputSchema: {type: object, properties: {r: {type: number, x-mcp-header: R}}}
    replies: [{steps: [{text: should have been excluded}]}]
  - name: busy
    replies:
      - steps:
          - http: {status: 429, headers: {Retry-After: "30"}}
          - text: stdio
expectations:
  - id: good
    method: tools/call
    name: sql
    headers: {MCP-Protocol-Version: "2026-07-28", Mcp-Name: sql, mcp-param-region: us}
    exactly: 1
  - {id: no-version, method: tools/list, headers: {mcp-protocol-version: {$absent: true}}, exactly: 1}
"""


def call(rid: int, name: str, **args: object) -> dict[str, object]:
    return msg(rid, "tools/call", {"name": name, "arguments": args})


def test_findings_and_header_expectations(tmp_path: Path) -> None:
    path = tmp_path / "v.yaml"
    path.write_text(SCENARIO)
    report = tmp_path / "report.json"
    with HttpMock(path, "--report", str(report)) as m:
        assert m.post(call(1, "sql", region="us"), {"Mcp-Param-Region": "us"}).status == 200  # all good
        assert m.post(msg(2, "tools/list"), {"MCP-Protocol-Version": None}).status == 400  # missing
        assert m.post(call(3, "sql", region="us"), {"Mcp-Name": "other", "Mcp-Param-Region": "us"}).status == 400
        assert m.post(call(4, "sql", region="us")).status == 400  # param header missing
        assert m.post(call(5, "sql", region="us"), {"Mcp-Param-Region": "eu"}).status == 400
        assert m.post(call(6, "broken", r=1.5)).status == 200  # called although it should be excluded
        assert m.post(msg(7, "tools/list"), {"Accept": "application/json"}).status == 406
        assert m.post(b"", method="GET").status == 405
        assert m.post([msg(8, "tools/list")]).status == 400
        assert m.post(call(9, "busy")).status == 429
        assert m.post(msg(10, "server/discover")).status == 200  # sooner than Retry-After: 30
        assert m.stop() == 0, m.stderr()
    data = json.loads(report.read_text())
    checks = sorted(f["check"] for f in data["findings"])
    assert checks == sorted([
        "http.header.missing", "http.header.mismatch", "http.param.missing", "http.param.mismatch",
        "http.tool.invalidHeaders", "http.accept", "http.method", "http.batch", "http.retryAfter",
        "jsonrpc.invalid",  # the batch is also not one JSON-RPC message
    ]), data["findings"]
    by_check = {f["check"]: f for f in data["findings"]}
    assert by_check["http.header.mismatch"]["id"] == 3 and "'other'" in by_check["http.header.mismatch"]["text"]
    assert by_check["http.param.missing"]["spec"].endswith("streamable-http#client-behavior")
    assert by_check["http.retryAfter"]["level"] == "warning"
    verdicts = {v["expectation"]: v for v in data["expectations"]}
    assert verdicts["good"]["verdict"] == "passed" and verdicts["good"]["ids"] == [1]
    assert verdicts["no-version"]["verdict"] == "passed" and verdicts["no-version"]["ids"] == [2]
