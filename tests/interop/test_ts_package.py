"""The TypeScript package (packages/mockmcp-js) and the docs' TypeScript examples, in one go.

Its dev dependencies (typescript, vitest, @types/node, the official client 2.4.0) are installed
from the committed package-lock.json as the interop client's are (tests/interop/tsclient.py:
``npm ci`` once per lockfile, under a file lock; without Node and npm the tests fail with the
line naming what to install). Then, once each: the generated types are regenerated from the
Python side's schemas and compared; ``tsc --strict`` checks the package, its tests and the docs'
examples (extracted into test/docs/ by support.tsdocs); and one vitest run (at most 2 workers)
runs the package's tests and the docs' examples against the real mock, each failing vitest test
reported on a line of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from interop import tsclient
from support.process import client_world
from support.tsdocs import PACKAGE, write_examples

from mockmcp.cli.outputschemas import SCHEMAS

pytestmark = [pytest.mark.interop, pytest.mark.slow]
BIN = PACKAGE / "node_modules" / ".bin"


def _mockmcp() -> str:
    """The command the package finds through ``MOCKMCP``: this checkout's, from this interpreter."""
    script = Path(sys.executable).parent / "mockmcp"
    return str(script) if script.is_file() else f"{sys.executable} -m mockmcp"


@pytest.fixture(scope="module")
def package() -> dict[str, str]:
    """The package installed from its lockfile, and the docs' examples written into it."""
    try:
        tsclient.ensure(PACKAGE, "vitest")
    except tsclient.ClientUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    return write_examples()


@pytest.fixture(scope="module")
def vitest(package: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("vitest") / "results.json"
    # (the package's warm test forks the client's spawns: its server must share their world)
    env = {**client_world(os.environ), "MOCKMCP": _mockmcp()}
    proc = subprocess.run([str(BIN / "vitest"), "run", "--reporter=json", f"--outputFile={out}"], cwd=PACKAGE,
                          env=env, capture_output=True, text=True, timeout=900)
    assert out.is_file(), f"vitest wrote no results (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    results = json.loads(out.read_text())
    tests: dict[str, dict[str, Any]] = {}
    for file in results["testResults"]:
        rel = str(Path(file["name"]).relative_to(PACKAGE))
        for case in file["assertionResults"]:
            tests[f"{rel} > {case['fullName']}"] = case
        if not file["assertionResults"]:  # a file that failed to load
            tests[f"{rel} (did not load)"] = {"status": "failed", "failureMessages": [file.get("message", "")]}
    return {"tests": tests, "stderr": proc.stderr, "status": proc.returncode}


def _failures(tests: dict[str, dict[str, Any]]) -> list[str]:
    return [f"FAILED {name}: {' '.join(' '.join(case['failureMessages']).split())[:800]}"
            for name, case in tests.items() if case["status"] != "passed"]


def test_the_types_are_generated_from_the_published_schemas(package: dict[str, str], tmp_path: Path) -> None:
    files = []
    for name in ("report", "journal", "control"):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps(SCHEMAS[name]()))
    proc = subprocess.run(["node", str(PACKAGE / "scripts" / "gen-types.mjs"), *map(str, files)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    committed = (PACKAGE / "src" / "generated.ts").read_text()
    assert proc.stdout == committed, ("packages/mockmcp-js/src/generated.ts is stale: regenerate it with "
                                      "`npm run gen-types -- --mockmcp mockmcp > src/generated.ts` in the package")


def test_the_package_its_tests_and_the_docs_examples_compile_under_strict(package: dict[str, str]) -> None:
    proc = subprocess.run([str(BIN / "tsc"), "-p", "tsconfig.json", "--noEmit", "--strict", "--pretty", "false"],
                          cwd=PACKAGE, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


def test_the_package_tests_pass(vitest: dict[str, Any]) -> None:
    ours = {k: v for k, v in vitest["tests"].items() if not k.startswith("test/docs/")}
    assert len(ours) >= 6, sorted(vitest["tests"])
    failures = _failures(ours)
    assert not failures, "\n".join(failures)
    # vitest exits 1 on an error thrown outside any test (in a socket's event handler, say) while
    # every test passes, and its JSON report says nothing of it
    assert vitest["status"] == 0 or _failures(vitest["tests"]), (
        f"vitest exited {vitest['status']} with every test passed: an error outside the tests (an unhandled "
        "exception or rejection); `npx vitest run` in packages/mockmcp-js shows it")


def test_the_docs_typescript_examples_run(package: dict[str, str], vitest: dict[str, Any]) -> None:
    docs = {k: v for k, v in vitest["tests"].items() if k.startswith("test/docs/")}
    assert {k.split(" ")[0].removeprefix("test/docs/") for k in docs} == set(package), "an example ran no test"
    failures = _failures(docs)
    assert not failures, "\n".join(failures)
