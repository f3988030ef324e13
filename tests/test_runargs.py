"""``runargs.quick_parse`` (a spawn's command line read without argparse) against argparse.

The quick reader is a second path, so it is fuzzed against the plain one over
its own domain: command lines made of ``run``'s options, near misses of them
(abbreviations, ``--name=value``, help, ``--``), values its converters accept
and reject, and arbitrary text. Whenever it answers, argparse must parse the
same line without an error and give the same values; when it declines,
argparse is what runs. The common spawn lines must not be declined, and a real
spawn must not import argparse at all.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from conftest import mockmcp_cmd
from hypothesis import given, settings, strategies as st

from mockmcp.cli import _parser
from mockmcp.runargs import RUN_OPTIONS, quick_parse, refusal

_PARSER = _parser("run")  # built once: parse_args leaves a parser as it was

_FLAGS = [o.flag for o in RUN_OPTIONS]
_NEAR = ["--help", "-h", "--", "-", "--jour", "--log", "--http-any", "--strict=1", "--log-level=info",
         "--seed=3", "--unknown", "-x", "--no_cache", "run", "check"]
_VALUES = ["default", "mrtr", "x.yaml", "", "0", "1", "7", "-1", "-0.5", "1.5", " 2 ", "1_0", "1e3", "nan", "inf",
           "-inf", "0x10", "debug", "quiet", "loud", "WARNING", "127.0.0.1:0", "8080", "[::1]:80", "localhost:1",
           "0.0.0.0:80", "host:99999", "example.com:443", "a=b", "s/dir", "/tmp/j.jsonl", "--strict"]
_token = st.one_of(st.sampled_from(_FLAGS), st.sampled_from(_NEAR), st.sampled_from(_VALUES), st.text(max_size=8))


def _argparse(argv: list[str]) -> dict[str, Any] | None:
    """What ``mockmcp`` itself does with ``argv`` via argparse: the values, or None for an error."""
    try:
        ns = _PARSER.parse_args(argv)
    except SystemExit:
        return None
    return None if refusal(ns) is not None else vars(ns)


@settings(max_examples=600, deadline=None)
@given(st.lists(_token, max_size=7), st.booleans())
def test_quick_parse_gives_what_argparse_gives_or_declines(words: list[str], lead: bool) -> None:
    argv = ["run", *words] if lead else words
    quick = quick_parse(argv)
    if quick is None:
        return  # argparse reads it (its help, its errors)
    assert vars(quick) == _argparse(argv), argv


@pytest.mark.parametrize("argv", [
    ["run", "default"],
    ["run", "tasks", "--session", "/tmp/s", "--report", "/tmp/r.json", "--strict", "--control", "/tmp/c.sock"],
    ["run", "weather.yaml", "--time-scale", "0.1", "--seed", "7", "--grace", "0", "--log-level", "debug"],
    ["run", "--journal", "j.jsonl", "mrtr", "--report", "report.json", "--no-cache", "--allow-absolute-paths"],
    ["run", "default", "--http", "0", "--allow-origin", "http://a", "--allow-origin", "http://b", "--sse-keepalive", "1"],
    ["run", "default", "--max-line-bytes", "1024", "--http", "127.0.0.1:0", "--http-any-host"],
])
def test_the_lines_spawns_use_are_read_without_argparse(argv: list[str]) -> None:
    quick = quick_parse(argv)
    assert quick is not None
    assert vars(quick) == _argparse(argv)


@pytest.mark.parametrize("argv", [
    ["run"], ["run", "--help"], ["run", "a", "b"], ["run", "a", "--seed", "x"], ["run", "a", "--time-scale", "nan"],
    ["run", "a", "--session", "d", "--journal", "j"], ["run", "a", "--http", "0.0.0.0:1"], ["run", "a", "--grace=1"],
    ["run", "a", "--seed", "-1"], ["run", "a", "--log-level", "loud"], ["check", "a"],
])
def test_what_argparse_must_word_is_declined(argv: list[str]) -> None:
    assert quick_parse(argv) is None


def test_a_spawn_does_not_import_argparse() -> None:
    proc = subprocess.run([sys.executable, "-X", "importtime", *mockmcp_cmd()[1:], "run", "default"],
                          input=b"", capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in proc.stderr.decode().splitlines() if line.startswith("import time:")}
    assert "mockmcp.runargs" in imported
    assert "argparse" not in imported


@pytest.mark.parametrize("argv, said", [
    (["run", "a", "--time-scale", "nan"], "argument --time-scale: expected a finite number >= 0, got 'nan'"),
    (["run", "a", "--max-line-bytes", "0"], "argument --max-line-bytes: expected a whole number >= 1, got '0'"),
    (["run", "a", "--seed", "x"], "argument --seed: invalid int value: 'x'"),
    (["run", "a", "--http", "host:99999"], "expected [HOST:]PORT with PORT 0..65535"),
])
def test_a_declined_bad_value_gets_its_converters_words_from_argparse(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    from mockmcp.cli import main

    assert quick_parse(argv) is None
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert said in capsys.readouterr().err
