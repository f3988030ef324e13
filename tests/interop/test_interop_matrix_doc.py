"""Regenerating docs/interop.md keeps its hand-written sections (tests/interop/matrix.py).

The page is generated (the table, the known behaviours, the notes) except for sections
written by hand from dedicated tests, such as "## The Tasks extension". These tests run the
generator's real command (``main`` with ``--from-json``, so no client runs) over a copy of
the committed page and check that such a section comes back word for word, in its place,
while the generated ones are replaced.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interop import matrix

COMMITTED = matrix.ROOT / "docs" / "interop.md"
TASKS = "The Tasks extension (io.modelcontextprotocol/tasks)"
PARITY = "The conformance suite's client scenarios (parity)"

# One cell, as a driver reports it: enough for render() to write every generated section.
RESULTS = {"default": {"python-asyncio": {
    "connect": {"status": "ok", "protocolVersion": "2026-07-28"},
    "ops": [{"op": "listTools", "status": "ok", "session": 1}],
    "report": None,
}}}


def _section(text: str, title: str) -> str:
    return dict(matrix._sections(text))[title]


def _regenerate(tmp_path: Path, page: str, monkeypatch: pytest.MonkeyPatch) -> str:
    raw = tmp_path / "results.json"
    raw.write_text(json.dumps(RESULTS))
    out = tmp_path / "interop.md"
    out.write_text(page, encoding="utf-8")
    # the versions line is not what is tested; asking Node for it would install the TS client
    monkeypatch.setattr(matrix, "installed_versions", lambda: {"python": "mcp test", "typescript": "ts test"})
    assert matrix.main(["--from-json", str(raw), "--out", str(out), "--clients", "python-asyncio"]) == 0
    return out.read_text(encoding="utf-8")


def test_regenerating_the_committed_page_keeps_the_tasks_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    committed = COMMITTED.read_text(encoding="utf-8")
    assert TASKS in [title for title, _ in matrix._sections(committed)]  # the section this is about
    page = _regenerate(tmp_path, committed, monkeypatch)
    titles = [title for title, _ in matrix._sections(page)]
    assert titles == ["", TASKS, PARITY, "Known client behaviours", "Notes"]  # in their place: after the table
    assert _section(page, TASKS) == _section(committed, TASKS)  # word for word
    assert _section(page, PARITY) == _section(committed, PARITY)
    # the generated parts are the new run's: one scenario, one client
    table = [line for line in _section(page, "").splitlines() if line.startswith("| `")]
    assert table == ["| `default` | 1 ok; mock: no report ([notes](#defaultpython-asyncio)) |"]
    assert "### default/python-asyncio" in _section(page, "Notes")
    assert "### cancel/python-asyncio" not in page
    # and once more: a regenerated page regenerates to itself
    assert _regenerate(tmp_path, page, monkeypatch) == page


def test_hand_written_sections_keep_their_place_and_fences_are_not_cut() -> None:
    generated = "# T\n\ntable\n\n## Known client behaviours\n\n- k\n\n## Notes\n\nnew notes\n"
    previous = (
        "# T\n\nold table\n\n## Mine\n\n```md\n## not a heading\n```\n\n"
        "## Known client behaviours\n\n- old\n\n## Also mine\n\ntext\n## Notes\n\nold notes\n\n## Last\n\nend"
    )
    page = matrix.keep_hand_written(generated, previous)
    assert page == (
        "# T\n\ntable\n\n## Mine\n\n```md\n## not a heading\n```\n\n"
        "## Known client behaviours\n\n- k\n\n## Also mine\n\ntext\n\n## Notes\n\nnew notes\n\n## Last\n\nend\n"
    )
    assert matrix.keep_hand_written(generated, generated) == generated  # nothing hand-written: as generated
