"""Each refusal through real processes: another user, another mount namespace, another cgroup, a
changed package, a terminal on stdin; each time the spawn runs directly, works, and prints only
the mock's answer on stdout. And what must not be refused: the whitelisted environment the
official SDK clients give the mock (no ``MOCKMCP_WARM_DIR``, no ``PYTHON*`` variables), found
through the prefix alone.

Making another user, another mount namespace or another cgroup needs root and capabilities a
container may withhold: where the machine cannot make the condition, the test says so and skips
(the condition, not the refusal, is what is missing: each refusal's decision is also tested
directly, in tests/warm/test_warm_faults.py). On this project's machines they run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest
from support.paths import ROOT
from support.process import WarmServer, gone_within, running_warm_server, runtime_folder

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}
DISCOVER = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}}).encode() + b"\n"
NOBODY = 65534

# A hand-off sent as the launcher sends it, without the launcher's own checks first (its
# terminal test, its check of the server's uid): what the server itself refuses. Prints the answer.
RAW_HANDOFF = """
import os, socket, sys
from mockmcp.warm import launcher
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.settimeout(20)
sock.connect(sys.argv[1])
body = launcher.handoff_body(["run", "default"], os.getpid(), launcher.environment())
socket.send_fds(sock, [launcher.frame(body)], [0, 1, 2])
print(sock.recv(4096).decode().strip(), file=sys.stderr)
"""


def need_root(why: str) -> None:
    if os.geteuid() != 0:
        cannot(f"{why} needs root")


def cannot(why: str) -> NoReturn:
    """The machine cannot make the condition a refusal is for (no root, no capability, a read-only
    cgroup hierarchy): skip with the reason, never fail a suite for its container's limits."""
    pytest.skip(why)


