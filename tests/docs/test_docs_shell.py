"""Every shell block of README.md and docs/**/*.md runs in the suite, or is a template checked here.

The rules (docs/index.md, docs/editor.md and tests/docs/test_docs_snippets.py repeat them):

- ```` ```sh ```` (or ```` ```bash ````): runs as written, through ``bash -xeuo pipefail``, with this
  virtualenv's bin first on ``PATH``, in a temporary folder shared by the page's blocks in order
  (so a page's commands build on each other, as a reader's do) where the page's ``# file: NAME``
  blocks are saved, and must exit 0. What a page's commands need from the world is given here,
  as a reader would have it: a client's ``tools/call`` on stdin for record.md's record and replay
  (their answer checked), a mock of its own at the docs' socket path ``/tmp/mock.sock`` (a private
  path in its place: two runs of the suite at once would share it) for the ``ctl`` lines, with a
  client that calls a tool once they wait for one, a ``tests/scenarios/`` folder for editor.md's
  ``mockmcp check``, and a private ``MOCKMCP_WARM_DIR`` (the warm server stopped at the end).
- ```` ```sh template ````: a block that cannot run as written (a placeholder such as
  ``SCENARIO``, a ``git+URL``, a server that serves until it is stopped, a program the reader
  has, an installation). Each command is checked instead: every ``mockmcp ...`` command, its
  placeholders replaced (``PLACEHOLDERS``), parses with the real command line parser (a renamed
  subcommand or option fails), and every ``mockmcp run`` is started and stopped at the end of its
  stdin (an HTTP one must print its URL first; a fixed port is replaced by 0). Any other command
  must be one ``ELSEWHERE`` names, with the test that runs it for real.

docs/tutorial.md's ```` ```sh ```` blocks are tests/docs/test_docs_tutorial.py's (run there, output
held to the prose), docs/http.md's ```` ```console ```` curl session is tests/docs/test_docs_curl.py's;
every other shell block is this module's, one test each, named ``FILE:LINE`` (its opening fence).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, NamedTuple

import pytest
from support.markdown import Fenced, doc_pages, fenced_blocks
from support.messages import call, line, request
from support.process import WARM_ARGV, mockmcp_cmd, runtime_folder

from mockmcp.cli import main as cli
from mockmcp.cli import runoptions
from mockmcp.controlclient import SyncControl

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh", "shell-session"}

# (page, fence language) -> the test that runs every such block of that page.
OTHER_TESTS = {
    ("docs/tutorial.md", "sh"): "tests/docs/test_docs_tutorial.py",
    ("docs/http.md", "console"): "tests/docs/test_docs_curl.py",
}

# A template's placeholders, for its `mockmcp ...` commands: DOC_SOCKET is swapped per test.
DOC_SOCKET = "/tmp/mock.sock"
PLACEHOLDERS = {r"\bSCENARIO\b": "default"}

# The commands of templates that are not mockmcp's: what they are, and the test that runs them.
ELSEWHERE = {
    "python3 -m venv": "a virtualenv: the suite runs in its own; tests/cli/test_install_lines.py makes fresh ones",
    ".venv/bin/pip install": "the README's quick start: CI runs exactly that block (.ci/run; tests/cli/test_quickstart.py)",
    ".venv/bin/python -m pytest": "the README's test command: CI runs exactly it (tests/cli/test_quickstart.py)",
    "pipx install": "tests/cli/test_install_lines.py runs it with a git+file:// URL of this checkout",
    "~/.mockmcp/bin/pip install": "tests/cli/test_install_lines.py installs from the git URL into a fresh venv",
    ".venv/bin/python tests/interop/matrix.py": "the interop matrix (`pytest -m matrix` runs its cells; "
    "tests/interop/test_interop_matrix.py a part by default); checked here: its options exist",
}

# What a runnable block's page gives its commands on stdin, and what they must then print.
WEATHER_CALL = line(call(1, "get_weather", city="Paris"))
STDIN = {"docs/record.md": WEATHER_CALL}
PRINTS = {"docs/record.md": "Sunny in Paris"}
CONTROL_SCENARIO = "conformance-server"  # has the `greet` tool the control pages arm


Block = Fenced


ALL = [b for p in doc_pages() for b in fenced_blocks(p)]
SHELL = [b for b in ALL if b.lang in SHELL_LANGS]
MINE = [b for b in SHELL if (b.page, b.lang) not in OTHER_TESTS]


def command_lines(text: str) -> list[str]:
    """The block's commands, one per line (a line ending in a backslash continues)."""
    return [c for c in re.sub(r"\\\n\s*", " ", text).splitlines() if c.strip() and not c.lstrip().startswith("#")]


