"""Strict scenario loading: exact messages at FILE:LINE:COL, and every bundled scenario loads.

Each file in ``tests/data/broken/`` states what it gets wrong in a ``# broken:``
comment and the exact problem lines it must produce in ``# expect:`` comments
(``LINE:COL: message (at $.path)``, the file name is prepended by the test;
``{step_kinds}`` stands for the current list of step kinds).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from support.paths import ROOT, SCENARIOS
from support.messages import call

from mockmcp.scenario.loader import load, load_text
from mockmcp.scenario.model.catalog import STEP_KEYS
from mockmcp.scenario.problems import LoadError
from support.process import mockmcp_prefix

BROKEN = sorted((Path(__file__).parents[1] / "data" / "broken").glob("*.yaml"))
BUNDLED = sorted(SCENARIOS.glob("*.yaml"))


def expected_lines(path: Path) -> list[str]:
    out = []
    for ln in path.read_text().splitlines():
        if ln.startswith("# expect: "):
            text = ln[len("# expect: ") :].replace("{step_kinds}", ", ".join(STEP_KEYS))
            out.append(f"{path}:{text}")
    assert out, f"{path.name} has no '# expect:' line"
    return out


def problems_of(path: Path) -> list[str]:
    with pytest.raises(LoadError) as info:
        load(str(path), use_cache=False)
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_scenario_exact_messages(path):
    assert problems_of(path) == expected_lines(path)


def test_the_broken_set_covers_the_issue():
    names = {p.stem for p in BROKEN}
    for needed in [
        "unknown-key",
        "int-for-string",
        "string-for-int",
        "yes-not-bool",
        "on-not-bool",
        "date-stays-string",
        "duplicate-key",
        "bad-duration",
        "missing-required",
        "unknown-step",
        "template-syntax",
        "call-without-content",
        "input-required-non-mrtr",
        "alias-bomb",
        "infinity",
    ]:
        assert needed in names


def test_check_prints_exactly_the_problem_lines():
    paths = [str(p) for p in BROKEN]
    proc = subprocess.run([*mockmcp_prefix(), "check", *paths], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    expected = [ln for p in BROKEN for ln in expected_lines(p)]
    assert proc.stderr.splitlines() == expected  # the errors; stdout has a verdict per file
    assert proc.stdout.splitlines() == [f"{p}: {len(expected_lines(p))} error{'' if len(expected_lines(p)) == 1 else 's'}" for p in BROKEN]


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_scenario_loads(path):
    scenario, warnings = load(str(path), use_cache=False)
    assert [w for w in warnings if w.level == "error"] == []
    assert scenario.mockmcp == 1
    first = path.read_text().splitlines()[0]
    assert first.startswith("# "), f"{path.name} needs a header comment saying what it is for"


def test_check_accepts_every_bundled_scenario():
    proc = subprocess.run(
        [*mockmcp_prefix(), "check", *map(str, BUNDLED)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.splitlines() == [f"{p}: ok" for p in BUNDLED]  # no warning either


def test_bundled_scenarios_by_name():
    assert {p.stem for p in BUNDLED} >= {"default"}
    for p in BUNDLED:
        scenario, _ = load(p.stem, use_cache=False)
        assert scenario.mockmcp == 1


# ---------------------------------------------------------------- YAML 1.2 core schema, positively


def test_dates_and_yes_stay_strings_where_strings_are_wanted():
    scenario, _ = load_text(
        "mockmcp: 1\nprotocol: {versions: [2026-07-28]}\nserver: {name: yes, version: 2026-07-28, title: on}\n", "<t>"
    )
    assert scenario.protocol.versions == ["2026-07-28"]
    assert scenario.server.name == "yes" and scenario.server.title == "on"
    assert scenario.server.version == "2026-07-28"


def test_payload_values_keep_yaml_1_2_types():
    scenario, _ = load_text(
        "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n          - result: {content: [], structuredContent: {a: yes, b: no, c: 2026-07-28, d: 0x1f, e: 1.5, f: true, g: null}}\n",
        "<t>",
    )
    sc = scenario.tools[0].replies[0].steps[0].result["structuredContent"]
    assert sc == {"a": "yes", "b": "no", "c": "2026-07-28", "d": 31, "e": 1.5, "f": True, "g": None}


# The YAML 1.2.2 spec's core schema (example 10.9 and its tag resolution table), written
# out by hand as the oracle: both load paths take their scalar rules from one module
# (``scalars``), so comparing the paths with each other cannot find a wrong rule there.
SPEC_SCALARS = [
    ("null", None), ("Null", None), ("NULL", None), ("~", None), ("", None),
    ("true", True), ("True", True), ("TRUE", True), ("false", False), ("False", False), ("FALSE", False),
    ("0", 0), ("0o7", 7), ("0x3A", 58), ("-19", -19), ("+12", 12), ("0777", 777),
    ("0.", 0.0), ("-0.0", -0.0), (".5", 0.5), ("+12e03", 12000.0), ("-2E+05", -200000.0), ("1e3", 1000.0),
    # YAML 1.1's booleans, dates, sexagesimals, binary and underscores, and near misses: strings
    ("yes", "yes"), ("No", "No"), ("on", "on"), ("OFF", "OFF"), ("y", "y"), ("tRUE", "tRUE"), ("nULL", "nULL"),
    ("2001-12-14", "2001-12-14"), ("190:20:30", "190:20:30"), ("0b101", "0b101"), ("1_000", "1_000"),
    ("0O7", "0O7"), ("0X3A", "0X3A"), ("-0x1", "-0x1"), ("0o8", "0o8"), ("0x", "0x"), ("-.nan", "-.nan"), ("1e", "1e"),
]
SCALARS_SCENARIO = "mockmcp: 1\n{extra}tools:\n  - name: t\n    replies:\n      - steps:\n          - result:\n              content: []\n              structuredContent:\n{values}"


@pytest.mark.parametrize("path", ["fast", "plain"])
def test_scalars_resolve_as_the_yaml_1_2_core_schema_says(tmp_path, path):
    """Through a real process, on each load path (a literal block scalar sends a file to the
    plain path): every spelling of the spec's table gives its value, type for type."""
    values = "".join(f"                k{i}: {text}\n" for i, (text, _) in enumerate(SPEC_SCALARS))
    extra = "" if path == "fast" else "description: |\n  a literal block: the fast path declines the file\n"
    scenario = tmp_path / "scalars.yaml"
    scenario.write_text(SCALARS_SCENARIO.format(extra=extra, values=values))
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mockmcp", "run", str(scenario), "--no-cache"],
        input=(json.dumps(call(1, "t")) + "\n").encode(), capture_output=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {row.split("|")[-1].strip() for row in proc.stderr.decode().splitlines() if row.startswith("import time:")}
    assert ("yaml" in imported) == (path == "plain")
    got = json.loads(proc.stdout)["result"]["structuredContent"]
    assert [(text, repr(got[f"k{i}"])) for i, (text, _) in enumerate(SPEC_SCALARS)] == [(t, repr(v)) for t, v in SPEC_SCALARS]


