"""pytest plugin (registered through the ``pytest11`` entry point; no conftest copying).

The ``mockmcp`` fixture is a factory: ``server = mockmcp("default")`` (a
bundled name, a file path or an inline dict) gives a ``MockServer`` with the
command and arguments to spawn, and its journal and report in a directory
under the test's own ``tmp_path`` (so pytest-xdist workers never share a
path). After the client is closed, ``server.report()``, ``server.findings()``,
``server.journal()`` and ``server.assert_expectations()`` tell what the
client did. The mock is a subprocess, so asyncio, anyio and trio suites use it
alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .api import MockServer, prepare


class MockMCP:
    """The fixture's value: a factory of mock servers for one test."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.servers: list[MockServer] = []

    def __call__(self, scenario: str | Path | dict[str, Any] = "default", *extra: str, strict: bool = False) -> MockServer:
        """Prepare a mock for ``scenario``; each call gets its own journal and report."""
        server = prepare(scenario, self.tmp_path / f"mockmcp-{len(self.servers) + 1}", strict=strict, extra=extra)
        self.servers.append(server)
        return server

    def command(self, scenario: str | Path | dict[str, Any], *extra: str) -> list[str]:
        """The argv that spawns ``mockmcp run`` on this scenario (with journal and report)."""
        return self(scenario, *extra).argv


@pytest.fixture
def mockmcp(tmp_path: Path) -> MockMCP:
    """A factory: ``mockmcp(scenario)`` -> ``MockServer`` (command, args, then journal/report/findings)."""
    return MockMCP(tmp_path)
