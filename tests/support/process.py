"""Spawning the mock from this checkout's interpreter (or through a warm server, when one runs for the suite)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from mockmcp.warm.paths import WARM_ARGV, prefix_from_env
from mockmcp.warm.refusals import APPLIED

# The pytest runs a test starts itself (pytester, the documentation's test snippets) test the
# mockmcp fixture; none uses pytest-trio, hypothesis or anyio's plugin, and pytest-trio imports all
# of hypothesis when it loads: about 2 CPU seconds of every such run, half its cost. Naming the
# plugins a run loads, rather than discovering them, also spares it rewriting the asserts of every
# module of the packages that register one (pyproject.toml says the same of the suite's own run).
# pytest-xdist stays for the runs that test the plugin under it.
LEAN_PYTEST_ADDOPTS = "--disable-plugin-autoload -p mockmcp -p xdist"


def mockmcp_prefix() -> list[str]:
    """What spawns the mock from this checkout's interpreter: the warm server's launcher when the
    run has one (the suite's default, tests/conftest.py), else ``python -m mockmcp``."""
    return prefix_from_env() or direct_cmd()


def mockmcp_cmd(*args: str) -> list[str]:
    return [*mockmcp_prefix(), *args]


def direct_cmd(*args: str) -> list[str]:
    """``python -m mockmcp ARGS``, a fresh interpreter whatever the run: for a test about what a
    direct spawn itself does (its imports, its start-up cache, its own argv), and for one that
    reads the mock's own process in /proc (its memory, its file descriptors): through the warm
    server the test's child is the launcher, and the mock a fork that maps the server's pages."""
    return [sys.executable, "-m", "mockmcp", *args]


def run_mock(*args: str, input: bytes = b"", timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(mockmcp_cmd(*args), input=input, capture_output=True, timeout=timeout)


def client_world(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """``env`` without the ``PYTHON*`` variables a warm server refuses a difference in (all but
    ``APPLIED``). The official clients spawn the mock with a whitelisted environment that has
    none, so a warm server meant to fork their spawns must have none either: started from the
    environment of a shell that sets ``PYTHONPATH`` or ``PYTHONWARNINGS``, it would rightly
    refuse every one of them, and a test that expects forks would depend on that shell."""
    return {k: v for k, v in env.items() if not k.startswith("PYTHON") or k in APPLIED}


def runtime_folder(kind: str = "mmw") -> Path:
    """A fresh 0700 folder for a warm server's socket, with a short path: a Unix socket's path is
    limited to 107 bytes, and pytest's temporary folders (``/tmp/pytest-of-USER/pytest-N/popen-gwK/
    test_a_long_name0/``) leave too little of it. The caller removes it (``shutil.rmtree``).

    Its name holds the run's id (``KIND-RUN-xxxxxxxx``): a warm server that a test started there
    and left running is found by the run's leak check (tests/conftest.py), and only by this run's."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"{kind}-{run_id()}-", dir="/tmp" if os.path.isdir("/tmp") else None))


def run_id() -> str:
    """This pytest run's id, from the leak check's marker (tests/conftest.py); "" outside a run."""
    tokens = os.environ.get("MOCKMCP_TEST_PROCS", "").split()
    return tokens[-1].partition(":")[0] if tokens else ""


@contextlib.contextmanager
def running_warm_server(extra: dict[str, str] | None = None) -> Iterator[WarmServer]:
    """A started warm server in a fresh short runtime folder (``extra``: variables set in its
    environment); stopped and removed afterwards."""
    server = WarmServer(runtime_folder(), extra)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.folder, ignore_errors=True)


class WarmServer:
    """A warm server of this checkout in its own runtime folder (``mockmcp warm start``), for tests
    that compare its spawns with direct ones: ``argv`` is the launcher's prefix, ``env`` the
    environment a spawn needs to find it (the suite's, in the clients' world: ``client_world``),
    ``forked_for(pid)`` the child its log says it forked."""

    def __init__(self, folder: Path, extra: dict[str, str] | None = None) -> None:
        self.folder = folder
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.env = {**client_world(os.environ), **(extra or {}), "MOCKMCP_WARM_DIR": str(folder)}
        self.env.pop(WARM_ARGV, None)
        self.direct = [sys.executable, "-m", "mockmcp"]
        self.argv: list[str] = json.loads(self.cli("argv").stdout)
        self.pid = 0

    def cli(self, action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.direct, "warm", action], env=self.env, capture_output=True, text=True, timeout=60)

    def start(self) -> int:
        proc = self.cli("start")
        assert proc.returncode == 0, proc.stderr
        self.pid = int(re.search(r"pid (\d+)", proc.stdout).group(1))  # type: ignore[union-attr]
        return self.pid

    def stop(self) -> None:
        self.cli("stop")

    def log(self) -> str:
        return "".join(p.read_text(errors="replace") for p in self.folder.glob("*.log"))

    def forked_for(self, launcher: int, timeout: float = 5.0) -> int | None:
        """The child the server forked for ``launcher`` (from its log), None if it forked none."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.search(rf"forked (\d+) for pid {launcher}\n", self.log())
            if found or time.monotonic() > deadline:
                return int(found.group(1)) if found else None
            time.sleep(0.01)

    def refused(self, launcher: int) -> str | None:
        found = re.search(rf"refused pid {launcher}: (.*)\n", self.log())
        return found.group(1) if found else None

    def children(self) -> list[int]:
        """The server's living children (zombies included: a leak until reaped)."""
        try:
            text = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text()
        except OSError:
            return []
        return [int(p) for p in text.split()]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def own_pid(pid: int) -> int:
    """``pid``, once it is checked to be the mock (or recorder) itself, for a test that reads its
    process in /proc: a warm launcher's memory and descriptors are its own, not the mock's, so
    such a test spawns with ``direct_cmd`` (an AssertionError says so when it did not)."""
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    assert b"launcher.main()" not in cmdline, f"pid {pid} is the warm launcher: spawn with direct_cmd"
    return pid
