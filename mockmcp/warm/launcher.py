"""The thin launcher a client spawns instead of ``mockmcp``: ``python -S -P -c "...import launcher..." ARGS``.

(``mockmcp warm argv``: the interpreter imports this file as a top-level module, from its folder,
so that it runs from cached bytecode; ``python -S .../mockmcp/warm/launcher.py ARGS`` does the same.)

Stands alone: no mockmcp layer, and only built-in modules (``posix``, ``_socket``, ``_signal``,
``_json``, ``_struct``, ``_codecs``, ``_locale``, ``resource``), since ``os``, ``socket``, ``signal``, ``json`` and
``hashlib`` would each cost more than the whole hand-off (their ``enum``, ``re`` and OpenSSL
imports); without site-packages (``-S``) the interpreter itself starts in a few milliseconds.

It hands its whole process over to the warm server (``mockmcp warm start``): argv, cwd, the
environment, umask, resource limits, signal dispositions and mask, and its standard streams as
file descriptors (SCM_RIGHTS). The server forks a child with everything imported; the launcher
then lets go of its pipes (so end of file and broken pipes are the child's, as with a direct
spawn), forwards the signals it receives and exits the way the child did: the same status, or
killed by the same signal.

Whenever there is no warm server, or it refuses (another user or namespace, a terminal on
stdin, different ``PYTHON*`` variables, a changed package...), the launcher becomes a direct
spawn: it execs ``python -P -m mockmcp ARGS`` in its own process (same pid), and prints nothing.

The socket's name and the hand-off's client side are here, so the warm server's modules import
them from this module (``mockmcp.warm.paths``, ``mockmcp.warm.handoff``), never the reverse.
"""

from __future__ import annotations

import _codecs
import _json
import _locale
import _socket
import _struct
import posix
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # (typeshed has no stubs for the built-in ``_signal``; ``signal`` re-exports it)
    import signal as _signal
else:
    import _signal

MAGIC = b"MMW1"
HEADER_FORMAT = ">4sI"  # magic, length of the JSON body that follows
HEADER_SIZE = 8
MAX_BODY = 1 << 20  # a hand-off (argv, the environment, ...) is refused past 1 MiB
MAX_ANSWER = 4096  # one answer line from the server
FORWARDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGWINCH")
LIMITS = ("RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_DATA", "RLIMIT_STACK",
          "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_MEMLOCK")
ANSWER_TIMEOUT = 10.0  # seconds for the server to fork (or refuse) once the hand-off is sent
WARM_DIR = "MOCKMCP_WARM_DIR"  # the runtime folder, when not the per-user default (tests use it)
# The prefix's last item (``mockmcp warm argv``): the runtime folder ``warm argv`` saw. Clients
# give the mock a whitelisted environment (the official SDKs pass HOME, LOGNAME, PATH, SHELL, TERM
# and USER), without ``MOCKMCP_WARM_DIR`` or ``XDG_RUNTIME_DIR``: the prefix must find the server alone.
DIR_OPTION = "--warm-dir="
PACKAGE = __file__.rsplit("/", 2)[0]  # .../mockmcp, as the launcher was named (no realpath: no os)
Environ = dict[str, str]


