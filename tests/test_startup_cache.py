"""The start-up caches: a warm spawn imports neither yaml nor cattrs and compiles no attrs code.

Suites spawn the mock once per test, so these two caches are what keeps a spawn
close to the cost of ``import trio`` (see docs/performance.md). They must also
be invisible: same scenario, same behaviour of the generated classes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT, line, mockmcp_cmd, request


def spawn(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", *mockmcp_cmd("run", "default")[1:], *extra],
        input=line(request(1, "server/discover")), capture_output=True, timeout=60, env=env, cwd=ROOT,
    )


def imported(stderr: bytes) -> set[str]:
    return {row.split("|")[-1].strip() for row in stderr.decode().splitlines() if row.startswith("import time:")}


def test_warm_spawn_skips_yaml_cattrs_and_compiling(tmp_path, schema):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = spawn(env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert {"yaml", "cattrs"} <= imported(first.stderr)
    cached = sorted(p.name for p in (tmp_path / "mockmcp").iterdir())
    assert any(n.endswith(".pickle") for n in cached) and any(n.endswith(".marshal") for n in cached)
    marshal_file = next((tmp_path / "mockmcp").glob("*.marshal"))
    stamp = marshal_file.stat().st_mtime_ns
    second = spawn(env)
    assert second.returncode == 0
    assert not {"yaml", "cattrs"} & imported(second.stderr)
    assert json.loads(second.stdout) == json.loads(first.stdout)
    schema.check(json.loads(second.stdout), "server/discover")
    assert marshal_file.stat().st_mtime_ns == stamp, "a warm spawn compiled new attrs code"
    third = spawn(env, "--no-cache")
    assert {"yaml", "cattrs"} <= imported(third.stderr)


CLASSES = """
import sys
from mockmcp import codecache
assert codecache.install()
import attrs
@attrs.frozen
class P:
    x: int
    y: str = "d"
a, b = P(1), P(1, "d")
assert a == b and hash(a) == hash(b) and a != P(2) and repr(a) == "P(x=1, y='d')"
try:
    a.x = 3
except attrs.exceptions.FrozenInstanceError:
    pass
else:
    raise AssertionError("not frozen")
print(codecache._state["dirty"])
codecache.save()
"""


def test_cached_attrs_code_behaves_like_compiled_code(tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", CLASSES], capture_output=True, env=env, cwd=tmp_path, timeout=60)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr.decode()
    assert [r.stdout.strip() for r in runs] == [b"True", b"False"]  # compiled once, then reused
