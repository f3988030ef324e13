"""The sans-I/O core imports neither trio, yaml nor cattrs, nor os, pathlib, time, random or socket.

Each core module is imported, one at a time, in an interpreter in which a meta
path finder refuses trio, yaml and cattrs: an import of any of them, direct or
through another module, fails the import. One interpreter imports them all in
turn, forgetting every ``mockmcp`` module before the next, so each import runs
its own chain of mockmcp imports as in a fresh interpreter and reports its own
result. A second check makes sure the blocker itself works, so this test can fail. The standard library's I/O
modules are loaded by the interpreter itself before any test code runs, so a
finder cannot see their import: the core's source is read instead, and no
import statement of a core module may name them (the shell hands the core its
keys, clocks, randomness and file contents).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.paths import ROOT


def _sans_io_modules() -> list[str]:
    """The modules the sans-I/O contract in pyproject.toml names, packages expanded (no hand-kept list)."""
    import pkgutil
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["name"].startswith("sans-I/O")]
    names = []
    for source in contract["source_modules"]:
        path = ROOT / source.replace(".", "/")
        if path.is_dir():
            names += [f"{source}.{m.name}" for m in pkgutil.iter_modules([str(path)])]
        else:
            names.append(source)
    return sorted(n.removeprefix("mockmcp.") for n in names)


CORE = _sans_io_modules()
FORBIDDEN = ("trio", "yaml", "cattrs")
FORBIDDEN_STDLIB = ("os", "pathlib", "time", "random", "socket", "subprocess", "shutil", "tempfile", "io", "secrets")

BLOCKER = """
import importlib.abc, sys
FORBIDDEN = {forbidden!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in FORBIDDEN:
            raise ImportError(f"the sans-I/O core must not import {{name}}")
        return None
sys.meta_path.insert(0, Block())
import importlib
importlib.import_module({module!r})
loaded = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
assert not loaded, loaded
print("ok")
"""


# The shell and the loader import trio or yaml: the blocker must refuse them.
BLOCKED_EXAMPLES = ["shells.stdio", "scenario.plainload", "shells.signals"]

ONE_AT_A_TIME = """
import importlib, importlib.abc, json, sys, traceback
FORBIDDEN = {forbidden!r}
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in FORBIDDEN:
            raise ImportError(f"the sans-I/O core must not import {{name}}")
        return None
sys.meta_path.insert(0, Block())
results = {{}}
for module in {modules!r}:
    for name in [m for m in sys.modules if m.split(".")[0] == "mockmcp"]:
        del sys.modules[name]  # as in a fresh interpreter: this import runs its own chain
    try:
        importlib.import_module(module)
    except Exception:  # any failure to import is this module's result
        results[module] = traceback.format_exc()
        continue
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    results[module] = f"loaded {{loaded}}" if loaded else "ok"
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def blocked_imports() -> dict[str, str]:
    """Module name -> "ok", or why its import failed under the blocker (one interpreter for all)."""
    modules = [f"mockmcp.{name}" for name in CORE + BLOCKED_EXAMPLES]
    code = ONE_AT_A_TIME.format(forbidden=FORBIDDEN, modules=modules)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results: dict[str, str] = json.loads(proc.stdout)
    assert sorted(results) == sorted(modules)
    return results


@pytest.mark.parametrize("name", CORE)
def test_core_module_imports_no_io_library(name, blocked_imports):
    assert blocked_imports[f"mockmcp.{name}"] == "ok"


def imported_names(source: str) -> set[str]:
    """The top-level package of every import statement in ``source`` (nested ones too)."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("name", CORE)
def test_core_module_imports_no_stdlib_io(name):
    import importlib.util

    spec = importlib.util.find_spec(f"mockmcp.{name}")
    assert spec is not None and spec.origin is not None
    with open(spec.origin, encoding="utf-8") as f:
        used = imported_names(f.read()) & set(FORBIDDEN_STDLIB)
    assert not used, f"mockmcp/{name}.py imports {sorted(used)}: hand it in from the shell or the loader"


def test_the_source_check_sees_io_imports():
    assert imported_names("import os\ndef f():\n    from pathlib import Path\n") == {"os", "pathlib"}
    assert imported_names("from . import os_helpers\nimport json\n") == {"json"}


def test_the_core_modules_exist():
    import importlib.util

    for name in CORE:
        assert importlib.util.find_spec(f"mockmcp.{name}") is not None, name


@pytest.mark.parametrize("name", BLOCKED_EXAMPLES)
def test_the_blocker_catches_the_shell_and_the_loader(name, blocked_imports):
    assert "the sans-I/O core must not import" in blocked_imports[f"mockmcp.{name}"]


def test_all_core_modules_together_and_a_request_through_them():
    """Import every core module at once and run a request through the engine, still without them."""
    code = BLOCKER.format(forbidden=FORBIDDEN, module="mockmcp.core.connection").replace(
        'print("ok")',
        """
import json
for name in {core!r}:
    importlib.import_module("mockmcp." + name)
from mockmcp.scenario.model import base as model
from mockmcp.core.engine import Engine
from mockmcp.core.connection import Connection
class FixedRandom:
    def random(self): return 0.5
    def uniform(self, a, b): return a
scenario = model.Scenario(mockmcp=1, tools=[model.Tool(name="t", replies=[model.Rule(steps=[model.TextStep(text="{{{{ arguments.x }}}}")])])])
conn = Connection(Engine(scenario, state_key=b"k" * 32, rng=FixedRandom()))
meta = {{"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {{}}}}
req = {{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "t", "arguments": {{"x": "y"}}, "_meta": meta}}}}
(plan,) = conn.receive_data((json.dumps(req) + "\\n").encode())
print(json.loads(plan.actions[0].data)["result"]["content"][0]["text"])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
assert not loaded, loaded
""".format(core=CORE),
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "y"
