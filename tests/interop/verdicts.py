"""The committed cells of docs/interop.md: the mock's verdicts, and which cells differ between clients.

The page is the interop matrix's output (tests/interop/matrix.py), committed. What a run is
checked against is the mock's verdict on the client in each cell (its expectations, no report
for a session that dies, a failed connect, a crash), not the operation counts: some of those
depend on timing (progress delivery, how many notifications fit before a timeout).

The default test run checks one client per transport on every scenario, plus every other
*outcome* the page shows: a cell whose committed text (timing-dependent counts left out) is not
the one of its transport's chosen client, run with one client that gave it. This module reads
the page and picks those cells; it runs nothing (matrix.py runs them).
"""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "interop.md"
HTTP_SUFFIX = "-http"
# A cell of a client that does not run that scenario (fastmcp's, outside the `auth` rows).
NOT_RUN = "not run"

_VERDICT = re.compile(r"expectations (?:passed|failed \d+)|mock: no report|connect \w+|crash|scenario does not load")
_NOTES_LINK = re.compile(r" \(\[notes\]\(#[^)]*\)\)$")
# Counts that depend on timing, not on the client: progress notifications delivered before the
# answer (or before a timeout; the table shows 23 to 29 for the same client and scenario).
_TIMING = re.compile(r"; progress×\d+")


def verdicts(text: str) -> list[str]:
    """The mock's verdicts named in a cell's text (its summary, or the committed cell)."""
    return _VERDICT.findall(text)


def committed_cells(page: str | None = None) -> dict[tuple[str, str], str]:
    """(scenario, client) -> the committed cell text, from the page's table."""
    lines = (PAGE.read_text(encoding="utf-8") if page is None else page).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| scenario |"))
    clients = [c.strip() for c in lines[start].strip("|").split("|")[1:]]
    table = []
    for line in lines[start + 1:]:  # the matrix's own rows only: the page has other tables (the parity table)
        if not line.startswith("|"):
            break
        table.append(line)
    cells = {}
    for line in table:
        if line.startswith("| `"):
            parts = [p.strip() for p in line.strip("|").split("|")]
            name = parts[0].split()[0].strip("`")
            for client, text in zip(clients, parts[1:]):
                cells[name, client] = text
    return cells


def outcome(text: str) -> str:
    """A committed cell without its notes link and without the counts that depend on timing."""
    return _TIMING.sub("", _NOTES_LINK.sub("", text))


def other_outcomes(committed: dict[tuple[str, str], str], chosen: str) -> list[tuple[str, str]]:
    """The cells of ``chosen``'s transport whose outcome is not ``chosen``'s in the same row:
    for each such outcome, one cell, with the first client (in column order) that gave it."""
    http = chosen.endswith(HTTP_SUFFIX)
    clients = list(dict.fromkeys(c for _, c in committed if c.endswith(HTTP_SUFFIX) == http))
    out = []
    for name in sorted({n for n, _ in committed}):
        seen = {outcome(committed[name, chosen])}
        for client in clients:
            got = outcome(committed[name, client])
            if got not in seen and got != NOT_RUN:  # a cell never run has nothing to check
                seen.add(got)
                out.append((name, client))
    return out
