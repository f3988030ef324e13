"""pytest plugin (registered through the ``pytest11`` entry point).

Provides the ``mockmcp`` fixture: a factory that gives the command and
arguments to spawn the mock for a bundled name, a file or an inline dict.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest


class MockMCP:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self._count = 0

    def command(self, scenario: str | Path | dict[str, Any], *extra: str) -> list[str]:
        """The argv that spawns ``mockmcp run`` on this scenario."""
        if isinstance(scenario, dict):
            import json

            self._count += 1
            path = self.tmp_path / f"scenario-{self._count}.yaml"
            path.write_text(json.dumps(scenario))  # JSON is YAML
            scenario = path
        return [sys.executable, "-m", "mockmcp", "run", str(scenario), *extra]


@pytest.fixture
def mockmcp(tmp_path: Path) -> MockMCP:
    return MockMCP(tmp_path)
