"""The suite's own check that no test leaves a process behind (tests/conftest.py), run on a pytest
of its own: a test that leaks a child, one that leaks an orphan (its parent exited, so it is no
longer a descendant), one that leaks a warm server (in a session of its own, without the marker in
its environment), and one whose child is merely slow to exit; once alone, once under xdist."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.process import LEAN_PYTEST_ADDOPTS, running_warm_server

LEAKY = '''
import os, subprocess, sys

def _note(pid):
    with open(os.environ["LEAK_PIDS"], "a") as f:
        f.write(f"{pid}\\n")

def test_leaks_a_child():
    _note(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "leaked-child"]).pid)

def test_leaks_an_orphan():
    shell = f"{sys.executable} -c 'import time; time.sleep(120)' leaked-orphan >/dev/null 2>&1 & echo $!"
    _note(subprocess.run(["sh", "-c", shell], capture_output=True, text=True, check=True).stdout.strip())

def test_child_slow_to_exit():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)", "slow-exit"])

def test_leaks_a_warm_server():
    # `warm start` gives its server a minimal environment (no marker) in a session of its own
    import glob
    from support.process import runtime_folder
    folder = str(runtime_folder())
    with open(os.environ["LEAK_PIDS"] + ".folders", "a") as f:
        f.write(folder + "\\n")
    subprocess.run([sys.executable, "-m", "mockmcp", "warm", "start"], env={**os.environ, "MOCKMCP_WARM_DIR": folder},
                   check=True, capture_output=True)
    [pidfile] = glob.glob(folder + "/*.pid")
    _note(open(pidfile).read().strip())
'''


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return stat[stat.rindex(b")") + 2:][:1] not in (b"Z", b"X")


@pytest.mark.parametrize("workers", ["0", "1"], ids=["one-process", "xdist"])
def test_a_leaked_process_fails_the_run_is_named_and_killed(tmp_path, workers):
    (tmp_path / "test_leaky.py").write_text(LEAKY)
    pids_file = tmp_path / "pids"
    # one run with hypothesis's plugin loaded before the conftest, as in the suite (so it reports
    # after the conftest): it reads every entry of the terminal's stats as a report, the leaked
    # processes' included
    first = ["-p", "hypothesispytest"] if workers == "0" else []
    env = {**os.environ, "LEAK_PIDS": str(pids_file), "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS,
           "PYTHONPATH": str(Path(__file__).parents[1])}
    # beside it, a warm server of this (outer) run, as another worker's test may have: not the inner run's
    with running_warm_server() as other:
        try:
            proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *first, "-p",
                                   "conftest", "--direct-spawn", "-n", workers, "test_leaky.py"],
                                  cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
            out = proc.stdout + proc.stderr
            assert proc.returncode == 1, out
            assert "processes left behind by the tests (killed)" in out and "4 passed, 3 leaked" in out, out
            assert "leaked-child" in out and "leaked-orphan" in out and "slow-exit" not in out, out
            assert "mockmcp warm serve" in out and f"pid {other.pid}:" not in out, out
            pids = [int(p) for p in pids_file.read_text().split()]
            assert len(pids) == 3
            deadline = time.monotonic() + 10  # killed; init reaps them once their pytest has exited
            while any(map(_alive, pids)) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert not any(map(_alive, pids)) and _alive(other.pid)
        finally:
            for pid in map(int, pids_file.read_text().split() if pids_file.exists() else []):
                if _alive(pid) and (b"leaked-" in Path(f"/proc/{pid}/cmdline").read_bytes()
                                    or b"warm\0serve" in Path(f"/proc/{pid}/cmdline").read_bytes()):
                    os.kill(pid, 9)
            folders = Path(f"{pids_file}.folders")
            for folder in folders.read_text().split() if folders.exists() else []:
                shutil.rmtree(folder, ignore_errors=True)
