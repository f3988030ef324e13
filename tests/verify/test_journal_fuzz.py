"""The commands that read a journal, fuzzed through the real process: ``mockmcp journal FILE``,
``mockmcp journal FILE --html OUT`` and ``mockmcp report DIR`` over a real session's journal with
hostile lines put between its records (records of the wrong shape, generated garbage, a torn
line, nesting past the parser's depth). A journal is a file anyone may edit or cut short; each
command still answers, with no traceback, every real record shown and every line that is not a
record counted (``jsonschema`` and the published schema decide which those are)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.fuzz import VALUES, mutated
from support.messages import line, request
from support.process import run_mock

from mockmcp.cli.outputschemas import journal_schema
from mockmcp.sessiondir.layout import JOURNAL

SCHEMA = jsonschema.Draft202012Validator(journal_schema())


def is_record(data: bytes) -> bool:
    """The oracle: a line is a record when it is JSON the published schema admits (with a finite clock)."""
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return False
    if not SCHEMA.is_valid(value):
        return False
    t = value["t"]
    return math.isfinite(t) if isinstance(t, float) else abs(t) < 2**1023


WRONG_SHAPES = st.builds(
    lambda d, field, value: json.dumps({"t": 1.0, "pid": 77, "dir": d, field: value}).encode(),
    st.sampled_from(["start", "in", "out", "event", "finding", "verdict", "elsewhere"]),
    st.sampled_from(["t", "pid", "message", "finding", "verdict", "raw", "headers", "error", "kind"]),
    VALUES,
)
HOSTILE = st.one_of(
    WRONG_SHAPES,
    mutated(),
    st.sampled_from([b"", b'{"t": 1.0, "pid": 1, "dir": "ou', b"[" * 200_000, b'{"t": 1e400, "pid": 1, "dir": "in"}',
                     b'{"t": 1' + b"0" * 400 + b', "pid": 1, "dir": "in"}',
                     b'{"t": NaN, "pid": 1, "dir": "start"}', b"\xff\xfe", b'{"t": 1, "pid": 1, "dir": "in", "message": '
                     + b"[" * 5000 + b"]" * 5000 + b"}"]),
)


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session directory a real mock journalled: requests, a tool call, a line it could not parse."""
    d = tmp_path_factory.mktemp("journalled") / "s"
    calls = (line(request(1, "server/discover")) + line(request(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}}))
             + b"not json\n")
    proc = run_mock("run", "default", "--session", str(d), input=calls, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert len((d / JOURNAL).read_bytes().splitlines()) >= 6
    return d


@pytest.mark.slow
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(hostile=st.lists(st.tuples(st.integers(0, 99), HOSTILE), min_size=1, max_size=4))
@example(hostile=[(0, b'{"t": "x", "pid": 1, "dir": "in"}'), (3, b'{"t": 1, "pid": [1], "dir": "in"}'),
                  (5, b'{"t": 1, "pid": 1, "dir": "finding", "finding": "oops"}'),
                  (9, b'{"t": 1, "pid": 1, "dir": "out", "message": [1]}'), (2, b'{"t": 1' + b"0" * 400 + b', "pid": 1, "dir": "in"}'),
                  (4, b'{"t": 1, "pid": 1, "dir": "event", "kind": "cancelled", "reason": "\\ud800 bye"}'),
                  (6, b'{"t": 1, "pid": 1, "dir": "in", "message": {"id": 9, "method": "x", "params": {"name": "\\udfff"}}}')])
def test_journal_and_report_commands_answer_whatever_lines_the_journal_holds(
        session: Path, tmp_path_factory: pytest.TempPathFactory, hostile: list[tuple[int, bytes]]) -> None:
    work = tmp_path_factory.mktemp("fuzzed")
    d = work / "s"
    shutil.copytree(session, d)
    real = (d / JOURNAL).read_bytes().splitlines()
    lines = list(real)
    for at, data in hostile:
        lines.insert(at % (len(lines) + 1), data.replace(b"\n", b""))
    (d / JOURNAL).write_bytes(b"\n".join(lines) + b"\n")
    records = sum(1 for x in lines if is_record(x))
    skipped = len(lines) - records

    shown = run_mock("journal", str(d / JOURNAL), timeout=60)
    out, err = shown.stdout.decode(), shown.stderr.decode()
    assert shown.returncode == 0 and "Traceback" not in err, (hostile, err)
    assert len(out.splitlines()) == records + (1 if skipped else 0), (hostile, out)
    assert "-> #2 tools/call echo" in out and "<- #2 result complete" in out
    if skipped:
        assert f"({skipped} unreadable line{'s' if skipped != 1 else ''} skipped" in out.splitlines()[-1]

    page = work / "t.html"
    drawn = run_mock("journal", str(d / JOURNAL), "--html", str(page), timeout=60)
    assert drawn.returncode == 0 and "Traceback" not in drawn.stderr.decode(), (hostile, drawn.stderr)
    assert f"{records} records" in drawn.stdout.decode() and "tools/call echo" in page.read_text(encoding="utf-8")

    judged = run_mock("report", str(d), "--json", timeout=60)
    assert judged.returncode in (0, 1) and "Traceback" not in judged.stderr.decode(), (hostile, judged.stderr)
    report = json.loads(judged.stdout)
    assert report["counts"]["requests"] >= 2 and report["counts"]["findings"]["error"] >= 1  # (the line "not json")

