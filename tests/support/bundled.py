"""Bundled scenarios that are alike over stdio.

Authorization is an HTTP matter (stdio ignores a scenario's ``auth`` section), so the 25
``auth-*`` scenarios, which reproduce the conformance suite's authorization scenarios, differ
from each other over stdio only in names and descriptions. A test that sweeps every bundled
scenario over stdio runs one of each shape; over HTTP each runs on its own.
"""

from __future__ import annotations

import json

import yaml

from support.paths import SCENARIOS

STDIO_IGNORED = ("auth", "description", "server")  # ignored over stdio, or only printed


def stdio_shape(name: str) -> str:
    """What a stdio run of bundled scenario ``name`` depends on, as one comparable text."""
    data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text(encoding="utf-8"))
    for key in STDIO_IGNORED:
        data.pop(key, None)
    return json.dumps(data, sort_keys=True)


def stdio_representatives(names: list[str]) -> dict[str, str]:
    """Each name -> the first name (sorted) of the same stdio shape."""
    first: dict[str, str] = {}
    out: dict[str, str] = {}
    for name in sorted(names):
        out[name] = first.setdefault(stdio_shape(name), name)
    return out
