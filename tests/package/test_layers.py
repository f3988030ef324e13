"""The layers are the package's folders, and a contract in pyproject.toml enforces them.

``lint-imports`` (import-linter) reads ``[tool.importlinter]``: a layers contract (each folder
imports only the folders below it), a forbidden contract that keeps I/O, time, randomness and the
shells' libraries out of the sans-I/O modules, and one that keeps the control client standalone.
This module runs it, shows it can fail, and adds what import-linter does not check: no import
cycle between modules, and no module outside a layer folder but the public entry points.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
from support.paths import ROOT

PUBLIC = {"mockmcp", "mockmcp.__main__", "mockmcp.api", "mockmcp.controlclient", "mockmcp.mcp_tasks", "mockmcp.pytest_plugin"}
LAYERS = {"wire", "scenario", "core", "shells", "sessiondir", "record", "verify", "launch", "warm", "cli"}


def lint(config: Path) -> subprocess.CompletedProcess[str]:
    lint_imports = Path(sys.executable).with_name("lint-imports")
    return subprocess.run([str(lint_imports), str(config), "--no-cache"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_the_import_contracts_hold() -> None:
    proc = lint(ROOT / "pyproject.toml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Contracts: 4 kept, 0 broken." in proc.stdout


def test_the_contracts_catch_an_import_against_the_layers(tmp_path: Path) -> None:
    """The same contracts with scenario and core swapped: the core's imports of the scenario model break them."""
    text = (ROOT / "pyproject.toml").read_text()
    swapped = text.replace('    "mockmcp.core",\n    "mockmcp.scenario",\n', '    "mockmcp.scenario",\n    "mockmcp.core",\n')
    assert swapped != text
    (tmp_path / "pyproject.toml").write_text(swapped)
    proc = lint(tmp_path / "pyproject.toml")
    assert proc.returncode != 0
    assert "mockmcp.core is not allowed to import mockmcp.scenario" in proc.stdout


def graph() -> grimp.ImportGraph:
    return grimp.build_graph("mockmcp", exclude_type_checking_imports=True, cache_dir=None)


def test_no_import_cycle_between_modules() -> None:
    """Tarjan's strongly connected components over the module graph (imports under
    ``if TYPE_CHECKING:`` left out: they never run): every component is one module."""
    g = graph()
    modules = sorted(g.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(root: str) -> None:
        work = [(root, iter(sorted(g.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(g.find_modules_directly_imported_by(nxt)))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))

    for m in modules:
        if m not in index:
            visit(m)
    # A package imports nothing of its own (its __init__ is a docstring), so a package never closes a cycle.
    assert not cycles, f"import cycles: {cycles}"


def test_the_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyc import a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        g = grimp.build_graph("cyc", cache_dir=None)
    finally:
        sys.path.remove(str(tmp_path))
    assert g.find_modules_directly_imported_by("cyc.a") == {"cyc.b"}
    assert g.find_modules_directly_imported_by("cyc.b") == {"cyc.a"}  # a function-level import counts


def test_every_module_is_in_a_layer_folder_or_public() -> None:
    stray = sorted(m for m in graph().modules if m not in PUBLIC and m.split(".")[1] not in LAYERS)
    assert not stray, f"modules outside the layer folders: {stray}"


def test_the_layers_contract_names_every_layer_folder() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layers,) = [c for c in config["contracts"] if c["type"] == "layers"]
    named = {part.strip().split(".")[1] for layer in layers["layers"] for part in layer.split("|")}
    folders = {p.name for p in (ROOT / "mockmcp").iterdir() if (p / "__init__.py").exists()}
    assert folders == LAYERS
    assert LAYERS <= named
