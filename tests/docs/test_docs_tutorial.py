"""docs/tutorial.md runs as written: its shell commands, in a directory holding its files.

tests/docs/test_docs_snippets.py loads the tutorial's YAML and runs its Python tests (the
``mockmcp`` fixture, the official client, the Tasks extension). This module does the rest as a
reader would: every command of its ```` ```sh ```` blocks runs through bash, with this
virtualenv's ``mockmcp`` first on ``PATH``, in a fresh directory where the ``# file:`` blocks
are saved, and must exit 0. Left out, and listed in ``NOT_RUN`` so that no command is skipped
silently: the installation, and ``pytest -q test_weather.py`` (the snippets test runs that very
block with pytest). What the prose says about an output is held to the real one: the check's
error message, the demos' summaries, the timeline page, the raw JSON-RPC answer, and the
```` ```text ```` block of the demo following a task (its ids, timestamps and poll numbers aside).
All of it in one test: the commands build on each other (the journal, then its page).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
_FILE = re.compile(r"^\s*#\s*file:\s*([\w.-]+)\s*$")
NOT_RUN = {
    "python3 -m venv": "installation: the suite runs in its own virtualenv",
    "pip install": "installation",
    "pytest -q test_weather.py": "tests/docs/test_docs_snippets.py runs the test_weather.py block with pytest",
}


def blocks() -> list[tuple[str, str]]:
    """(language, text) of every fenced block, in order (the tutorial nests none)."""
    return [(m[1], m[2]) for m in _FENCE.finditer(DOC.read_text(encoding="utf-8"))]


def commands() -> list[str]:
    """Every command line of the ```sh blocks, without its trailing comment."""
    out = []
    for lang, text in blocks():
        if lang == "sh":
            out += [re.sub(r"\s+#\s.*$", "", line).strip() for line in text.splitlines() if line.strip()]
    return out


def save_files(directory: Path) -> None:
    for _, text in blocks():
        m = _FILE.match(text.split("\n", 1)[0])
        if m:
            (directory / m[1]).write_text(text, encoding="utf-8")


def run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)


def as_pattern(line: str) -> str:
    """A line of the tutorial's sample output as a regex: any numbers where the run's own go."""
    return re.sub(r"\\\(poll\\ \d+\\\)|after\\ \d+\\ polls", lambda m: re.sub(r"\d+", r"\\d+", m[0]), re.escape(line))


def test_the_tutorial_commands_run_and_say_what_the_tutorial_says(tmp_path: Path) -> None:
    save_files(tmp_path)
    assert {"weather.yaml", "deploy.yaml"} <= {p.name for p in tmp_path.iterdir()}
    outputs: dict[str, str] = {}
    for command in commands():
        if any(command.startswith(prefix) for prefix in NOT_RUN):
            continue
        proc = run(command, tmp_path)
        assert proc.returncode == 0, f"`{command}` exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        outputs[command] = proc.stdout
    assert list(outputs) == [
        "mockmcp --version", "mockmcp list", "mockmcp check weather.yaml", "mockmcp demo weather.yaml",
        "mockmcp demo weather.yaml --journal j.jsonl", "mockmcp journal j.jsonl --html timeline.html",
        next(c for c in outputs if c.startswith("echo ")),
        "mockmcp demo deploy.yaml --time-scale 0.1", "mockmcp run deploy.yaml --session deploy-session --time-scale 0.1",
    ]
    assert outputs["mockmcp --version"].startswith("mockmcp ") and "\ntasks " in outputs["mockmcp list"]
    assert re.search(r"^  tool get_weather  ok$", outputs["mockmcp demo weather.yaml"], re.M)
    assert "<html" in (tmp_path / "timeline.html").read_text(encoding="utf-8").lower()
    discover = json.loads(next(v for c, v in outputs.items() if c.startswith("echo ")).splitlines()[0])
    assert discover["id"] == 1 and "tools" in discover["result"]["capabilities"]
    assert (tmp_path / "deploy-session").is_dir()

    # the sample output of the demo following the deploy task: its lines, in order, in the real one
    demo = outputs["mockmcp demo deploy.yaml --time-scale 0.1"].splitlines()
    sample = next(text for lang, text in blocks() if lang == "text" and "tasks/update" in text)
    at = 0
    for line in (ln.rstrip() for ln in sample.splitlines() if ln.strip()):
        pattern = re.compile(as_pattern(line))
        found = next((i for i in range(at, len(demo)) if pattern.fullmatch(demo[i].rstrip())), None)
        assert found is not None, f"the tutorial's line {line!r} is not in the demo's output (after line {at}):\n" + "\n".join(demo)
        at = found + 1


def test_the_tutorials_check_error_is_the_real_one(tmp_path: Path) -> None:
    """"if you wrote `sleep: 200` instead of `sleep: 200ms`": the message it quotes, verbatim."""
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"`(weather\.yaml:[^`]+)`\s+if you wrote `sleep: 200` instead of `sleep: 200ms`", text)
    assert m, "the tutorial no longer quotes the check's message"
    save_files(tmp_path)
    weather = tmp_path / "weather.yaml"
    weather.write_text(weather.read_text(encoding="utf-8").replace("sleep: 200ms", "sleep: 200"), encoding="utf-8")
    proc = run("mockmcp check weather.yaml", tmp_path)
    assert proc.returncode == 1
    assert m[1] in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_commands_are_found_and_the_pattern_keeps_other_numbers() -> None:
    assert "mockmcp demo deploy.yaml --time-scale 0.1" in commands()
    assert sum(c.startswith(tuple(NOT_RUN)) for c in commands()) == 3
    pattern = as_pattern("    task: completed \"rolling out\" (poll 9)")
    assert re.fullmatch(pattern, '    task: completed "rolling out" (poll 12)')
    assert not re.fullmatch(as_pattern("--> #7 tasks/update"), "--> #8 tasks/update")
