"""The install lines of the README and docs/other-languages.md, from a clean environment: a
venv of its own and ``pip install 'git+URL'`` (here a ``git+file://`` URL of this checkout, so
pip clones the committed tree and builds it as it would from a remote), then ``mockmcp
--version`` from outside the checkout. That is what works on a stock Debian or Ubuntu, where a
system pip is refused (PEP 668): nothing but a venv and pip.

One install, cheap: the venv is made without pip and this venv's pip installs into it
(``--python``); the runtime dependencies come from this venv through a path entry (as in
tests/package/test_wheel.py), since pip resolving them from the index tests pip, not the line.
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


def test_pip_install_from_a_git_url_into_a_fresh_venv_gives_the_command(tmp_path: Path) -> None:
    venv = tmp_path / "mockmcp-venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check",
          "--no-deps", f"git+file://{ROOT}"], cwd=tmp_path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "test-venv-dependencies.pth").write_text("".join(f"{path}\n" for path in ours), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MOCKMCP")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    version = _run([str(venv / "bin" / "mockmcp"), "--version"], cwd=tmp_path, env=env)
    assert version.stdout.startswith("mockmcp "), version.stdout
    where = _run([str(python), "-c", "import mockmcp; print(mockmcp.__file__)"], cwd=tmp_path, env=env).stdout.strip()
    assert venv in Path(where).parents and ROOT not in Path(where).parents  # the git URL's build, not this checkout
