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


NEAR_MISSES = """mockmcp: 1
capabilities:
  tols: {listChanged: true}
  acme.example/tracing: {}
tools:
  - name: a
    inputSchema:
      type: object
      properties: {x: {typ: string, minLenght: 3}}
      requird: [x]
      additionalPropertes: false
      x-order: 1
    replies:
      - steps: [{result: {content: [{type: text, text: hi, anotations: {}}], isErorr: true, x-trace: 1}}]
methods:
  - method: tools/lst
    replies: [{steps: [{result: {tools: []}}]}]
  - method: notifications/poke
    replies: [{steps: [{text: ok}]}]
"""


def test_a_name_one_typo_from_the_protocols_is_a_warning_with_its_place(tmp_path):
    """Capabilities, result members, schema keywords and methods may be anything, so each of
    these loaded and silently did nothing (a capability never offered, a schema that checks
    nothing, a rule no request reaches). A name close to a defined one is now a warning naming
    it; a name far from every one (a custom capability, keyword, member or method) is left be."""
    path = scenario(tmp_path, NEAR_MISSES)
    status, errors, out = check(path)
    assert (status, errors) == (0, "")
    warned = [line.split(": warning: ")[0].removeprefix(path + ":") + " " + line.split("did you mean ")[1].split("?")[0]
              for line in out.splitlines() if ": warning: " in line]
    assert warned == [
        "3:3 'tools'",
        "9:24 'type'",
        "9:37 'minLength'",
        "10:7 'required'",
        "11:7 'additionalProperties'",
        "14:60 'annotations'",
        "14:78 'isError'",
        "16:5 'tools/list'",
    ]
    assert out.splitlines()[-1] == f"{path}: ok, 8 warnings"
    assert check("--strict", path)[0] == 1


def test_an_expectation_for_a_misspelt_method_names_the_method(tmp_path):
    path = scenario(tmp_path, "mockmcp: 1\ntools: [{name: a}]\nexpectations:\n  - {method: tools/cal, name: a}\n")
    assert check(path)[1] == (f"{path}:4:25: name applies only to tools/call and prompts/get, not 'tools/cal'; "
                              "did you mean 'tools/call'? (at $.expectations[0].name)\n")


def test_an_unusable_schema_is_refused_where_its_subschema_is(tmp_path):
    """A bad keyword deep in an inputSchema was reported at the inputSchema's own line: in a long
    schema, no help finding it. It is now reported at the subschema that holds it."""
    text = ("mockmcp: 1\ntools:\n  - name: a\n    inputSchema:\n      type: object\n      properties:\n"
            "        y: {type: string}\n        z:\n          prefixItems:\n            - minimum: '3'\n")
    path = scenario(tmp_path, text)
    status, errors, _ = check(path)
    assert status == 1
    assert errors.startswith(f"{path}:10:15: minimum must be a number, got '3' ")
    assert errors.rstrip().endswith("(at $.tools[0].inputSchema.properties.z.prefixItems[0])")