@pytest.mark.parametrize("text", [".inf", "-.Inf", "+.INF", ".nan", ".NaN", ".NAN"])
def test_the_spec_infinities_and_nans_are_refused_with_their_place(text):
    """The spec's core schema reads them as floats; JSON cannot carry them, so the file is refused."""
    assert one_problem(result_with(text)) == (
        f"s.yaml:6:58: {text} is not a JSON number (at $.tools[0].replies[0].steps[0].result.structuredContent.a)"
    )


def test_durations():
    scenario, _ = load_text(
        "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps: [{sleep: 250ms}, {sleep: 1.5s}, {sleep: 2m}, {text: x}]\n",
        "<t>",
    )
    assert [s.sleep.seconds for s in scenario.tools[0].replies[0].steps[:3]] == [0.25, 1.5, 120.0]


def test_raw_step_allows_a_deliberately_invalid_payload():
    load_text(
        "mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps: [{raw: {jsonrpc: '2.0', id: '{{ id }}', result: {}}}, {hang: true}]\n",
        "<t>",
    )


def test_a_scenario_that_is_not_a_mapping():
    with pytest.raises(LoadError) as info:
        load_text("- 1\n- 2\n", "f.yaml")
    assert [str(p) for p in info.value.problems] == ["f.yaml:1:1: a scenario must be a mapping, got a list (at $)"]


def test_yaml_syntax_error_has_a_position():
    with pytest.raises(LoadError) as info:
        load_text("mockmcp: 1\ntools: [\n", "f.yaml")
    (problem,) = info.value.problems
    assert problem.file == "f.yaml" and problem.line >= 2 and "YAML syntax error" in problem.message


def test_unknown_bundled_name():
    with pytest.raises(LoadError) as info:
        load("no-such-scenario", use_cache=False)
    assert str(info.value) == "no-such-scenario: no such file or bundled scenario (`mockmcp list` shows the bundled ones)"


# ---------------------------------------------------------------- libyaml is optional


@pytest.mark.parametrize("path", BUNDLED, ids=[p.stem for p in BUNDLED])
def test_bundled_scenarios_read_the_same_without_libyaml(path):
    """PyYAML's pure-Python loader (and stricter editors) must read every bundled file,
    and read it exactly as libyaml does (``message: Name?`` in a flow mapping did not)."""
    text = path.read_text()
    assert yaml.load(text, Loader=yaml.SafeLoader) == yaml.load(text, Loader=yaml.CSafeLoader)


LOAD_WITHOUT_LIBYAML = """
import sys, yaml
del yaml.CSafeLoader  # as on a machine where PyYAML was built without libyaml
from mockmcp.scenario import loader
from mockmcp.scenario import plainload
assert plainload._BaseLoader is yaml.SafeLoader
scenario, _ = loader.load(sys.argv[1], use_cache=False)
print(len(scenario.tools))
"""