def simple_commands(text: str) -> list[list[str]]:
    """The words of each simple command of a line (split at ``&&``, ``|``, ``;``), redirections dropped."""
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    out: list[list[str]] = [[]]
    words = iter(lex)
    for word in words:
        if word in ("&&", "||", ";", "|", "&"):
            out.append([])
        elif word in (">", ">>", "<", "2>", ">&"):
            next(words, None)
        else:
            out[-1].append(word)
    return [c for c in out if c]


def parse_problem(argv: list[str]) -> str | None:
    """Why the real command line parser refuses ``mockmcp ARGV`` (None: it accepts it)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            args, _ = cli.parse(cli._parser(), argv)
        except SystemExit as exc:
            return None if exc.code == 0 else err.getvalue() or f"exit {exc.code}"
    if args.command is None:
        return "no subcommand"
    return runoptions.refusal(args) if args.command == "run" else None


def env_for(warm_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != WARM_ARGV}
    env["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    env["MOCKMCP_WARM_DIR"] = str(warm_dir)  # a warm server a block starts is this run's alone
    return env


class Ran(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    answers: list[dict[str, object]]  # what the mock of a ``ctl`` block answered its client


class Pages:
    """Each page's folder, and its runnable blocks run once each, in the page's order."""

    def __init__(self, base: Path, short: Path) -> None:
        self.base, self.short = base, short
        self.env = env_for(short / "warm")
        self.ran: dict[str, Ran] = {}

    def folder(self, block: Block) -> Path:
        folder = self.base / re.sub(r"\W", "_", block.page)
        folder.mkdir(exist_ok=True)
        for earlier in ALL:
            if earlier.path == block.path and earlier.line < block.line and earlier.file_name:
                (folder / earlier.file_name).write_text(earlier.text, encoding="utf-8")
        return folder

    def run(self, block: Block) -> Ran:
        for earlier in MINE:  # the page's blocks before it first: its commands build on theirs
            if earlier.path == block.path and earlier.line < block.line and "template" not in earlier.flags:
                self._once(earlier)
        return self._once(block)

    def _once(self, block: Block) -> Ran:
        if block.id not in self.ran:
            self.ran[block.id] = self._run(block, self.folder(block))
        return self.ran[block.id]

    def _run(self, block: Block, cwd: Path) -> Ran:
        if DOC_SOCKET in block.text:
            return self._run_with_control(block, cwd)
        if "tests/scenarios/*.yaml" in block.text:  # the reader's scenarios: one of ours will do
            (cwd / "tests" / "scenarios").mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "scenarios" / "default.yaml", cwd / "tests" / "scenarios" / "default.yaml")
        proc = subprocess.run(["bash", "-xeuo", "pipefail", "-c", block.text], cwd=cwd, env=self.env,
                              input=STDIN.get(block.page, b""), capture_output=True, timeout=120)
        return Ran(proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), [])

    def _run_with_control(self, block: Block, cwd: Path) -> Ran:
        """The block against a mock with a control socket; once it waits for a request, a client
        calls ``greet`` (every 0.1 s, so the wait sees one after it arrived) until the block ends."""
        sock = str(self.short / "mock.sock")
        mock = subprocess.Popen(mockmcp_cmd("run", CONTROL_SCENARIO, "--control", sock), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env)
        assert mock.stdin is not None
        try:
            SyncControl(sock, connect_timeout=30).position()  # serving: the block's first `ctl` finds it
            trace = cwd / f"trace-{block.line}.txt"
            with trace.open("w+") as err:
                shell = subprocess.Popen(["bash", "-xeuo", "pipefail", "-c", block.text.replace(DOC_SOCKET, sock)],
                                         cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=err, text=True)
                sent, deadline = 0, time.monotonic() + 60
                while True:
                    try:
                        out, _ = shell.communicate(timeout=0.1)
                        break
                    except subprocess.TimeoutExpired:
                        if " waitFor " in trace.read_text():  # (bash -x names a command before it runs it)
                            sent += 1
                            mock.stdin.write(line(request(sent, "tools/call", {"name": "greet", "arguments": {"name": "Ada"}})))
                            mock.stdin.flush()
                    if time.monotonic() > deadline:
                        shell.kill()
                        shell.wait()
                        pytest.fail(f"{block.id}: the block did not end within 60 s; it said:\n{trace.read_text()}")
                err.seek(0)
                stderr = err.read()
            mock_out, _ = mock.communicate(b"", timeout=30)
        finally:
            if mock.poll() is None:
                mock.kill()
                mock.wait()
        answers = [json.loads(x) for x in mock_out.decode().splitlines() if x.strip()]
        return Ran(shell.returncode, out, stderr, answers)


@pytest.fixture(scope="module")  # one folder per page, shared by its blocks (groups this module on one worker)
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    short = runtime_folder("mmd")  # socket paths
    pages = Pages(tmp_path_factory.mktemp("shell"), short)
    try:
        yield pages
    finally:
        if any((short / "warm").glob("*.sock")):  # a block that started the warm server and failed before its stop
            subprocess.run([str(BIN / "mockmcp"), "warm", "stop"], env=pages.env, capture_output=True, timeout=60)
        shutil.rmtree(short, ignore_errors=True)


@pytest.mark.parametrize("block", MINE, ids=[b.id for b in MINE])
def test_shell_block(block: Block, pages: Pages, tmp_path: Path) -> None:
    assert block.lang in ("sh", "bash"), (
        f"{block.id}: a ```{block.lang} block is run by no test (```console is docs/http.md's curl session; "
        "write ```sh, or ```sh template for commands that cannot run as written)")
    unknown = set(block.flags) - {"template"}
    assert not unknown, f"{block.id}: unknown flag(s) {sorted(unknown)} (use ```sh or ```sh template)"
    if "template" in block.flags:
        check_template(block, tmp_path, pages.short)
        return
    ran = pages.run(block)
    assert ran.returncode == 0, (
        f"{block.id}: the ```sh block failed (exit {ran.returncode}); mark blocks that cannot run as written "
        f"```sh template\n--- stdout\n{ran.stdout[-3000:]}\n--- stderr\n{ran.stderr[-3000:]}")
    if block.page in PRINTS:
        assert PRINTS[block.page] in ran.stdout, f"{block.id} did not print {PRINTS[block.page]!r}:\n{ran.stdout[-3000:]}"
    if DOC_SOCKET in block.text:  # each `ctl` printed a result, the armed error answered the first call, the wait saw one
        results = [json.loads(x) for x in ran.stdout.splitlines()]
        assert len(results) == len(command_lines(block.text)) and all("result" in r for r in results), ran.stdout
        assert results[-1]["result"]["message"]["method"] == "tools/call", results[-1]
        assert ran.answers[0] == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "down"}}, ran.answers


def check_template(block: Block, tmp_path: Path, short: Path) -> None:
    """Each ``mockmcp`` command parses (a ``run`` also serves until EOF), each other is in ELSEWHERE."""
    checked = 0
    for text in command_lines(block.text):
        text = text.replace(DOC_SOCKET, str(short / f"t{block.line}.sock"))
        for pattern, value in PLACEHOLDERS.items():
            text = re.sub(pattern, value, text)
        for words in simple_commands(text):
            at = next((i for i, w in enumerate(words) if Path(w).name == "mockmcp"), None)
            if at is None:
                key = next((k for k in ELSEWHERE if " ".join(words).startswith(k)), None)
                assert key, f"{block.id}: `{' '.join(words)}` is neither mockmcp's nor in ELSEWHERE (say which test runs it)"
                if ELSEWHERE[key].endswith("its options exist"):
                    check_script_options(block, words)
                checked += 1
                continue
            argv = words[at + 1:]
            problem = parse_problem(argv)
            assert problem is None, f"{block.id}: `mockmcp {' '.join(argv)}` does not parse:\n{problem}"
            if argv[0] == "run":
                start_and_stop(block, argv, tmp_path)
            checked += 1
    assert checked, f"{block.id}: a template without a command"


def check_script_options(block: Block, words: list[str]) -> None:
    """A Python script of this checkout the block runs: it exists, and its ``--help`` names each option."""
    script = ROOT / words[1]
    assert script.is_file(), f"{block.id}: {words[1]} does not exist"
    shown = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    for option in (w for w in words[2:] if w.startswith("--")):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", shown.stdout), f"{block.id}: {words[1]} has no {option}"


def start_and_stop(block: Block, argv: list[str], cwd: Path) -> None:
    """``mockmcp run ...`` served until the end of its stdin: exit 0, and over HTTP its URL first."""
    argv = list(argv)
    if "--http" in argv:  # a fixed port may be taken here: any free one
        at = argv.index("--http") + 1
        argv[at] = re.sub(r"(^|:)\d+$", r"\g<1>0", argv[at])
    proc = subprocess.run(mockmcp_cmd(*argv), cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{block.id}: `mockmcp {' '.join(argv)}` exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    if "--http" in argv:
        url = proc.stdout.split("\n", 1)[0]
        assert re.fullmatch(r"http://[^/]+:\d+/mcp", url), f"{block.id}: `mockmcp {' '.join(argv)}` printed {url!r} first"
    for option in ("--journal", "--report"):
        if option in argv:
            name = argv[argv.index(option) + 1].replace("{pid}", "*")
            assert list(cwd.glob(name)), f"{block.id}: `mockmcp {' '.join(argv)}` wrote no {name}"


def test_every_shell_block_has_one_test() -> None:
    """A new shell block lands in this module's tests unless another test reads every block of its kind there."""
    assert len(MINE) >= 15 and {b.page for b in MINE} >= {"README.md", "docs/record.md", "docs/warm.md"}
    for (page, lang), test in OTHER_TESTS.items():
        source = (ROOT / test).read_text(encoding="utf-8")
        assert Path(page).name in source and (f"```{lang}" in source or f'"{lang}"' in source), (page, lang, test)
        assert any(b.page == page and b.lang == lang for b in SHELL), f"{test} no longer has a {page} ```{lang} block"
    for block in SHELL:
        owners = [(block.page, block.lang) in OTHER_TESTS, block in MINE]
        assert owners.count(True) == 1, block.id
    commands = [" ".join(w) for b in MINE if "template" in b.flags for c in command_lines(b.text) for w in simple_commands(c)]
    stale = [k for k in ELSEWHERE if not any(c.startswith(k) for c in commands)]
    assert not stale, f"ELSEWHERE names commands no template has: {stale}"
    runnable = {b.page for b in MINE if "template" not in b.flags}
    assert {*STDIN, *PRINTS} <= runnable, "STDIN or PRINTS names a page without a runnable block"


def test_the_command_splitter() -> None:
    assert command_lines("a \\\n   b  # c\n# d\n\ne\n") == ["a  b  # c", "e"]
    assert simple_commands("python3 -m venv ~/.m && ~/.m/bin/pip install 'git+U' # x") == [
        ["python3", "-m", "venv", "~/.m"], ["~/.m/bin/pip", "install", "git+U"]]
    assert simple_commands("mockmcp schema > out.json") == [["mockmcp", "schema"]]
    assert parse_problem(["run", "default", "--http", "0"]) is None and parse_problem(["--version"]) is None
    assert parse_problem(["run", "default", "--no-such-option"]) and parse_problem(["rn", "default"])
    assert parse_problem(["run", "default", "--http", "0.0.0.0:0"])  # refused without --http-any-host
