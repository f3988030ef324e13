"""The install lines of the README and docs/other-languages.md, from a clean environment, with
a ``git+file://`` URL of this checkout (each tool clones the committed tree and builds it as it
would from a remote), then ``mockmcp --version`` from outside the checkout. These are what work
on a stock Debian or Ubuntu, where a system pip is refused (PEP 668):

- ``pipx install 'git+URL'`` and ``uvx --from 'git+URL' mockmcp``, exactly as written, with homes
  and caches of their own in a temporary folder: each resolves the runtime dependencies from
  the package index itself (pipx and uv are test extras, so the lines run wherever the suite does);
- a venv of its own and ``pip install 'git+URL'``: cheap here, the venv made without pip and
  this venv's pip installing into it (``--python``), the runtime dependencies from this venv
  through a path entry (as in tests/package/test_wheel.py), since pipx above already resolves
  them from the index.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.slow


def _run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _tool(name: str) -> str:
    """pipx or uv from this venv (test extras), where the suite's interpreter lives."""
    path = Path(sys.executable).parent / name
    assert path.exists(), f"{name} is a test extra: pip install -e '.[test]'"
    return str(path)


def _clean_env(tmp_path: Path) -> dict[str, str]:
    """The caller's environment without this venv, this checkout or a chosen mockmcp."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MOCKMCP")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != Path(sys.executable).parent)
    return env


def test_pipx_install_and_uvx_from_a_git_url_give_the_command(tmp_path: Path) -> None:
    env = _clean_env(tmp_path)
    env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"), PIPX_MAN_DIR=str(tmp_path / "man"),
               UV_CACHE_DIR=str(tmp_path / "uv-cache"), UV_TOOL_DIR=str(tmp_path / "uv-tools"))
    url = f"git+file://{ROOT}"
    _run([_tool("pipx"), "install", url], cwd=tmp_path, env=env)
    installed = _run([str(tmp_path / "bin" / "mockmcp"), "--version"], cwd=tmp_path, env=env)
    assert installed.stdout.startswith("mockmcp "), installed.stdout
    ran = _run([_tool("uvx"), "--from", url, "mockmcp", "--version"], cwd=tmp_path, env=env)
    assert ran.stdout.startswith("mockmcp "), ran.stdout
    assert installed.stdout == ran.stdout


def test_pip_install_from_a_git_url_into_a_fresh_venv_gives_the_command(tmp_path: Path) -> None:
    venv = tmp_path / "mockmcp-venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check",
          "--no-deps", f"git+file://{ROOT}"], cwd=tmp_path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "test-venv-dependencies.pth").write_text("".join(f"{path}\n" for path in ours), encoding="utf-8")
    env = _clean_env(tmp_path)
    version = _run([str(venv / "bin" / "mockmcp"), "--version"], cwd=tmp_path, env=env)
    assert version.stdout.startswith("mockmcp "), version.stdout
    where = _run([str(python), "-c", "import mockmcp; print(mockmcp.__file__)"], cwd=tmp_path, env=env).stdout.strip()
    assert venv in Path(where).parents and ROOT not in Path(where).parents  # the git URL's build, not this checkout
