"""docs/interop.md's parity table names every client scenario of the pinned conformance suite.

The list is committed beside the suite's lockfile (tests/interop/conformance/client-scenarios.txt,
the pinned suite's ``conformance list --client``), so the table is checked against it without
Node; a second test runs the installed suite's ``list --client`` and checks that the committed list
is still what it says (a new pin that adds a scenario then fails here until the table has its row).
The ``auth/*`` scenarios belong to the authorization work: the table has one row for all of them.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from interop import tsclient

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = Path(__file__).resolve().parent / "conformance"
LISTED = CONFORMANCE_DIR / "client-scenarios.txt"
PACKAGE = "@modelcontextprotocol/conformance"
NODE = CONFORMANCE_DIR / "node_modules" / ".bin" / "node"
CLI = CONFORMANCE_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
TITLE = "## The conformance suite's client scenarios (parity)"
_ROW = re.compile(r"^\| `(?P<name>[^`]+)`")


def committed() -> list[str]:
    """The committed ``list --client`` lines (``name [revisions]``)."""
    return [x.strip() for x in LISTED.read_text().splitlines() if x.strip() and not x.startswith("#")]


def table_rows() -> dict[str, str]:
    """The parity table's rows by their first cell's name."""
    text = (ROOT / "docs" / "interop.md").read_text(encoding="utf-8")
    assert TITLE in text, f"docs/interop.md has no section {TITLE!r}"
    section = text.split(TITLE, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for row in section.splitlines():
        m = _ROW.match(row)
        if m:
            rows[m.group("name")] = row
    return rows


def test_every_client_scenario_of_the_pinned_suite_has_a_row() -> None:
    names = [x.split(" ", 1)[0] for x in committed()]
    assert names and len(names) == len(set(names))
    rows = table_rows()
    missing = [n for n in names if not n.startswith("auth/") and n not in rows]
    assert not missing, f"docs/interop.md's parity table has no row for {missing}"
    assert "auth/*" in rows
    auth = sum(n.startswith("auth/") for n in names)
    assert f"({auth} scenarios)" in rows["auth/*"], rows["auth/*"]
    stale = [n for n in rows if n != "auth/*" and n not in names]
    assert not stale, f"rows for scenarios the pinned suite does not list: {stale}"
    for name, row in rows.items():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        assert len(cells) == 4 and all(cells), f"row {name!r} needs all four cells: {row}"


def test_the_committed_list_is_the_installed_suites() -> None:
    try:
        tsclient.ensure(CONFORMANCE_DIR, PACKAGE)
    except tsclient.ClientUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    out = subprocess.run([str(NODE), str(CLI), "list", "--client"], capture_output=True, text=True, timeout=120, check=True)
    listed = [x.strip()[2:] for x in out.stdout.splitlines() if x.strip().startswith("- ")]
    assert listed == committed(), "the suite lists other client scenarios: update client-scenarios.txt and the table"