def version(package: str = PACKAGE) -> str:
    """mockmcp's version, read from the package's ``__init__`` (importing it would need site)."""
    try:
        with open(package + "/__init__.py", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("__version__ = "):
                    return line.split("=", 1)[1].strip().strip("\"'")
    except OSError:
        pass
    return "unknown"


def environment() -> Environ:
    """The process's environment as ``os.environ`` would decode it."""
    enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    return {k.decode(enc, errors): v.decode(enc, errors) for k, v in posix.environ.items()}


def runtime_dir(environ: Environ, given: str = "") -> str:
    """The per-user folder of warm servers: ``$MOCKMCP_WARM_DIR``, else ``given`` (the prefix's
    ``--warm-dir=``), else ``$XDG_RUNTIME_DIR/mockmcp``, else ``/tmp/mockmcp-$UID``."""
    chosen = environ.get(WARM_DIR) or given
    if chosen:
        return chosen
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and xdg.startswith("/"):
        return xdg.rstrip("/") + "/mockmcp"
    return f"/tmp/mockmcp-{posix.getuid()}"


def server_name(package: str = PACKAGE) -> str:
    """``warm-<version>-<hash>``: one warm server per mockmcp version, package folder, interpreter
    build and the folder of ``sys.executable`` (a venv's ``bin``: its ``python`` and ``python3`` share
    a server; ``sys.prefix`` would not do, ``-S`` leaves it the base interpreter's)."""
    v = version(package)
    digest = 0xCBF29CE484222325  # FNV-1a, 64 bits: a name, not a secret
    where = sys.executable.rsplit("/", 1)[0]
    for byte in "\0".join((where, sys.version, package, v)).encode("utf-8", "surrogateescape"):
        digest = ((digest ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"warm-{v}-{digest:016x}"


def socket_path(environ: Environ, given: str = "") -> str:
    return runtime_dir(environ, given) + "/" + server_name() + ".sock"


def encodings() -> Environ:
    """What this interpreter's environment decided about text (the child must decide the same):
    the file system's encoding, the one ``open()`` uses by default (UTF-8 mode's, else the
    locale's: a client that drops ``LANG=C.UTF-8`` gets UTF-8 mode and the same encoding) and
    the standard streams'."""
    text = "utf-8" if sys.flags.utf8_mode else _codecs.lookup(_locale.getencoding()).name
    found = {"fs": sys.getfilesystemencoding() + "/" + sys.getfilesystemencodeerrors(), "text": text}
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None:
            found[name] = f"{stream.encoding}/{stream.errors}"
    return found


def to_json(value: object) -> str:
    """Compact ASCII JSON of strings, integers, lists and objects (``json`` costs ``re`` and ``enum``)."""
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(to_json(str(k)) + ":" + to_json(v) for k, v in value.items()) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")


def handoff_body(argv: list[str], pid: int, environ: Environ) -> bytes:
    """The hand-off's JSON body: everything a fresh process would have inherited from its parent."""
    import resource

    limits = {}
    for name in LIMITS:
        which = getattr(resource, name, None)
        if which is not None:
            limits[name] = list(resource.getrlimit(which))
    umask = posix.umask(0o022)
    posix.umask(umask)
    ignored = [int(s) for s in _signal.valid_signals() if _ignored(int(s))]
    body = {
        "argv": argv,
        "cwd": posix.getcwd(),
        "env": environ,
        "umask": umask,
        "limits": limits,
        "pid": pid,
        "ignored": ignored,
        "blocked": sorted(int(s) for s in _signal.pthread_sigmask(_signal.SIG_BLOCK, [])),
        "encodings": encodings(),
    }
    return to_json(body).encode("ascii")


def _ignored(sig: int) -> bool:
    try:
        return _signal.getsignal(sig) == _signal.SIG_IGN
    except (ValueError, OSError):
        return False


def frame(body: bytes) -> bytes:
    return _struct.pack(HEADER_FORMAT, MAGIC, len(body)) + body


def direct(argv: list[str]) -> None:
    """Become a direct spawn: ``python -P -m mockmcp ARGS`` in this very process (same pid, same streams).

    ``-P``, as the prefix itself: ``-m`` would put the client's working folder first on the module
    path, and a ``json.py`` or ``trio.py`` of the client's project would stand in for the real one."""
    posix.execv(sys.executable, [sys.executable, "-P", "-m", "mockmcp", *argv])


def parse_answer(line: bytes, key: str) -> int | None:
    """The integer of a ``{"KEY": N}`` answer line, None for any other line."""
    prefix = b'{"' + key.encode() + b'": '
    if not line.startswith(prefix) or not line.endswith(b"}"):
        return None
    digits = line[len(prefix):-1]
    return int(digits) if digits.lstrip(b"-").isdigit() and len(digits) < 20 else None


class Launcher:
    """One hand-off, after it was sent: relay signals one way and the exit status the other."""

    def __init__(self, sock: _socket.socket, stderr: int) -> None:
        self.sock = sock
        self.stderr = stderr  # a private copy of fd 2, for the one message the launcher may print
        self.buffer = b""

    def answer(self) -> bytes | None:
        """The server's next answer line, or None at end of file (or garbage)."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_ANSWER:
                return None
            try:
                chunk = self.sock.recv(MAX_ANSWER)
            except OSError:  # (the timeout too)
                return None
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def forward(self, signum: int, frame: object) -> None:
        try:
            self.sock.sendall(b'{"signal":%d}\n' % signum)
        except OSError:
            pass  # the server is gone: the status wait below sees it

    def let_go(self) -> None:
        """Close this process's copies of the client's pipes: only the child holds them now."""
        null = posix.open("/dev/null", posix.O_RDWR)
        for fd in (0, 1, 2):
            posix.dup2(null, fd)
        posix.close(null)

    def relay(self, mask: set[int]) -> int:
        """Forward signals until the child's status comes; return it as a wait status. ``mask``:
        the signal mask to restore once the handlers are in (the signals that came while blocked
        are forwarded then)."""
        for sig in forwarded():
            _signal.signal(sig, self.forward)
        _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
        self.sock.settimeout(None)
        line = self.answer()
        status = parse_answer(line, "status") if line is not None else None
        if status is None:
            posix.write(self.stderr, b"mockmcp: the warm server went away while the mock ran (it was killed with it)\n")
            return int(_signal.SIGKILL)  # a wait status: killed by SIGKILL
        return status


def exit_like(status: int) -> None:
    """End this process as the child ended: its exit code, or the signal that killed it."""
    code = posix.waitstatus_to_exitcode(status)
    if code >= 0:
        posix._exit(code)
    sig = -code
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, ValueError, OSError):
        pass  # no core file of the launcher: the child already dumped its own, if its limits said so
    try:
        _signal.signal(sig, _signal.SIG_DFL)
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, [sig])
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP: no disposition, no mask
    posix.kill(posix.getpid(), sig)
    posix._exit(128 + sig)  # (a signal whose default action is not to terminate)


def connect(path: str) -> _socket.socket:
    """A connection to the warm server at ``path``, refused unless the server is this user's."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(ANSWER_TIMEOUT)
        sock.connect(path)
        _, uid, _ = _struct.unpack("3i", sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12))
        if uid != posix.getuid():
            raise OSError("the warm socket is another user's")
    except BaseException:
        sock.close()
        raise
    return sock


def hand_off(argv: list[str], given: str = "") -> int | None:
    """The child's wait status, or None when there is no warm server or it refused (nothing was forked).
    ``given``: the runtime folder the prefix names."""
    if not sys.platform.startswith("linux"):
        return None
    environ = environment()
    if environ.get("MOCKMCP_WARM") == "0":
        return None
    try:
        for fd in (0, 1, 2):  # one closed: the socket opened next would take its number and be sent as it
            posix.fstat(fd)  # (run directly: ``cli.main`` says what a closed stream means)
        if posix.isatty(0):
            return None  # refused anyway: job control of a terminal is the direct process's
        data = frame(handoff_body(argv, posix.getpid(), environ))  # (with the mask before the block below)
    except OSError:
        return None
    # The forwarded signals wait, blocked, until there is a child to forward them to: a client
    # that ends the mock as soon as it has its answer (the TypeScript client's discover probe gets
    # end of file and SIGTERM at once) must reach the child, which then ends as a direct spawn
    # would (its report written), not kill the launcher by the default action first.
    mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, forwarded())
    status = send_and_relay(data, socket_path(environ, given), mask)
    if status is None:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)  # a direct spawn starts with the caller's mask
    return status


