"""Where a warm server lives: a per-user 0700 runtime folder, and the socket, pid file and log in it.

The folder is ``$MOCKMCP_WARM_DIR`` (tests), ``$XDG_RUNTIME_DIR/mockmcp`` or ``/tmp/mockmcp-$UID``.
Whoever can write a socket there can hand this user's processes to a fork of the server, so a
folder not owned by the user, or open to its group or others, is refused outright (``UnsafeFolder``)
rather than repaired. The names come from the launcher (``server_name``: the version, the
interpreter and the package folder), so both sides agree without importing each other's layers.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

from mockmcp.warm.launcher import runtime_dir, server_name


WARM_ARGV = "MOCKMCP_WARM_ARGV"  # the launcher's prefix as a JSON list (``mockmcp warm argv``), for every spawner


def prefix_from_env() -> list[str] | None:
    """The launcher's prefix ``MOCKMCP_WARM_ARGV`` names (set by ``pytest --mockmcp-warm``, or by
    hand from ``mockmcp warm argv``), or None when it is unset or not a list of strings: what the
    fixture, the demo and the test helpers spawn instead of ``python -m mockmcp``."""
    text = os.environ.get(WARM_ARGV)
    if not text:
        return None
    try:
        prefix = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(prefix, list) and prefix and all(isinstance(p, str) and "\0" not in p for p in prefix) and prefix[0]:
        return prefix  # (a NUL, or an empty program name: no exec could take it)
    return None


class UnsafeFolder(Exception):
    """The runtime folder is another user's, open to group or others, or not an absolute path."""


class UnusablePath(Exception):
    """The runtime folder cannot be made (its parent is missing, or is a file), or something that is
    not a socket stands where the server's socket goes: the user's to fix, never removed for them."""


@dataclass(frozen=True)
class WarmPaths:
    folder: str
    name: str

    @property
    def socket(self) -> str:
        return os.path.join(self.folder, self.name + ".sock")

    @property
    def pidfile(self) -> str:
        return os.path.join(self.folder, self.name + ".pid")

    @property
    def log(self) -> str:
        return os.path.join(self.folder, self.name + ".log")


def warm_paths() -> WarmPaths:
    return WarmPaths(runtime_dir(dict(os.environ)), server_name())


def ensure_folder(folder: str) -> None:
    """Create ``folder`` 0700 if missing; refuse one that is not the user's own or not private, and
    a relative one (``refuse_relative``)."""
    refuse_relative(folder)
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise UnusablePath(f"cannot make the runtime folder {folder}: its parent folder does not exist;"
                           " create it, or choose another MOCKMCP_WARM_DIR") from None
    except NotADirectoryError:
        raise UnusablePath(f"cannot make the runtime folder {folder}: a part of its path is a file, not a folder;"
                           " choose another MOCKMCP_WARM_DIR") from None
    except OSError as exc:
        raise UnusablePath(f"cannot make the runtime folder {folder}: {exc.strerror};"
                           " choose another MOCKMCP_WARM_DIR") from None
    check_folder(folder)


def check_socket_path(path: str) -> None:
    """Refuse a path where something that is not a socket stands (a socket is a stale one's, or a
    live server's: the caller knows which); a file or folder there is not ours to remove."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        what = "a folder" if stat.S_ISDIR(mode) else "a file"
        raise UnusablePath(f"cannot listen on {path}: {what} that is not a socket is there; remove it,"
                           " or choose another MOCKMCP_WARM_DIR")


def refuse_relative(folder: str) -> None:
    """Clients spawn launchers from folders of their own, and the server runs from ``/``: a relative
    runtime folder would name a different place for each of them."""
    if not folder.startswith("/"):
        raise UnsafeFolder(f"{folder} is not an absolute path; the warm server's folder must be one (MOCKMCP_WARM_DIR)")


def check_folder(folder: str) -> None:
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeFolder(f"{folder} is not a directory")
    if st.st_uid != os.getuid():
        raise UnsafeFolder(f"{folder} belongs to uid {st.st_uid}, not to this user ({os.getuid()})")
    if st.st_mode & 0o077:
        raise UnsafeFolder(f"{folder} is open to its group or others (mode {stat.S_IMODE(st.st_mode):o}; 0700 expected)")


def read_pid(paths: WarmPaths) -> int | None:
    """The running server's pid from its pid file, None if there is none or it is gone."""
    try:
        with open(paths.pidfile, encoding="ascii") as fh:
            pid = int(fh.read().strip() or 0)
    except (OSError, ValueError):
        return None
    if pid <= 0:
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return None  # a recycled pid of another user's process
    return pid
