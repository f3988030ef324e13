"""Spawning the mock from this checkout's interpreter."""

from __future__ import annotations

import subprocess
import sys

# The pytest runs a test starts itself (pytester, the documentation's test snippets) test the
# mockmcp fixture; none uses pytest-trio or hypothesis, and pytest-trio imports all of hypothesis
# when it loads: about 2 CPU seconds of every such run, half its cost. Left out there.
LEAN_PYTEST_ADDOPTS = "-p no:trio -p no:hypothesispytest"


def mockmcp_cmd(*args: str) -> list[str]:
    """The command that spawns the mock from this checkout's interpreter."""
    return [sys.executable, "-m", "mockmcp", *args]


def run_mock(*args: str, input: bytes = b"", timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(mockmcp_cmd(*args), input=input, capture_output=True, timeout=timeout)
