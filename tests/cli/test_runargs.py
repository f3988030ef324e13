"""``mockmcp run``'s command line: argparse, built from the one table ``runargs.RUN_OPTIONS``.

argparse reads every command line. A hand-written reader of a spawn's usual
lines used to run beside it; it saved too small a share of a warm spawn to keep
(docs/performance.md), so the forms it read are held here against a model of the
table instead: ``run SCENARIO`` with options written ``--name VALUE`` or
``--flag``, in any order, each value one its converter accepts, must give the
values the table says (the default, the converted value, the last one written, or
every one for a repeatable option). The command line costs a spawn argparse and
gettext and nothing more, and its mistakes are one line and status 2.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.process import direct_cmd, mockmcp_cmd
from hypothesis import given, settings, strategies as st

from mockmcp.cli.main import _parser
from mockmcp.cli.runoptions import LOG_LEVELS, RUN_OPTIONS, Option, refusal

_PARSER = _parser("run")  # built once: parse_args leaves a parser as it was

# ------------------------------------------------------------------ a model of the table


def _expected(argv: list[str]) -> dict[str, Any]:
    """What ``run`` must read from ``argv`` (``run`` + a scenario + ``--name VALUE``/``--flag``), by the table."""
    by_flag = {o.flag: o for o in RUN_OPTIONS}
    values: dict[str, Any] = {"command": "run", "scenario": None}
    values.update({o.dest: o.default for o in RUN_OPTIONS})
    words = iter(argv[1:])
    for word in words:
        option = by_flag.get(word)
        if option is None:
            values["scenario"] = word
        elif option.kind == "flag":
            values[option.dest] = True
        else:
            text = next(words)
            value = option.convert(text) if option.convert is not None else text
            values[option.dest] = [*(values[option.dest] or ()), value] if option.kind == "append" else value
    return values


# Values as spawns write them: never starting with "-" (argparse would take those for an option).
_free = st.text(st.characters(blacklist_categories=("Cs",)), max_size=10).filter(lambda t: not t.startswith("-"))
_count = st.integers(min_value=0, max_value=10**12)
_number = st.one_of(
    _count.map(str),
    st.floats(min_value=0, max_value=1e9, allow_nan=False).map(repr),
    st.sampled_from(["0", "0.5", "1e3", " 2 ", "1_0", "0.000001", "15"]),
)
_positive_number = _number.filter(lambda t: float(t) > 0)
_host = st.sampled_from(["", "127.0.0.1:", "localhost:", "[::1]:", "127.3.2.1:", "0.0.0.0:", "example.com:"])
_address = st.builds(lambda host, port: host + str(port), _host, st.integers(min_value=0, max_value=65535))


def _value(option: Option) -> st.SearchStrategy[str]:
    match option.convert.__name__ if option.convert is not None else None:
        case None:
            return st.sampled_from(LOG_LEVELS) if option.choices is not None else _free
        case "non_negative_float":
            return _number
        case "positive_float":
            return _positive_number
        case "int":
            return _count.map(str)
        case "positive_int":
            return _count.filter(bool).map(str)
        case "http_address":
            return _address
        case "path":
            return _free.filter(bool)
    raise AssertionError(f"no generator for {option.flag}'s values")


def _words(option: Option) -> st.SearchStrategy[list[str]]:
    if option.kind == "flag":
        return st.just([option.flag])
    return _value(option).map(lambda text: [option.flag, text])


_option_words = st.one_of(*(_words(o) for o in RUN_OPTIONS))


@st.composite
def _spawn_lines(draw: st.DrawFn) -> list[str]:
    """``run``, then options in any order (repeats too), with the scenario anywhere among them."""
    options = draw(st.lists(_option_words, max_size=8))
    at = draw(st.integers(min_value=0, max_value=len(options)))
    scenario = draw(st.one_of(st.sampled_from(["default", "mrtr", "weather.yaml", "s/x.yaml"]), _free))
    words = [w for pair in options[:at] for w in pair] + [scenario] + [w for pair in options[at:] for w in pair]
    return ["run", *words]


def test_every_option_of_the_table_has_a_generator() -> None:
    for option in RUN_OPTIONS:
        if option.kind != "flag":
            _value(option)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_spawn_lines())
def test_argparse_reads_a_spawns_lines_as_the_table_says(argv: list[str]) -> None:
    assert vars(_PARSER.parse_args(argv)) == _expected(argv), argv


@pytest.mark.parametrize("argv", [
    ["run", "default"],
    ["run", "tasks", "--session", "/tmp/s", "--report", "/tmp/r.json", "--strict", "--control", "/tmp/c.sock"],
    ["run", "weather.yaml", "--time-scale", "0.1", "--seed", "7", "--grace", "0", "--log-level", "debug"],
    ["run", "--journal", "j.jsonl", "mrtr", "--report", "report.json", "--no-cache", "--allow-absolute-paths"],
    ["run", "default", "--http", "0", "--allow-origin", "http://a", "--allow-origin", "http://b", "--sse-keepalive", "1"],
    ["run", "default", "--max-line-bytes", "1024", "--http", "127.0.0.1:0", "--http-any-host"],
    ["run", "default", "--seed", "1", "--seed", "2", "--allow-host", "a", "--allow-host", "*", "--http-request-timeout", "5"],
])
def test_the_lines_spawns_use(argv: list[str]) -> None:
    args = _PARSER.parse_args(argv)
    assert vars(args) == _expected(argv)
    assert refusal(args) is None


# ------------------------------------------------------------------ through the real process


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache)}


_DISCOVER = (json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}}) + "\n").encode()


def test_a_spawn_with_options_in_any_order_serves(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    proc = subprocess.run(mockmcp_cmd("run", "--journal", str(journal), "--seed", "7", "default", "--strict",
                                      "--time-scale", "0.5", "--log-level", "error", "--grace", "0"),
                          input=_DISCOVER, capture_output=True, timeout=60, env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["result"]["supportedVersions"]
    assert '"server/discover"' in journal.read_text()


def _imports(code: str, cache: Path) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], input=_DISCOVER, capture_output=True,
                          timeout=60, env=_env(cache))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert b'"result"' in proc.stdout
    return {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}


def test_the_command_line_costs_a_spawn_argparse_and_gettext_only(tmp_path: Path) -> None:
    """A warm spawn through ``main`` against the same spawn handed its options directly."""
    through_cli = "import sys; from mockmcp.cli.main import main; sys.exit(main(['run', 'default']))"
    direct = ("import sys; from types import SimpleNamespace; from mockmcp.cli.runoptions import RUN_OPTIONS; "
              "from mockmcp.launch.run import run; "
              "sys.exit(run(SimpleNamespace(command='run', scenario='default', **{o.dest: o.default for o in RUN_OPTIONS})))")
    _imports(through_cli, tmp_path)  # fill the load cache: both spawns below are warm
    assert _imports(through_cli, tmp_path) - _imports(direct, tmp_path) == {"mockmcp.cli.main", "argparse", "gettext"}


@pytest.mark.parametrize("argv, said", [
    (["run", "a", "--time-scale", "nan"], "argument --time-scale: expected a finite number >= 0, got 'nan'"),
    (["run", "a", "--max-line-bytes", "0"], "argument --max-line-bytes: expected a whole number >= 1, got '0'"),
    (["run", "a", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["run", "a", "--http", "host:99999"], "expected [HOST:]PORT with PORT 0..65535"),
    (["run", "a", "--log-level", "loud"], "argument --log-level: invalid choice: 'loud'"),
    (["run", "a", "b"], "unrecognized arguments: b"),
    (["run"], "the following arguments are required: scenario"),
    (["run", "a", "--session", "d", "--journal", "j"], "--journal cannot be combined with --session"),
    (["run", "a", "--http", "0.0.0.0:1"], "--http 0.0.0.0: not a loopback address; add --http-any-host"),
])
def test_a_bad_line_gets_one_line_and_status_2(argv: list[str], said: str, tmp_path: Path) -> None:
    proc = subprocess.run(mockmcp_cmd(*argv), input=b"", capture_output=True, timeout=60, env=_env(tmp_path))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"", err
    assert said in err and "Traceback" not in err


@pytest.mark.parametrize("option", ["--session", "--control", "--report", "--journal"])
@pytest.mark.parametrize("spawn", [mockmcp_cmd, direct_cmd], ids=["as-the-suite-spawns", "direct"])
def test_an_empty_path_is_a_usage_error_naming_the_option(option: str, spawn: Any, tmp_path: Path) -> None:
    """``--session ""`` (a variable left unset) served with the option silently off: no session,
    socket, report or journal, the mistake showing up later. It is refused before anything serves,
    by a warm server's fork as by a direct spawn (the one table of ``run``'s options)."""
    proc = subprocess.run(spawn("run", "default", option, ""), input=_DISCOVER, capture_output=True, timeout=60,
                          env=_env(tmp_path))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and proc.stdout == b"", err
    assert f"argument {option}: expected a path, got an empty one" in err and "Traceback" not in err