def forwarded() -> list[int]:
    return [sig for sig in (getattr(_signal, name, None) for name in FORWARDED) if sig is not None]


def send_and_relay(data: bytes, path: str, mask: set[int]) -> int | None:
    """Hand ``data`` off to the server at ``path`` and relay until the child ends: its wait
    status, or None when nothing was forked."""
    try:
        sock = connect(path)
    except OSError:
        return None
    try:
        rights = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, _struct.pack("3i", 0, 1, 2))]
        sent = sock.sendmsg([data[:4096]], rights)
        if sent < len(data):
            # Never an empty send once all is sent: by then the server may have forked, the
            # child ended and the server closed the connection, and an empty send on it fails
            # with EPIPE, which would run the mock a second time, directly.
            sock.sendall(data[sent:])
    except OSError:
        sock.close()
        return None
    launcher = Launcher(sock, posix.dup(2))
    line = launcher.answer()
    if line is None or parse_answer(line, "child") is None:
        sock.close()  # refused, garbage or gone before forking: run directly
        posix.close(launcher.stderr)
        return None
    launcher.let_go()
    return launcher.relay(mask)


def split_argv(args: list[str]) -> tuple[str, list[str]]:
    """(the runtime folder the prefix names, or "", mockmcp's own arguments)."""
    if args and args[0].startswith(DIR_OPTION):
        return args[0][len(DIR_OPTION):], args[1:]
    return "", args


def main() -> None:
    given, argv = split_argv(sys.argv[1:])
    if next((a for a in argv if not a.startswith("-")), None) == "warm":
        direct(argv)  # ``warm stop`` forked by the server it stops would be SIGTERMed with its mocks
    status = hand_off(argv, given)
    if status is None:
        direct(argv)
    else:
        exit_like(status)


if __name__ == "__main__":
    main()
