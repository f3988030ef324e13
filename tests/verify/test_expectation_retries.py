"""A failed count says when matching input_required retries were left out of it, and how to count them.

One real ``mockmcp run`` process: the client calls a tool once and retries once (the
retry carries the server's ``requestState`` and the ``inputResponses``); the report,
the stderr summary, the journal's text view and the timeline all carry the same words.
"""

from __future__ import annotations

import html
import io
import json
import subprocess
from pathlib import Path
from typing import Any

from support.messages import call, line, request
from support.process import mockmcp_cmd

from mockmcp.verify.journal import print_transcript, read_journal
from mockmcp.verify.timeline import render

ROOT = Path(__file__).resolve().parents[2]

SCENARIO = """\
mockmcp: 1
tools:
  - name: greet
    inputSchema: {type: object}
    replies:
      - when: {round: 1}
        steps:
          - inputRequired:
              inputRequests:
                name:
                  method: elicitation/create
                  params:
                    mode: form
                    message: Your name?
                    requestedSchema: {type: object, properties: {name: {type: string}}}
      - steps: [{text: "hello {{ inputResponses.name.content.name }}"}]
expectations:
  - {id: twice, method: tools/call, name: greet, exactly: 2}
  - {id: twice-with-retries, method: tools/call, name: greet, exactly: 2, retries: true}
  - {id: once, method: tools/call, name: greet, exactly: 1}
"""

NOTE = "(1 more matching request was an input_required retry, not counted; add `retries: true` to count retries)"
ELICIT = {"io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}


def _read(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    assert proc.stdout is not None
    got = proc.stdout.readline()
    assert got, "the mock closed its stdout"
    msg: dict[str, Any] = json.loads(got)
    return msg


def test_a_count_that_left_out_a_retry_says_so_and_retries_true_counts_it(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    journal, report_path = tmp_path / "j.jsonl", tmp_path / "r.json"
    argv = mockmcp_cmd("run", str(scenario), "--journal", str(journal), "--report", str(report_path))
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None
        proc.stdin.write(line(call(1, "greet", meta=ELICIT)))
        proc.stdin.flush()
        first = _read(proc)["result"]
        assert first["resultType"] == "input_required" and "name" in first["inputRequests"]
        answers = {"name": {"action": "accept", "content": {"name": "Ada"}}}
        retry = request(2, "tools/call", {"name": "greet", "arguments": {}, "inputResponses": answers,
                                          "requestState": first["requestState"]}, ELICIT)
        proc.stdin.write(line(retry))
        proc.stdin.flush()
        assert _read(proc)["result"]["content"][0]["text"] == "hello Ada"
        proc.stdin.close()
        stderr = proc.stderr.read().decode() if proc.stderr is not None else ""
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    report = json.loads(report_path.read_text())
    assert report["findings"] == [], report["findings"]
    twice, with_retries, once = report["expectations"]
    assert twice["verdict"] == "failed" and twice["count"] == 1 and twice["retriesNotCounted"] == 1
    assert twice["why"] == f"seen 1 time, expected exactly 2 {NOTE}"
    assert with_retries["verdict"] == "passed" and with_retries["count"] == 2 and with_retries["ids"] == [1, 2]
    assert "retriesNotCounted" not in with_retries and "why" not in with_retries
    assert once["verdict"] == "passed" and once["count"] == 1  # a passing count is not told about retries
    summary = f"twice: tools/call greet exactly 2 times: seen 1 time, expected exactly 2 {NOTE}"
    assert summary in stderr
    assert summary in (ROOT / "docs" / "scenarios.md").read_text()  # the expectations section shows it as it is

    out = io.StringIO()
    print_transcript(journal, color="never", out=out)
    (failed,) = [t for t in out.getvalue().splitlines() if "EXPECTATION FAILED" in t]
    assert failed.endswith(f"!! EXPECTATION FAILED twice: tools/call greet exactly 2 times: seen 1 time, expected exactly 2 {NOTE}")
    page = render(read_journal(journal))
    assert html.escape(f"EXPECTATION FAILED twice: tools/call greet exactly 2 times: seen 1 time, expected exactly 2 {NOTE}") in page
