"""``mypy --strict`` over the package, as configured in pyproject.toml ([tool.mypy]).

Run by the README's test command (and so by CI): a type error anywhere in
``mockmcp/`` fails the suite.
"""

from __future__ import annotations

import subprocess
import sys

from support.paths import ROOT


def test_the_package_is_mypy_strict_clean() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", "/dev/null"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    assert "Success: no issues found" in proc.stdout


def test_the_package_ships_its_types() -> None:
    assert (ROOT / "mockmcp" / "py.typed").is_file()


def test_the_public_api_is_curated_and_every_name_resolves() -> None:
    import mockmcp

    assert set(mockmcp.__all__) == {
        "__version__", "MockServer", "prepare", "ReportMissing", "load", "load_text",
        "LoadError", "Problem", "Connection", "Engine", "new_engine",
        "AsyncControl", "SyncControl", "ControlError", "WaitTimedOut", "NotAnAnswer",
    }
    for name in mockmcp.__all__:
        assert getattr(mockmcp, name) is not None, name


def test_importing_the_package_imports_nothing_heavy() -> None:
    code = "import sys, mockmcp; print(sorted(m for m in ('trio', 'yaml', 'cattrs', 'subprocess', 'mcp') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
