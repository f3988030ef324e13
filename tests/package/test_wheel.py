"""The built wheel ships the bundled scenarios: build it, install it in a fresh venv, run one by name.

The editable install finds scenarios in the checkout, so only this test proves the package
data reaches users. The wheel is built by pip (its build backend in an isolated environment,
as a user's pip would); the venv is made without pip and the wheel installed into it by this
venv's pip (``--python``, so its scripts name the new venv's interpreter). Its runtime
dependencies are this venv's, reached by a path entry (a ``.pth`` line adds the directory
alone: this venv's own ``.pth`` files, the editable install among them, are not run, so the
checkout stays out of reach); a pip resolving and installing them in the venv cost most of
the test's time and checks pip, not the wheel.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.paths import ROOT
from support.messages import line, request

pytestmark = pytest.mark.slow


def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel built from this checkout installed (its bin directory)."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)])
    (wheel,) = dist.glob("mockmcp-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--disable-pip-version-check",
         "--no-deps", str(wheel)])
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    ours = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "test-venv-dependencies.pth").write_text("".join(f"{path}\n" for path in ours), encoding="utf-8")
    return venv / "bin"


def env_outside_checkout(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # a fresh load cache
    return env


def test_installed_package_is_the_wheel_not_the_checkout(installed, tmp_path):
    proc = run([str(installed / "python"), "-c", "import mockmcp, sys; print(mockmcp.__file__)"], cwd=tmp_path, env=env_outside_checkout(tmp_path))
    location = Path(proc.stdout.strip())
    assert installed.parent in location.parents and ROOT not in location.parents


def test_wheel_runs_a_bundled_scenario_by_name(installed, tmp_path, schema):
    sent = [request(1, "server/discover"), request(2, "tools/call", {"name": "echo", "arguments": {"text": "from the wheel"}})]
    proc = subprocess.run(
        [str(installed / "mockmcp"), "run", "default"],
        input=b"".join(line(m) for m in sent),
        capture_output=True,
        timeout=60,
        cwd=tmp_path,
        env=env_outside_checkout(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines(keepends=True)
    assert len(lines) == 2
    discover = schema.check_line(lines[0], "server/discover")
    schema.check(discover, "server/discover")
    assert discover["result"]["supportedVersions"] == ["2026-07-28"]
    assert discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mockmcp-default"
    echo = schema.check_line(lines[1], "tools/call")
    assert echo["result"]["content"][0]["text"] == "from the wheel"


def test_wheel_lists_and_checks_every_bundled_scenario(installed, tmp_path):
    env = env_outside_checkout(tmp_path)
    listed = run([str(installed / "mockmcp"), "list"], cwd=tmp_path, env=env)
    names = [row.split()[0] for row in listed.stdout.splitlines()]
    assert names == sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml"))
    run([str(installed / "mockmcp"), "check", *names], cwd=tmp_path, env=env)
    # and the demo works from the installed package
    demo = run([str(installed / "mockmcp"), "demo"], cwd=tmp_path, env=env)
    assert "Hello, mockmcp!" in demo.stdout
