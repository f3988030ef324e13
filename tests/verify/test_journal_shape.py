"""What a journal reader admits as a record: exactly what ``mockmcp schema journal`` describes.

``journal.well_formed`` is a hand-written check (the reader runs it on every line, and a session's
verdict reads every line journalled since the last one), so it is held to the published schema
here, record by record, with ``jsonschema`` as the judge: the two agree on valid records of every
direction and on each of them broken one field at a time. Then what is admitted is what the
transcript and the timeline render without an exception, one transcript line per record.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.fuzz import VALUES

from mockmcp.cli.outputschemas import journal_schema
from mockmcp.verify.journal import DIRECTIONS, LEVELS, load_journal, record_of, transcript_lines, well_formed
from mockmcp.verify.timeline import render

SCHEMA = jsonschema.Draft202012Validator(journal_schema())
TEXT = st.text(max_size=8) | st.sampled_from(["\ud800", "a\udfffb", "\x1b[31m", "é"])  # (JSON lets a client send a lone surrogate)
IDS = st.integers(-(2**40), 2**40) | TEXT
MESSAGES = st.dictionaries(
    st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]) | TEXT, VALUES, max_size=5)
FINDINGS = st.fixed_dictionaries(
    {"check": TEXT, "level": st.sampled_from(LEVELS), "text": TEXT},
    optional={"spec": TEXT, "id": IDS, "message": VALUES, "nearMiss": VALUES, "pid": st.integers(1, 2**22)})
VERDICTS = st.fixed_dictionaries(
    {"expectation": TEXT, "request": TEXT, "wanted": TEXT, "count": st.integers(0, 99),
     "ids": st.lists(IDS, max_size=3), "verdict": st.sampled_from(["passed", "failed"])},
    optional={"why": TEXT, "retriesNotCounted": st.integers(0, 9), "before": TEXT, "after": TEXT})
FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "message": MESSAGES, "raw": TEXT, "fault": st.booleans(), "error": TEXT | st.none(),
    "oversized": st.integers(0, 2**30), "headers": st.dictionaries(TEXT, TEXT, max_size=3), "rule": TEXT,
    "kind": TEXT, "finding": FINDINGS, "verdict": VERDICTS, "scenario": TEXT, "argv": st.lists(TEXT, max_size=3),
    "versions": st.lists(TEXT, max_size=2), "status": VALUES, "id": VALUES, "reason": TEXT,
}


@st.composite
def valid_records(draw: st.DrawFn) -> dict[str, Any]:
    """A record as a writer may write it: the three required fields and a few others."""
    rec: dict[str, Any] = {
        "t": draw(st.floats(0, 1e9) | st.integers(0, 10**9)), "pid": draw(st.integers(1, 2**22)),
        "dir": draw(st.sampled_from(DIRECTIONS)),
    }
    for name in draw(st.lists(st.sampled_from(sorted(FIELDS)), max_size=4, unique=True)):
        rec[name] = draw(FIELDS[name])
    if rec["dir"] in ("finding", "verdict") and draw(st.booleans()):
        rec[rec["dir"]] = draw(FINDINGS if rec["dir"] == "finding" else VERDICTS)  # (what such records carry)
    return rec


NEAR_MISSES = [True, 1.0, 2.5, -1, "", "in", "error", "passed", None, [], {}, ["a"], {"a": "b"}, float("inf"), 10**400]
"""Values each field is replaced with: the other JSON types, and the right type with a wrong value."""


def variants(rec: dict[str, Any], another: Any) -> list[dict[str, Any]]:
    """``rec`` with each of its fields (and of its finding's and verdict's) in turn replaced by each
    near miss and by ``another``, dropped, or joined by an unknown field."""
    out = [rec]
    places = [((), k) for k in rec] + [((k,), sub) for k in ("finding", "verdict") if type(rec.get(k)) is dict for sub in rec[k]]
    for outer, key in places + [((), "because"), (("verdict",), "because")]:
        for how in [*NEAR_MISSES, another, "drop"]:
            copy = json.loads(json.dumps(rec))
            holder = copy.get(outer[0]) if outer else copy
            if type(holder) is not dict:
                continue
            if how == "drop":
                holder.pop(key, None)
            else:
                holder[key] = how
            out.append(copy)
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(rec=valid_records(), another=VALUES)
def test_the_reader_admits_what_the_published_schema_does(rec: dict[str, Any], another: Any) -> None:
    for variant in variants(rec, another):
        t = variant.get("t")
        a_double = not isinstance(t, (int, float)) or (math.isfinite(t) if isinstance(t, float) else abs(t) < 2**1023)
        expected = SCHEMA.is_valid(variant) and a_double  # (the one rule beyond the schema: a clock a double holds)
        assert well_formed(variant) == expected, (variant, [e.message for e in SCHEMA.iter_errors(variant)])


def test_the_reader_refuses_what_json_has_no_word_for_and_what_nests_too_deep() -> None:
    """Python's parser reads 1e400 as infinity and NaN as NaN, and 10**400 has no double: a clock
    never gives any of them, and the transcript's arithmetic on one would overflow."""
    for t in ("1e400", "-1e400", "NaN", "Infinity", "1" + "0" * 400):
        assert record_of('{"t": %s, "pid": 1, "dir": "in"}' % t) is None
    assert record_of(b'{"t": 1, "pid": 1, "dir": "in", "message": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}") is None
    assert record_of(b"[" * 100_000) is None
    assert record_of(b'{"t": 1, "pid": 1, "dir": "in", "message": {"a": [[[]]]}}') is not None


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=st.lists(valid_records(), min_size=1, max_size=5), another=VALUES)
def test_every_admitted_record_is_rendered(records: list[dict[str, Any]], another: Any) -> None:
    admitted = [v for r in records for v in variants(r, another)[::7] if well_formed(v)]
    if not admitted:
        return
    lines = list(transcript_lines(admitted))
    assert len(lines) == len(admitted)
    "\n".join(text for text, _ in lines).encode("utf-8")  # (printable: what `mockmcp journal` writes out)
    page = render(admitted, title="fuzzed")
    assert f"<p class=summary>{len(admitted)} records, " in page
    page.encode("utf-8")  # (writable: what `--html` writes out)


def test_a_file_of_mixed_lines_counts_what_is_not_a_record(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    good = {"t": 1.5, "pid": 4, "dir": "in", "message": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}
    bad = [{"t": "x", "pid": 4, "dir": "in"}, {"t": 1, "pid": [1], "dir": "in"}, {"t": 1, "pid": 4, "dir": "finding", "finding": "oops"},
           {"t": 1, "pid": 4, "dir": "in", "message": [1]}, {"t": 1, "pid": 4, "dir": "elsewhere"}]
    path.write_text("\n".join(json.dumps(r) for r in [good, *bad, good]) + "\n" + "[" * 50_000 + "\n")
    records, skipped = load_journal(path)
    assert records == [good, good] and skipped == len(bad) + 1