def able(prefix: list[str], what: str) -> None:
    """Whether this machine lets ``prefix`` run a program at all (a container may withhold the
    capability): if not, the condition cannot be made here."""
    probe = subprocess.run([*prefix, "/bin/true"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        cannot(f"{what} is not permitted here: {probe.stderr.strip()[:200]}")


def socket_of(warm: WarmServer) -> Path:
    [path] = warm.folder.glob("*.sock")
    return path


def answered_directly(warm: WarmServer, proc: subprocess.Popen[bytes], out: bytes, err: bytes) -> None:
    """The spawn answered, exited 0, printed the answer alone, and was not forked by the server."""
    assert proc.returncode == 0, err
    assert out.count(b"\n") == 1 and json.loads(out)["id"] == 1, out
    assert warm.forked_for(proc.pid, timeout=0) is None, warm.log()


def spawn(argv: list[str], env: dict[str, str], **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            **kw)  # type: ignore[call-overload]


def test_the_whitelisted_environment_of_an_sdk_client_is_handed_off(tmp_path: Path) -> None:
    """The official SDKs spawn the mock with HOME, LOGNAME, PATH, SHELL, TERM and USER only: the
    prefix names its runtime folder, and PYTHONUNBUFFERED / PYTHONDONTWRITEBYTECODE (which CI
    machines and containers set, and the clients drop) are applied by the child, not refused.
    The server here has them set whatever the suite's own environment holds."""
    with running_warm_server({"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}) as warm:
        assert warm.argv[-1] == f"--warm-dir={warm.folder}"
        assert {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE"} <= set(warm.env), "the comparison below needs them set"
        bare = {k: v for k, v in os.environ.items() if k in ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")}
        proc = spawn([*warm.argv, "run", "default", "--journal", str(tmp_path / "j.jsonl")], bare)
        out, err = proc.communicate(DISCOVER, timeout=30)
        assert proc.returncode == 0 and json.loads(out)["id"] == 1, err
        assert warm.forked_for(proc.pid) is not None, warm.log()
        # and MOCKMCP_WARM_DIR, when set, still wins over the prefix's folder (here: no server there)
        (tmp_path / "empty").mkdir(mode=0o700)
        proc = spawn([*warm.argv, "run", "default"], {**bare, "MOCKMCP_WARM_DIR": str(tmp_path / "empty")})
        out, err = proc.communicate(DISCOVER, timeout=30)
        answered_directly(warm, proc, out, err)


def test_another_user_runs_directly(warm: WarmServer, tmp_path: Path) -> None:
    """The launcher as ``nobody`` (given only the right to search folders, since the interpreter
    may live under root's 0700 home): the server's 0700 folder and 0600 socket keep it out; with
    both opened, the launcher refuses a server of another user; a hand-off sent anyway is refused
    by the server (its peer's uid)."""
    need_root("running the launcher as another user")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        cannot("setpriv (util-linux) is needed to run a process as another user")
    as_nobody = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                 "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--"]
    able(as_nobody, "running a process as nobody with the right to search folders")
    home = tmp_path / "nobody"
    home.mkdir()
    os.chown(home, NOBODY, NOBODY)
    env = {**warm.env, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    sock = socket_of(warm)
    for opened in (False, True):
        if opened:
            os.chmod(warm.folder, 0o711)
            os.chmod(sock, 0o666)
        try:
            proc = spawn([*as_nobody, *warm.argv, "run", "default"], env, cwd=home)
            out, err = proc.communicate(DISCOVER, timeout=30)
            answered_directly(warm, proc, out, err)
            assert warm.refused(proc.pid) is None  # the launcher itself never handed off
            if opened:
                raw = subprocess.run([*as_nobody, sys.executable, "-c", RAW_HANDOFF, str(sock)], env=env, cwd=home,
                                     stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
                assert f'"refused": "uid {NOBODY} is not the warm server' in raw.stderr, raw.stderr
        finally:
            os.chmod(warm.folder, 0o700)
            os.chmod(sock, 0o600)


def test_another_mount_namespace_is_refused_and_runs_directly(warm: WarmServer) -> None:
    need_root("a new mount namespace")
    unshare = shutil.which("unshare")
    if unshare is None:
        cannot("unshare (util-linux) is needed to make a mount namespace")
    able([unshare, "--mount", "--"], "a new mount namespace")
    proc = spawn([unshare, "--mount", "--", *warm.argv, "run", "default"], warm.env)  # (exec: the same pid)
    out, err = proc.communicate(DISCOVER, timeout=30)
    answered_directly(warm, proc, out, err)
    assert warm.refused(proc.pid) == "another mount namespace", warm.log()


def writable_cgroup() -> Path | None:
    """This process's cgroup in a writable hierarchy (cgroup v2 first), or None."""
    mine = dict(line.split(":", 2)[1:] for line in Path("/proc/self/cgroup").read_text().splitlines())
    mounts: list[Path] = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, fs = line.partition(" - ")
        root, point = fields.split()[3:5]
        kind, _, options = fs.split(" ", 2)
        if kind == "cgroup2" and root == "/":
            mounts.insert(0, Path(point + mine.get("", "/")))
        elif kind == "cgroup" and root == "/":
            named = [c for c in mine if c and set(c.split(",")) <= set(options.split(","))]
            if named:
                mounts.append(Path(point + mine[named[0]]))
    for path in mounts:
        if path.is_dir() and os.access(path, os.W_OK):
            return path
    return None


@pytest.fixture
def child_cgroup() -> Iterator[Path]:
    need_root("moving a process to another cgroup")
    parent = writable_cgroup()
    if parent is None:
        cannot("no writable cgroup hierarchy to make a child cgroup in (a read-only /sys/fs/cgroup)")
    path = parent / f"mockmcp-warm-test-{os.getpid()}"
    path.mkdir()
    yield path
    for _ in range(100):  # (a process just reaped may leave its cgroup a moment later)
        try:
            path.rmdir()
            break
        except OSError:
            time.sleep(0.05)


def test_another_cgroup_is_refused_and_runs_directly(warm: WarmServer, child_cgroup: Path) -> None:
    """The launcher moved into a child cgroup of the server's before it starts (``unshare --cgroup``
    would not do: a cgroup namespace changes how a process sees its cgroup, not which one it is in)."""
    procs = child_cgroup / "cgroup.procs"

    def move() -> None:
        procs.write_text("0")

    proc = spawn([*warm.argv, "run", "default"], warm.env, preexec_fn=move)
    out, err = proc.communicate(DISCOVER, timeout=30)
    answered_directly(warm, proc, out, err)
    assert warm.refused(proc.pid) == "another cgroup", warm.log()


def test_a_terminal_on_stdin_is_refused_by_the_server_too(warm: WarmServer) -> None:
    """The launcher never hands a terminal off (tests/warm/test_warm_semantics.py); a hand-off
    sent anyway with a terminal as fd 0 (a real pty) is refused by the server."""
    import pty

    leader, follower = pty.openpty()
    try:
        raw = subprocess.run([sys.executable, "-c", RAW_HANDOFF, str(socket_of(warm))], env=warm.env,
                             stdin=follower, capture_output=True, text=True, timeout=30)
    finally:
        os.close(leader)
        os.close(follower)
    assert raw.stderr.strip() == '{"refused": "a terminal on stdin"}', raw.stderr


def test_a_changed_package_is_refused_and_the_server_retires(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A warm server started from a copy of the package (PYTHONPATH); a file of the copy touched;
    the next spawn runs directly (the copy, as it is now) and the server takes no more hand-offs,
    its modules stale; a mock it forked before keeps running (as a direct one would when its files
    are edited), and the server leaves when that mock ends."""
    copy = tmp_path / "pkg"
    shutil.copytree(ROOT / "mockmcp", copy / "mockmcp")  # (times kept: the compiled files stay valid)
    shutil.copytree(ROOT / "scenarios", copy / "scenarios")
    runtime = runtime_folder()
    request.addfinalizer(lambda: shutil.rmtree(runtime, ignore_errors=True))
    env = {**os.environ, "PYTHONPATH": str(copy), "MOCKMCP_WARM_DIR": str(runtime)}
    env.pop("MOCKMCP_WARM_ARGV", None)

    def cli(action: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mockmcp", "warm", action], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)

    started = cli("start")
    assert started.returncode == 0, started.stderr
    server = int(started.stdout.split("pid ")[1].split(",")[0])
    try:
        argv = json.loads(cli("argv").stdout)
        assert repr(str(copy / "mockmcp" / "warm")) in argv[4], argv  # the copy's launcher
        [log] = runtime.glob("*.log")
        first = spawn([*argv, "run", "default"], env, cwd=tmp_path)
        out, err = first.communicate(DISCOVER, timeout=30)
        assert first.returncode == 0 and json.loads(out)["id"] == 1, err
        assert "forked" in log.read_text() and f" for pid {first.pid}\n" in log.read_text()
        running = spawn([*argv, "run", "default"], env, cwd=tmp_path)  # stays, its stdin open
        assert running.stdin is not None and running.stdout is not None
        running.stdin.write(DISCOVER)
        running.stdin.flush()
        assert json.loads(running.stdout.readline())["id"] == 1
        touched = copy / "mockmcp" / "wire" / "__init__.py"
        touched.write_text(touched.read_text() + "\n")
        proc = spawn([*argv, "run", "default"], env, cwd=tmp_path)
        out, err = proc.communicate(DISCOVER, timeout=30)
        assert proc.returncode == 0 and out.count(b"\n") == 1 and json.loads(out)["id"] == 1, err
        text = log.read_text()
        assert f"refused pid {proc.pid}: the package changed since the warm server started ({touched})" in text, text
        assert cli("status").returncode == 1  # no socket: the next spawn runs directly or starts a server
        running.stdin.write(DISCOVER)  # the mock forked before the change still answers
        running.stdin.flush()
        assert json.loads(running.stdout.readline())["id"] == 1
        assert not gone_within(server, 0.5), "the warm server left while its child still ran"
        running.stdin.close()
        assert running.wait(30) == 0
        assert gone_within(server, 10), "the warm server outlived its stale package and its last child"
    finally:
        if not gone_within(server, 0):
            os.kill(server, signal.SIGKILL)
