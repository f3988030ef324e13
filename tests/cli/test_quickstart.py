"""The README's test command is the whole story: CI runs exactly it, and it installs what it needs.

A fresh clone once failed the README's test command because only `.ci/run`
ran npm. Now `.ci/run` does machine setup and then the README's line, and the
suite installs the TypeScript client itself (tests/interop/tsclient.py), or fails
with one line naming Node.js and npm.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from interop import tsclient

ROOT = Path(__file__).resolve().parents[2]


def _quickstart() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start\n\n```sh template\n(.*?)```", readme, re.S)
    assert block, "README.md has no Quick start sh block"
    return block.group(1).splitlines()


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    install, tests = _quickstart()
    assert tests.endswith(".venv/bin/python -m pytest -q")
    script = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in script.splitlines() if "-m pytest" in line and not line.lstrip().startswith("#")]
    assert len(commands) == 1 and commands[0].startswith(tests + " "), commands
    assert "npm" not in script.replace("touches npm", "")  # the test command installs the TS client itself
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Python >= 3.11" in readme and "Node.js >= 20" in readme


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize("pytest_status", [0, 1, 5])
def test_ci_run_fails_when_pytest_fails_or_collects_nothing(tmp_path: Path, pytest_status: int) -> None:
    """`.ci/run` with a stand-in python3 whose venv's pytest exits with the given status."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "python3", "#!/bin/sh\nmkdir -p .venv/bin\n"
                f"printf '#!/bin/sh\\nexit 0\\n' > .venv/bin/pip\nprintf '#!/bin/sh\\nexit {pytest_status}\\n'"
                " > .venv/bin/python\nchmod +x .venv/bin/pip .venv/bin/python\n")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CI": "false"}
    proc = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == pytest_status, proc.stderr
    assert ("collected no tests" in proc.stderr) == (pytest_status == 5)


def _path_with(tmp_path: Path, **tools: str) -> str:
    """A PATH holding only stand-ins for the named tools (shell scripts with the given body)."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    for name, body in tools.items():
        _executable(bin_dir / name, f"#!/bin/sh\n{body}\n")
    return str(bin_dir)


def test_without_node_the_one_line_names_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path))
    with pytest.raises(tsclient.ClientUnavailable) as info:
        tsclient.check_node()
    text = str(info.value)
    assert text == tsclient.NEEDED + " (node and npm not on PATH)"
    assert text.startswith("Node.js >= 20 and npm are needed for the TypeScript interop tests: "
                           "apt-get install nodejs npm")


def test_an_old_node_is_named_in_the_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path, node="echo v18.19.0", npm="exit 0"))
    with pytest.raises(tsclient.ClientUnavailable, match=r"apt-get install nodejs npm \(found node v18.19.0\)$"):
        tsclient.check_node()
    monkeypatch.setenv("PATH", _path_with(tmp_path, node="echo v20.1.0", npm="exit 0"))
    tsclient.check_node()


def test_without_npm_the_one_line_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _path_with(tmp_path, node="echo v20.1.0"))
    with pytest.raises(tsclient.ClientUnavailable, match=r"\(npm not on PATH\)$"):
        tsclient.check_node()


@pytest.mark.interop
def test_npm_ci_installs_from_the_lockfile_once_and_again_when_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a copy of tests/interop/ts (the real one is in use by other tests): a real `npm ci`,
    then none while the stamp matches, then `npm ci` again for a changed lockfile (a stand-in
    npm that logs its call: one real install is the proof that it works, the rest is when)."""
    ts = tmp_path / "ts"
    ts.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(tsclient.TS_DIR / name, ts / name)
    installed = ts / "node_modules" / tsclient.TS_PACKAGE / "package.json"
    stamp = ts / "node_modules" / tsclient.STAMP

    tsclient.ensure(ts)
    assert json.loads(installed.read_text())["version"] == "2.4.0"
    lock = (ts / "package-lock.json").read_bytes()
    assert stamp.read_text().strip() == hashlib.sha256(lock).hexdigest()

    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", _path_with(tmp_path, npm=f'echo "$PWD $*" >> {log}') + ":" + os.environ["PATH"])
    tsclient._ready.discard(ts)  # as a new run would: the stamp matches, npm is not run
    tsclient.ensure(ts)
    assert not log.exists()

    tsclient._ready.discard(ts)
    (ts / "package-lock.json").write_bytes(lock + b"\n")  # a new lockfile: `npm ci` again
    tsclient.ensure(ts)
    assert log.read_text() == f"{ts} ci --no-audit --no-fund\n"
    assert stamp.read_text().strip() == hashlib.sha256(lock + b"\n").hexdigest()
