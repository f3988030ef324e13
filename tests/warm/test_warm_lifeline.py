"""``mockmcp warm start --lifeline FD``: a warm server tied to whoever started it, from any language.

The caller keeps one end of a pipe (or a socket pair) and gives the other as FD; the server stops,
its mocks with it, and removes its folder at that descriptor's end of file, which the kernel brings
when the caller ends however it ends. The TypeScript package's ``startWarmServer`` is built on it.
A descriptor the server could not wait on is refused before anything starts: a regular file or
/dev/null made ``warm serve --lifeline`` crash after it had written its pid file."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.messages import discover, line
from support.process import alive, client_world, direct_cmd, gone_within, runtime_folder

from mockmcp.warm.paths import WARM_ARGV

DISCOVER = line(discover(1))


@pytest.fixture
def folder() -> Iterator[Path]:
    path = runtime_folder()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _env(folder: Path) -> dict[str, str]:
    env = {**client_world(os.environ), "MOCKMCP_WARM_DIR": str(folder)}
    env.pop(WARM_ARGV, None)
    return env


def test_a_start_tied_to_a_killed_caller_takes_the_server_its_mocks_and_its_folder(folder: Path) -> None:
    env = _env(folder)
    read_end, write_end = os.pipe()
    # the caller: it alone holds the write end, as a test runner's process would
    caller = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], pass_fds=(write_end,))
    os.close(write_end)
    try:
        started = subprocess.run([*direct_cmd("warm", "start", "--lifeline", str(read_end))], env=env, pass_fds=(read_end,),
                                 capture_output=True, text=True, timeout=60)
        os.close(read_end)
        assert started.returncode == 0, started.stderr
        server = int(re.search(r"pid (\d+)", started.stdout).group(1))  # type: ignore[union-attr]
        argv = json.loads(subprocess.run(direct_cmd("warm", "argv"), env=env, capture_output=True, text=True,
                                         timeout=60, check=True).stdout)
        mock = subprocess.Popen([*argv, "run", "default"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert mock.stdin and mock.stdout
        mock.stdin.write(DISCOVER)
        mock.stdin.flush()
        assert json.loads(mock.stdout.readline())["id"] == 1
        log = "".join(p.read_text() for p in folder.glob("*.log"))
        forked = int(re.search(rf"forked (\d+) for pid {mock.pid}\n", log).group(1))  # type: ignore[union-attr]
        assert alive(server) and alive(forked)
    finally:
        caller.send_signal(signal.SIGKILL)
        caller.wait(30)
    assert gone_within(server, 20) and gone_within(forked, 20), (alive(server), alive(forked))
    mock.wait(20)  # (its launcher ends with the mock, as the server stopped it)
    mock.stdin.close()
    mock.stdout.close()
    assert gone_within(server, 0) and not folder.exists()


def test_a_start_that_would_not_tie_the_running_server_is_refused(folder: Path) -> None:
    env = _env(folder)
    first = subprocess.run(direct_cmd("warm", "start"), env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0, first.stderr
    pid = int(re.search(r"pid (\d+)", first.stdout).group(1))  # type: ignore[union-attr]
    try:
        read_end, write_end = os.pipe()
        try:
            proc = subprocess.run(direct_cmd("warm", "start", "--lifeline", str(read_end)), env=env, pass_fds=(read_end,),
                                  capture_output=True, text=True, timeout=60)
        finally:
            os.close(read_end)
            os.close(write_end)
        assert proc.returncode == 1 and proc.stdout == "", proc
        assert proc.stderr == (f"mockmcp warm: a warm server already runs in {folder} (pid {pid}), not tied to this"
                               " lifeline; give this start a folder of its own (MOCKMCP_WARM_DIR)\n")
        assert alive(pid)
    finally:
        subprocess.run(direct_cmd("warm", "stop"), env=env, capture_output=True, timeout=60)
    assert gone_within(pid, 10)


def test_of_two_tied_starts_at_once_one_wins_and_the_other_is_refused(folder: Path) -> None:
    """The loser's own server goes (as for any start that lost the race); answering with the
    winner's pid would tell the loser that a server it cannot stop is tied to it."""
    env = _env(folder)
    pipes = [os.pipe() for _ in range(2)]
    starts = [subprocess.Popen(direct_cmd("warm", "start", "--lifeline", str(read_end)), env=env, pass_fds=(read_end,),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for read_end, _ in pipes]
    outs = [proc.communicate(timeout=60) for proc in starts]
    for read_end, _ in pipes:
        os.close(read_end)
    held = {write_end for _, write_end in pipes}
    try:
        assert sorted(proc.returncode for proc in starts) == [0, 1], outs
        won = [proc.returncode for proc in starts].index(0)
        server = int(re.search(r"pid (\d+)", outs[won][0]).group(1))  # type: ignore[union-attr]
        assert "not tied to this lifeline" in outs[1 - won][1]
        os.close(pipes[1 - won][1])
        held.discard(pipes[1 - won][1])
        time.sleep(0.3)
        assert alive(server)  # the loser's end tied nothing
    finally:
        for write_end in held:  # (the winner's: its server stops)
            os.close(write_end)
    assert gone_within(server, 20)
    deadline = time.monotonic() + 10
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not folder.exists()


@pytest.mark.parametrize("action", ["start", "serve"])
def test_a_lifeline_the_server_could_not_wait_on_is_refused_before_anything_starts(folder: Path, action: str,
                                                                                  tmp_path: Path) -> None:
    env = _env(folder)
    regular = tmp_path / "file"
    regular.write_text("x")
    cases = {
        "99": ("", "not an open descriptor of this process"),
        "-4": ("", "not an open descriptor of this process"),
        "1": ("", "a standard stream; give a descriptor of its own, 3 or more"),
        "regular file": (str(regular), "not a pipe or a socket (a pipe's read end, or a socket whose other end the caller holds)"),
        "/dev/null": (os.devnull, "not a pipe or a socket (a pipe's read end, or a socket whose other end the caller holds)"),
    }
    for name, (path, reason) in cases.items():
        fds: tuple[int, ...] = ()
        fd = name
        if path:
            opened = os.open(path, os.O_RDONLY)
            fds, fd = (opened,), str(opened)
        try:
            proc = subprocess.run(direct_cmd("warm", action, "--lifeline", fd), env=env, pass_fds=fds,
                                  capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        finally:
            for opened in fds:
                os.close(opened)
        assert (proc.returncode, proc.stderr) == (2, f"mockmcp warm: --lifeline {fd}: {reason}\n"), (name, proc.stderr)
        assert not list(folder.glob("*.sock")) and not list(folder.glob("*.pid")), name
