"""Starting, finding and stopping a warm server (``mockmcp warm start | serve | status | stop``).

``start`` runs ``serve`` detached: its own session, a minimal environment (what decides how an
interpreter starts: ``PATH``, ``HOME``, the locale and ``PYTHON*`` variables, the runtime and cache
folders), stdin and stdout on /dev/null, stderr appended to a log file beside the socket; it
returns once the socket answers. ``serve`` imports every module a run may need, takes the
baseline it compares hand-offs against, replaces a stale socket (one nobody answers on), writes
its pid file and serves. ``stop`` sends SIGTERM to the server it can prove runs (the socket's listener,
or the pid file's `warm serve` of this folder) and waits for the pid to go.
"""

from __future__ import annotations

import os
import pkgutil
import random
import signal
import socket
import stat
import struct
import sys
import time

import mockmcp
from mockmcp.warm import child as childmod
from mockmcp.warm.launcher import DIR_OPTION, PACKAGE, WARM_DIR, encodings, runtime_dir
from mockmcp.shells.control import MAX_SOCKET_PATH
from mockmcp.warm.paths import WarmPaths, check_socket_path, ensure_folder, read_pid, warm_paths
from mockmcp.warm.refusals import baseline
from mockmcp.warm.server import STOP_GRACE, WarmServer

KEPT = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TMPDIR", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME", WARM_DIR)
_PEERCRED = struct.Struct("3i")
SKIPPED = ("mockmcp.__main__", "mockmcp.pytest_plugin")  # a module that runs the CLI, one that needs pytest


class NotStarted(Exception):
    """The server did not come up (its log says why)."""


def answers(path: str) -> bool:
    """Whether something listens on the socket ``path``."""
    return listener_pid(path) is not None


