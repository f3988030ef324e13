"""The load cache at start-up: a warm spawn imports neither yaml nor cattrs (nor ``pickle``).

Suites spawn the mock once per test, so this cache is what keeps a spawn close
to the cost of ``import trio`` (see docs/performance.md). It must also be
invisible: same scenario, same answers. (Its key and its damaged entries are
tested in test_load_cache.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.paths import ROOT

from support.messages import line, request

from support.process import direct_cmd


def spawn(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", *direct_cmd("run", "default")[1:], *extra],
        input=line(request(1, "server/discover")), capture_output=True, timeout=60, env=env, cwd=ROOT,
    )


def imported(stderr: bytes) -> set[str]:
    return {row.split("|")[-1].strip() for row in stderr.decode().splitlines() if row.startswith("import time:")}


def test_warm_spawn_skips_yaml_and_cattrs(tmp_path, schema):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = spawn(env)
    assert first.returncode == 0, first.stderr[-2000:]
    # a miss loads the file, and the bundled scenario is in the fast path's subset:
    # yaml and cattrs are imported only when a file has a problem or leaves the subset
    assert "mockmcp.scenario.loader" in imported(first.stderr)
    assert not {"yaml", "cattrs"} & imported(first.stderr)
    cached = sorted(p.name for p in (tmp_path / "mockmcp").iterdir())
    assert len(cached) == 1 and cached[0].endswith(".pickle")
    second = spawn(env)
    assert second.returncode == 0
    assert "mockmcp.scenario.cachewrite" in imported(first.stderr)
    # a hit reads the entry with the C unpickler alone: neither pickle's Python module nor the writer
    assert not {"yaml", "cattrs", "mockmcp.scenario.loader", "pickle", "mockmcp.scenario.cachewrite"} & imported(second.stderr)
    assert json.loads(second.stdout) == json.loads(first.stdout)
    schema.check(json.loads(second.stdout), "server/discover")
    third = spawn(env, "--no-cache")
    assert "mockmcp.scenario.loader" in imported(third.stderr)


def test_warm_spawn_with_a_session_skips_the_loader_too(tmp_path):
    """The session directory needs only the words for a file's kind from the scenario layer; a
    spawn with ``--session`` and a warm cache must not import the loader and its model for them."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    session = ["--session", str(tmp_path / "session")]
    assert spawn(env, *session).returncode == 0
    second = spawn(env, *session)
    assert second.returncode == 0, second.stderr[-2000:]
    modules = imported(second.stderr)
    assert "mockmcp.sessiondir.layout" in modules
    assert not {"mockmcp.scenario.loader", "mockmcp.scenario.quickload", "yaml", "cattrs"} & modules
