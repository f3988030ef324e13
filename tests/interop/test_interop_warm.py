"""The official Python and TypeScript clients run the interop matrix's generic session through a
warm server (docs/warm.md): each client is given the launcher's prefix (``mockmcp warm argv``)
instead of ``python -m mockmcp`` and spawns it with its own whitelisted environment, as it would
spawn the mock. The cells are the ones of the stdio features (tools, ``input_required`` rounds,
progress, a tool that hangs and one that kills the server, tasks), and each must give what the
committed page (docs/interop.md, direct spawns) shows; and every mock of them must have been
forked by the warm server (its log), none run directly after a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from support.process import WarmServer, running_warm_server

from interop import matrix, verdicts
from mockmcp.scenario import loadcache

pytestmark = [pytest.mark.interop, pytest.mark.usefixtures("typescript_client")]

SCENARIOS = ("default", "mrtr", "progress", "faults", "tasks")
CLIENTS = ("python-trio", "typescript")
# What a direct spawn's page shows beyond the verdicts that may vary with timing alone: the
# progress notifications a client delivers before the answer, and (TypeScript) the one it
# reports through onerror instead (docs/interop.md's known client behaviours).
_TIMING = re.compile(r"; (progress×\d+|client reported \d+ error\(s\))")


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmServer]:
    with running_warm_server() as server:
        yield server


def outcome(text: str) -> str:
    """A cell's text as the page shows it, less its notes link and what depends on timing."""
    return _TIMING.sub("", verdicts.outcome(text))


def run(cells: list[tuple[str, str]], warm: WarmServer, **kw: Any) -> list[dict[str, Any]]:
    paths = [(loadcache.bundled_dir() / f"{name}.yaml", client) for name, client in cells]
    return matrix.run_cells(paths, prefix=warm.argv, **kw)


def test_the_generic_session_through_the_warm_server_gives_the_committed_cells(warm: WarmServer) -> None:
    committed = verdicts.committed_cells()
    cells = [(name, client) for name in SCENARIOS for client in CLIENTS]
    results = dict(zip(cells, run(cells, warm)))
    # a cell that is not the page's is run once more with long timeouts, one at a time (a busy
    # machine turns a slow answer into a timeout at 3 s; a tool that hangs still hangs at 20 s)
    again = [cell for cell, got in results.items() if outcome(matrix.summarize(got)[0]) != outcome(committed[cell])]
    results.update(zip(again, run(again, warm, jobs=1, timeout_ms=matrix.RECHECK_TIMEOUT_MS)))
    for cell, got in results.items():
        text = matrix.summarize(got)[0]
        assert outcome(text) == outcome(committed[cell]), f"{cell}: {text!r}, the page says {committed[cell]!r}"
        assert verdicts.verdicts(text) == verdicts.verdicts(committed[cell])

    # every spawn went through the warm server: none refused, each session's process a fork
    log = warm.log()
    assert "refused" not in log, log
    forks = len(re.findall(r"forked \d+ for pid \d+\n", log))
    sessions = sum(got["sessions"] * (2 if client == "typescript" else 1) for (_, client), got in results.items())
    assert forks >= sessions, (forks, sessions)  # (the TypeScript client spawns a probe, then the session)
    for cell, got in results.items():
        if got["report"] is not None:  # the first session's serving process, by the pid the client spawned
            assert warm.forked_for(got["report"]["pid"], timeout=0) is not None, (cell, log)
    # the session that the faults scenario's tool kills ended as a direct spawn would: the page's counts
    faults = results["faults", "python-trio"]
    assert faults["sessions"] == 3 and faults["report"] is not None