def test_the_loader_falls_back_to_the_pure_python_parser():
    proc = subprocess.run(
        [sys.executable, "-c", LOAD_WITHOUT_LIBYAML, "conformance-no-leak"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == len(load("conformance-no-leak", use_cache=False)[0].tools) > 0


# ---------------------------------------------------------------- values run could not send


def one_problem(text: str) -> str:
    with pytest.raises(LoadError) as info:
        load_text(text, "s.yaml")
    (problem,) = info.value.problems
    return str(problem)


def result_with(value: str) -> str:
    return f"mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps:\n          - result: {{content: [], structuredContent: {{a: {value}}}}}\n"


@pytest.mark.parametrize("literal", ["1e999", "-1e400", "1" + "0" * 400 + ".0"])
def test_a_float_literal_that_would_be_infinity_is_refused(literal):
    assert one_problem(result_with(literal)) == (
        f"s.yaml:6:58: {literal if len(literal) <= 20 else literal[:8] + '...' + literal[-8:] + f' ({len(literal)} characters)'}"
        " is too large for a JSON number (it would be infinity) (at $.tools[0].replies[0].steps[0].result.structuredContent.a)"
    )


@pytest.mark.parametrize("literal", ["9" * 4301, "-" + "9" * 4301, "1" * 5000, "0x" + "f" * 4000, "9" * 100_000])
def test_an_integer_past_the_digit_limit_is_refused(literal):
    msg = one_problem(result_with(literal))
    assert msg.startswith("s.yaml:6:58: integer ") and "has more than 4300 digits (at $.tools[0]" in msg, msg


def test_the_longest_integer_loads_and_encodes():
    scenario, _ = load_text(result_with("9" * 4300), "s.yaml")
    value = scenario.tools[0].replies[0].steps[0].result["structuredContent"]["a"]
    assert json.dumps(value) == "9" * 4300


def test_nesting_is_bounded():
    deep = "[" * 150 + "]" * 150
    msg = one_problem(f"mockmcp: 1\ncapabilities: {{a: {deep}}}\n")
    assert msg.startswith("s.yaml:2:") and "nested more than 100 levels deep" in msg


def test_a_duration_too_long_for_a_float_is_refused():
    msg = one_problem("mockmcp: 1\ntools:\n  - name: t\n    replies:\n      - steps: [{sleep: " + "9" * 400 + "s}, {text: x}]\n")
    assert "is too long to be a number" in msg and "(at $.tools[0].replies[0].steps[0].sleep)" in msg


def test_broken_files_are_in_the_repo():
    assert BROKEN and all(p.is_relative_to(ROOT) for p in BROKEN)


def _unreadable(folder: Path, kind: str) -> str:
    """A resource ``file:`` reference in ``folder`` that cannot be served, of the given kind."""
    import os
    import socket

    if kind == "the folder itself":
        return "."
    if kind == "a folder":
        (folder / "sub").mkdir()
        return "sub"
    if kind == "a missing file":
        return "missing.txt"
    if kind == "a FIFO":  # (opening it for reading would wait for a writer forever)
        os.mkfifo(folder / "fifo")
        return "fifo"
    if kind == "a socket":
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(folder / "sock"))
        return "sock"
    if kind == "a symlink loop":
        (folder / "loop").symlink_to("loop")
        return "loop"
    assert kind == "a name too long"
    return "x" * 300


@pytest.mark.parametrize(
    "kind", ["the folder itself", "a folder", "a missing file", "a FIFO", "a socket", "a symlink loop", "a name too long"]
)
def test_a_resource_file_that_cannot_be_read_is_one_located_line_from_check_and_run(tmp_path, kind):
    """Never a traceback (a folder once raised IsADirectoryError from both), never a hang (a FIFO):
    ``check`` prints the located problem (exit 1, as for every invalid scenario) and ``run``
    refuses to start with it on stderr (exit 2)."""
    ref = _unreadable(tmp_path, kind)
    path = tmp_path / "s.yaml"
    path.write_text(f"mockmcp: 1\nresources:\n  - uri: file:///x\n    name: x\n    file: {json.dumps(ref)}\n")
    where = f"{path}:5:5: "
    checked = subprocess.run([*mockmcp_prefix(), "check", str(path)], capture_output=True, timeout=60)
    assert b"Traceback" not in checked.stderr, checked.stderr.decode()
    assert checked.returncode == 1, checked.stderr.decode()
    out = checked.stderr.decode().splitlines()
    assert checked.stdout.decode() == f"{path}: 1 error\n"
    assert len(out) == 1 and out[0].startswith(where) and out[0].endswith("(at $.resources[0].file)"), out
    run = subprocess.run(
        [*mockmcp_prefix(), "run", str(path)], input=b'{"jsonrpc":"2.0","id":1,"method":"server/discover"}\n',
        capture_output=True, timeout=60,
    )
    err = run.stderr.decode().splitlines()
    assert run.returncode == 2 and run.stdout == b"", run.stderr.decode()
    assert len(err) == 1 and err[0] == out[0], err
