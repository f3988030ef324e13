"""mockmcp: a stdio mock server and client verifier for MCP revision 2026-07-28.

The public API, imported lazily (``mockmcp run`` is spawned once per test, so
importing the package must not import what a run does not need):

- ``MockServer``, ``prepare``, ``ReportMissing``: spawn a mock from a test and
  read its verdict (``mockmcp.api``; the pytest fixture ``mockmcp`` wraps them).
- ``AsyncControl``, ``SyncControl``, ``ControlError``, ``WaitTimedOut``, ``NotAnAnswer``: drive a
  running mock over its control socket (``mockmcp.controlclient``).
- ``load``, ``load_text``, ``LoadError``, ``Problem``: read and check scenarios.
- ``Connection``, ``Engine``, ``new_engine``: the sans-I/O core, for a shell of
  your own (bytes in, plans out).
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_WHERE = {
    "MockServer": "api",
    "prepare": "api",
    "ReportMissing": "api",
    "ControlError": "controlclient",
    "WaitTimedOut": "controlclient",
    "NotAnAnswer": "controlclient",
    "AsyncControl": "controlclient",
    "SyncControl": "controlclient",
    "load": "scenario.loader",
    "load_text": "scenario.loader",
    "LoadError": "scenario.problems",
    "Problem": "scenario.problems",
    "Connection": "core.connection",
    "Engine": "core.engine",
    "new_engine": "launch.boot",
}

__all__ = ["__version__", *_WHERE]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'mockmcp' has no attribute {name!r}")
    return getattr(importlib.import_module(f"mockmcp.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