def listener_pid(path: str) -> int | None:
    """The pid of the process listening on the socket ``path`` (its SO_PEERCRED), None if nobody answers."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(1.0)
        sock.connect(path)
        pid, _, _ = _PEERCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
        return int(pid)
    except OSError:
        return None
    finally:
        sock.close()


def running(paths: WarmPaths) -> int | None:
    """The pid of the warm server serving ``paths``, or None."""
    pid = read_pid(paths)
    return pid if pid is not None and answers(paths.socket) else None


def launcher_argv() -> list[str]:
    """What a client spawns instead of ``mockmcp`` (``mockmcp warm argv``): the interpreter, the
    launcher and this environment's runtime folder (a client's whitelisted environment may lack
    the variables that chose it).

    The launcher is imported as a module (``-c``), not run as a script: a script is compiled on
    every run, a module is read from its cached bytecode (pip writes it when it installs the
    package), which saves a third of the launcher's CPU (docs/performance.md). ``-P``: the client's
    working folder is not put on the module path, so nothing there can stand in for a module the
    launcher imports."""
    from mockmcp.warm import launcher

    folder = os.path.dirname(launcher.__file__)
    boot = f"import sys; sys.path.insert(0, {folder!r}); import launcher; launcher.main()"
    return [sys.executable, "-S", "-P", "-c", boot, DIR_OPTION + warm_paths().folder]


def minimal_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in KEPT or k.startswith(("LC_", "PYTHON"))}


LIFELINE_FD = 3  # where a started server finds its lifeline (``warm serve --lifeline``)
_UNTIED = ("a warm server already runs in {folder} (pid {pid}), not tied to this lifeline;"
           " give this start a folder of its own (MOCKMCP_WARM_DIR)")


def start(paths: WarmPaths, timeout: float = 30.0, lifeline: int | None = None) -> int:
    """Start a detached server unless one runs; its pid.

    The server is this process's child until this process ends, and is left running: with no
    ``subprocess.Popen`` for it, nothing warns that it is still running or reaps it behind the
    caller's back (the pytest plugin waits for it itself, to count its CPU time in the run's).
    ``lifeline``: a pipe's read end (or a socket) whose other end only the caller holds; the server
    stops at its end of file, so a caller killed before it could stop the server does not leave it
    behind. With one, a server that runs already, or that another start began first, is refused
    (``NotStarted``): it is not tied to the lifeline, and would outlive the caller."""
    ensure_folder(paths.folder)
    refuse_long_socket_path(paths)
    check_socket_path(paths.socket)
    pid = running(paths)
    if pid is not None:
        if lifeline is not None:
            raise NotStarted(_UNTIED.format(folder=paths.folder, pid=pid))
        return pid
    argv = [sys.executable, "-P", "-m", "mockmcp", "warm", "serve"]
    if lifeline is not None:
        argv += ["--lifeline", str(LIFELINE_FD)]
    pid = spawn_detached(argv, paths.log, minimal_environment(), lifeline)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            raise NotStarted(f"the warm server exited with status {os.waitstatus_to_exitcode(status)} (see {paths.log})")
        found = running(paths)
        if found is not None:  # ours, or one a concurrent start began first
            if found != pid:
                _end(pid)  # it lost the race; left to exit on its own, it took over if the winner was gone by then
                if lifeline is not None:
                    raise NotStarted(_UNTIED.format(folder=paths.folder, pid=found))
            return found
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise NotStarted(f"the warm server did not listen within {timeout:g} s (see {paths.log})")


def spawn_detached(argv: list[str], log: str, env: dict[str, str], lifeline: int | None = None) -> int:
    """Start ``argv`` in a session of its own, stdin and stdout on /dev/null, stderr appended to
    ``log``, holding none of this process's other descriptors (a pipe a caller waits on for its end
    of file, say) but ``lifeline``, as ``LIFELINE_FD``; its pid. It starts in this process's
    folder: ``serve`` moves to ``/``."""
    actions: list[tuple[int, int] | tuple[int, int, int] | tuple[int, int, str, int, int]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600),
    ]
    # The lifeline goes through a non-inheritable copy, placed after the closes: the closes may
    # name its own number (an inherited descriptor, as `warm start --lifeline` is given) or
    # LIFELINE_FD, and a dup2 onto itself may leave it close-on-exec.
    copy = None if lifeline is None else os.dup(lifeline)
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in inheritable_descriptors()]
    if copy is not None:
        actions.append((os.POSIX_SPAWN_DUP2, copy, LIFELINE_FD))
    try:
        return os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
    finally:
        if copy is not None:
            os.close(copy)


def _end(pid: int, grace: float = 5.0) -> None:
    """SIGTERM our child ``pid`` and reap it; SIGKILL after ``grace`` seconds."""
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while not os.waitpid(pid, os.WNOHANG)[0]:
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return
        time.sleep(0.01)


def inheritable_descriptors() -> list[int]:
    """This process's descriptors above stderr that a program it starts would inherit."""
    fds = []
    for name in os.listdir("/dev/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                fds.append(fd)
        except OSError:  # the listing's own descriptor, closed once listed
            pass
    return fds


def stop(paths: WarmPaths, timeout: float = STOP_GRACE + 8.0) -> bool:
    """Stop the running server and return once its process is gone (its mocks get ``STOP_GRACE``
    seconds; past ``timeout`` it is SIGKILLed); False if none ran. Its pid file goes first, when
    it stops listening: the process is what must be gone before "stopped" is true.

    Only a pid proven to be this folder's server is signalled (``server_pid``): a pid file outlives
    a server killed by SIGKILL (or the OOM killer), and its pid may since name any process (init's,
    read as root). Without a proven server the leftover pid file, and a socket nobody answers on, go."""
    pid = server_pid(paths)
    if pid is None:
        _remove_stale(paths)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return True


def server_pid(paths: WarmPaths) -> int | None:
    """The pid of the server of ``paths``, proven: the process listening on its socket, or (a server
    that closed its socket to stop or retire) the pid file's process when it runs ``mockmcp warm
    serve`` with an environment that names this folder. None when neither holds."""
    listening = listener_pid(paths.socket)
    if listening is not None:
        return listening
    pid = read_pid(paths)
    return pid if pid is not None and serves_folder(pid, paths.folder) else None


def serves_folder(pid: int, folder: str) -> bool:
    """Whether process ``pid`` is a ``mockmcp warm serve`` whose environment chooses ``folder``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
        with open(f"/proc/{pid}/environ", "rb") as fh:
            pairs = [item.partition(b"=") for item in fh.read().split(b"\0") if b"=" in item]
    except OSError:
        return False
    if not any(argv[i - 1].endswith(b"mockmcp") and argv[i:i + 2] == [b"warm", b"serve"] for i in range(1, len(argv))):
        return False  # (``python -P -m mockmcp warm serve [--lifeline FD]``, or the ``mockmcp`` script's)
    environ = {os.fsdecode(k): os.fsdecode(v) for k, _, v in pairs}
    return runtime_dir(environ) == folder


def _remove_stale(paths: WarmPaths) -> None:
    """Remove the pid file of a server that is gone, and its socket unless something answers there."""
    try:
        os.unlink(paths.pidfile)
    except OSError:
        pass
    try:
        if stat.S_ISSOCK(os.lstat(paths.socket).st_mode) and not answers(paths.socket):
            os.unlink(paths.socket)
    except OSError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone for our purpose
    except OSError:
        return False


def preload() -> list[str]:
    """Import every module of the package a mock process may use; the names that failed."""
    failed = []
    for info in pkgutil.walk_packages(mockmcp.__path__, "mockmcp."):
        if info.name in SKIPPED:
            continue
        try:
            __import__(info.name)
        except ImportError as exc:
            failed.append(f"{info.name}: {exc}")
    import ctypes  # noqa: F401  (the child asks for its parent-death signal through it)
    import resource  # noqa: F401

    from mockmcp.scenario.loadcache import code_fingerprint

    code_fingerprint()  # computed once here, not in every child
    return failed


def generators() -> list[random.Random]:
    """Every random generator created while importing (trio keeps one): the children reseed them."""
    import gc

    return [o for o in gc.get_objects() if isinstance(o, random.Random)]


def refuse_long_socket_path(paths: WarmPaths) -> None:
    """A socket path past the system's limit fails in bind() as "AF_UNIX path too long": say which
    path, the limit and what to change, before anything starts."""
    size = len(os.fsencode(paths.socket))
    if size > MAX_SOCKET_PATH:
        raise NotStarted(f"cannot listen on {paths.socket}: a Unix socket path may have at most {MAX_SOCKET_PATH}"
                         f" bytes here and this one has {size}; choose a shorter MOCKMCP_WARM_DIR")


def listen(paths: WarmPaths) -> socket.socket:
    """Bind the socket, replacing a stale one; refuse if a live server answers there."""
    ensure_folder(paths.folder)
    refuse_long_socket_path(paths)
    check_socket_path(paths.socket)
    if os.path.lexists(paths.socket):
        if answers(paths.socket):
            raise NotStarted(f"a warm server already answers on {paths.socket}")
        os.unlink(paths.socket)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(paths.socket)
    finally:
        os.umask(old)
    sock.listen(512)
    tmp = f"{paths.pidfile}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="ascii") as fh:
        fh.write(f"{os.getpid()}\n")
    os.replace(tmp, paths.pidfile)
    return sock


def serve(paths: WarmPaths, run: childmod.Run, lifeline: int | None = None) -> int:
    """Serve hand-offs in this process until SIGTERM (``mockmcp warm serve``: what ``start`` detaches).

    From ``/``: a server that runs for days must not hold the folder it was started from (each
    child moves to its client's folder)."""
    os.chdir("/")
    failed = preload()
    base = baseline(PACKAGE, encodings())
    server = WarmServer(paths, base, generators(), run, listen(paths), lifeline)
    for line in failed:
        server.log(f"not preloaded: {line}")
    return server.serve()
