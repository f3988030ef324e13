"""A control socket path longer than the system allows is refused up front with the limit and the
length named (macOS temporary folders alone pass 104 bytes), never with bind()'s bare
"AF_UNIX path too long", which has no errno and used to print as "cannot listen on PATH: None"."""

from __future__ import annotations

import subprocess
from pathlib import Path

from support.process import mockmcp_cmd

from mockmcp.shells.control import MAX_SOCKET_PATH


def test_a_too_long_control_path_names_the_limit_and_its_length(tmp_path: Path) -> None:
    folder = tmp_path / ("d" * 60) / ("e" * 60)
    folder.mkdir(parents=True)
    path = str(folder / "control.sock")
    size = len(path.encode())
    assert size > MAX_SOCKET_PATH
    proc = subprocess.run(mockmcp_cmd("run", "default", "--control", path), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"at most {MAX_SOCKET_PATH} bytes" in proc.stderr and f"this one has {size}" in proc.stderr, proc.stderr
    assert "None" not in proc.stderr
    assert list(folder.iterdir()) == []  # nothing bound, no temporary name left behind
