"""Errors that help, through the real CLI: output and exit status.

A typo gets the closest name ("did you mean"), a tab in the indentation is
called that, and a file that cannot be read is named with the OS's reason,
without a position or a JSON path it does not have.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.process import run_mock


def check(*args: str) -> tuple[int, str, str]:
    """The status, the errors (stderr) and the verdict (stdout) of ``mockmcp check ARGS``."""
    proc = run_mock("check", *args)
    return proc.returncode, proc.stderr.decode(), proc.stdout.decode()


def scenario(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return str(path)


def test_an_unknown_key_suggests_the_closest(tmp_path):
    path = scenario(tmp_path, "mockmcp: 1\ntools:\n  - name: t\n    replys: []\n")
    assert check(path) == (1, f"{path}:4:5: unknown key 'replys'; did you mean 'replies'? (at $.tools[0].replys)\n", f"{path}: 1 error\n")


def test_an_unknown_key_far_from_any_is_just_unknown(tmp_path):
    path = scenario(tmp_path, "mockmcp: 1\ntools:\n  - name: t\n    zzzzqqq: 1\n")
    assert check(path) == (1, f"{path}:4:5: unknown key 'zzzzqqq' (at $.tools[0].zzzzqqq)\n", f"{path}: 1 error\n")


def test_an_unknown_step_suggests_the_closest_instead_of_listing_them_all(tmp_path):
    path = scenario(tmp_path, "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps: [{txt: hi}]\n")
    status, out, _ = check(path)
    assert status == 1
    assert out == f"{path}:5:17: unknown step 'txt'; did you mean 'text'? (at $.tools[0].replies[0].steps[0])\n"


def test_an_unknown_scenario_name_suggests_the_closest():
    assert check("defualt") == (1, "defualt: no such file or bundled scenario; did you mean 'default'?\n", "defualt: 1 error\n")
    proc = run_mock("run", "defualt")
    assert proc.returncode == 2 and proc.stdout == b""
    assert proc.stderr == b"defualt: no such file or bundled scenario; did you mean 'default'?\n"


def test_a_name_close_to_nothing_points_at_the_list():
    assert check("qqqqqqqqqq") == (1, "qqqqqqqqqq: no such file or bundled scenario (`mockmcp list` shows the bundled ones)\n", "qqqqqqqqqq: 1 error\n")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("mockmcp: 1\ntools:\n\t- name: t\n", "3:1"),
        ("mockmcp: 1\nserver:\n  name: a\n\tversion: b\n", "4:1"),
        ("mockmcp: 1\nserver:\n  name: a\n \tversion: b\n", "4:2"),
    ],
    ids=["tab-first", "tab-after-block", "space-then-tab"],
)
def test_a_tab_in_the_indentation_says_so(tmp_path, text, where):
    path = scenario(tmp_path, text)
    assert check(path) == (1, f"{path}:{where}: tab character in indentation; YAML indents with spaces (at $)\n", f"{path}: 1 error\n")


def test_a_missing_file_is_named_with_the_os_error(tmp_path):
    missing = str(tmp_path / "missing.yaml")
    assert check(missing) == (1, f"{missing}: cannot read: No such file or directory\n", f"{missing}: 1 error\n")


def test_an_unreadable_file_is_named_with_the_os_error(tmp_path):
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    assert check(str(folder)) == (1, f"{folder}: cannot read: Is a directory\n", f"{folder}: 1 error\n")
