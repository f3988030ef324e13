"""When a hand-off is refused (and the launcher runs the mock directly instead).

A fork of the warm server is only indistinguishable from a direct spawn when the launcher's
process would have started the same interpreter in the same world. ``Baseline`` is what the
server knows of its own world when it starts; ``refusal`` compares one hand-off against it and
says why not, or None. Each reason is a difference a direct spawn would show: another user, a
different mount namespace or cgroup, ``PYTHON*`` variables (the hash seed among them) or text
encodings the interpreter would have chosen differently, a terminal on stdin (job control
belongs to a process of the terminal's session), limits above the server's hard ones (a child
cannot raise them), a working directory that is not there, or a package changed since the
server imported it (then the server stops too: its modules are stale).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from mockmcp.warm.handoff import Handoff

Stamp = dict[str, tuple[int, int, int]]
CHANGED = "the package changed since the warm server started"
# ``PYTHON*`` variables whose whole effect the child applies itself (``child.apply``), so they may
# differ: containers and CI set them, and the official SDK clients drop them from the mock's
# environment. Every other one decides something only a fresh interpreter could (the hash seed,
# sys.path, warnings filters, the allocator...), so a difference is refused.
APPLIED = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")


def package_stamp(package: str) -> Stamp:
    """Every source file of the package with its size and modification and change times.

    Files, not folders: a file added or removed changes the keys already, while a folder's times
    also change when an interpreter writes its ``__pycache__`` into it, which any spawn without
    ``PYTHONDONTWRITEBYTECODE`` does on its own (an SDK client passes a whitelisted environment);
    stamping folders made that first write stop the server as if the package had changed."""
    found: Stamp = {}
    for folder, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in (f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            found[path] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    return found


def python_variables(env: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The ``PYTHON*`` variables that must match the warm server's (all but ``APPLIED``)."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k not in APPLIED}


def _read(path: str) -> str | None:
    try:
        if path.startswith("/proc/") and "/ns/" in path:
            return os.readlink(path)
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


@dataclass(frozen=True)
class Baseline:
    uid: int
    python: dict[str, str]
    encodings: dict[str, str]
    mount_ns: str | None
    cgroup: str | None
    hard_limits: dict[str, int]
    package: str
    stamp: Stamp


def baseline(package: str, encodings: dict[str, str]) -> Baseline:
    """The server's own world, taken once when it starts (after its imports)."""
    import resource

    hard = {}
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            hard[name] = resource.getrlimit(getattr(resource, name))[1]
    return Baseline(
        uid=os.getuid(), python=python_variables(os.environ), encodings=encodings,
        mount_ns=_read("/proc/self/ns/mnt"), cgroup=_read("/proc/self/cgroup"),
        hard_limits=hard, package=package, stamp=package_stamp(package),
    )


def refusal(base: Baseline, handoff: Handoff, peer: tuple[int, int, int], stdin_fd: int) -> str | None:
    """Why this hand-off must run directly, or None. ``peer``: (pid, uid, gid) from SO_PEERCRED."""
    pid, uid, _ = peer
    if uid != base.uid:
        return f"uid {uid} is not the warm server's ({base.uid})"
    if pid != handoff.pid:
        return f"the hand-off names pid {handoff.pid}, the socket's peer is {pid}"
    mount_ns = _read(f"/proc/{pid}/ns/mnt")
    if mount_ns is None:  # nothing to read: the launcher ended after it sent the hand-off
        return f"the launcher (pid {pid}) is gone"
    if mount_ns != base.mount_ns:
        return "another mount namespace"
    if _read(f"/proc/{pid}/cgroup") != base.cgroup:
        return "another cgroup"
    if python_variables(handoff.env) != base.python:
        return "PYTHON* variables differ from the warm server's"
    if handoff.encodings != base.encodings:
        return f"text encodings {handoff.encodings} differ from the warm server's {base.encodings}"
    if os.isatty(stdin_fd):
        return "a terminal on stdin"
    for name, (_, hard) in handoff.limits.items():
        mine = base.hard_limits.get(name)
        if mine is None or (base.uid != 0 and mine != -1 and (hard == -1 or hard > mine)):
            return f"{name}'s hard limit is above the warm server's"
    try:
        if not stat.S_ISDIR(os.stat(handoff.cwd).st_mode):
            return "the working directory is not a directory"
    except OSError:
        return "the working directory is not there"
    now = package_stamp(base.package)
    if now != base.stamp:
        changed = sorted(set(now.items()) ^ set(base.stamp.items()))
        return f"{CHANGED} ({changed[0][0]})"
    return None
