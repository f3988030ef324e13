"""Finding scenario files and the pickle load cache, without yaml or cattrs.

Split out of ``loader`` so that ``mockmcp run`` on a scenario it has loaded
before never imports yaml or cattrs (tens of milliseconds per spawn, and suites
spawn the mock once per test).

The cache key covers everything that decides what a loaded scenario is: the
file's bytes, its folder, the flags that change loading, Python's version, the
identity of every module of this package (size, inode, modification and change
times: an edit or a copy with preserved mtimes is still told apart) and the
versions of attrs, cattrs and PyYAML. So an entry can only be stale if a file's
bytes changed without its change time moving (the file system offers no way to)
or a SHA-256 collides.

Each entry carries the SHA-256 of its pickle, checked before unpickling: a file
that was damaged on disk is a miss; so is one another user could have written
(``read``). Reading it is therefore allowed to fail in one way only, ``OSError``
(no entry, or one we may not read); any exception from ``pickle.loads`` of
verified bytes is a bug in mockmcp and is not hidden.

Entries are read with CPython's C unpickler, ``_pickle.loads``, which is the very function
``pickle`` exports (tests/scenario/test_load_cache.py holds them to be one): importing
``pickle`` itself runs its pure-Python pickler's module, which only a miss uses, on every warm
spawn (docs/performance.md). Writing an entry (a miss) is ``cachewrite``'s.
"""

from __future__ import annotations

import _pickle
import errno
import hashlib
import os
import stat
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any


_PACKAGE = Path(__file__).resolve().parent.parent  # the mockmcp package
MAGIC = b"mockmcp-load-cache 2\n"
DIGEST = 32  # bytes of SHA-256 after the magic line
# (module to locate, distribution name as in its .dist-info folder)
_DEPENDENCIES = (("attr", "attrs"), ("cattrs", "cattrs"), ("yaml", "pyyaml"))
_SHAPING = ("scenario", "wire")  # the layers whose modules make a loaded scenario (code_fingerprint)


def bundled_dir() -> Path:
    packaged = _PACKAGE / "scenarios"
    return packaged if packaged.is_dir() else _PACKAGE.parent / "scenarios"


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.yaml"))


def _locate(name_or_path: str) -> Path | None:
    """The file a scenario argument names (a path, or a bundled scenario's name), or ``None``."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or os.sep in name_or_path or _exists(p):
        return p
    candidate = bundled_dir() / f"{name_or_path}.yaml"
    return candidate if _exists(candidate) else None


def _exists(path: Path) -> bool:
    """``Path.exists``, but a name the system refuses to look up (too long: ``ENAMETOOLONG``) is
    one that is not there, as it is for a missing file, never an exception."""
    try:
        return path.exists()
    except OSError:
        return False


MAX_FILE_BYTES = 64 * 1024 * 1024
"""The most a scenario file, or a file it references, may hold. Past it the file is a mistake
(a device, a log, a file still being written) that would otherwise be read into memory whole."""


def read_scenario(path: Path) -> bytes:
    """A scenario file's bytes; ``OSError`` when it cannot be read or holds more than
    ``MAX_FILE_BYTES`` (``mockmcp run /dev/zero`` ends with an error instead of taking memory
    for ever). A FIFO or a pipe (``<(...)``) is read as ``cat`` would read it."""
    chunks: list[bytes] = []
    total = 0
    with open(path, "rb", buffering=0) as fh:
        # A regular file in one read of its size (and one more byte, to see its end): asking for
        # the whole bound at once made every spawn allocate 64 MiB. A pipe's size is 0: chunks.
        want = os.fstat(fh.fileno()).st_size + 1
        while total <= MAX_FILE_BYTES:
            chunk = fh.read(min(max(want, 1 << 16), MAX_FILE_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    if total > MAX_FILE_BYTES:
        raise OSError(errno.EFBIG, f"more than {MAX_FILE_BYTES} bytes, the most a scenario file may hold")
    return b"".join(chunks)


def resolve(name_or_path: str) -> Path:
    """A scenario argument is a file path, or the name of a bundled scenario."""
    found = _locate(name_or_path)
    if found is not None:
        return found
    from mockmcp.scenario.problems import LoadError, Problem, did_you_mean  # (errors only: a warm spawn skips the import)

    hint = did_you_mean(name_or_path, bundled_names()) or " (`mockmcp list` shows the bundled ones)"
    raise LoadError([Problem(name_or_path, 0, 0, f"no such file or bundled scenario{hint}", ())])


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/mockmcp``, else ``~/.cache/mockmcp``. A relative ``XDG_CACHE_HOME`` is
    ignored, as the XDG specification asks: it would put a cache folder in whatever folder each
    spawn's client ran in."""
    root = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(root):
        root = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "mockmcp"


@lru_cache(maxsize=1)
def code_fingerprint() -> bytes:
    """SHA-256 over what identifies the module files that make a loaded scenario and the
    versions of the libraries that build one (computed once per process).

    Those modules are the ``scenario`` and ``wire`` layers and the package's ``__init__``:
    the layer contract (``[tool.importlinter]``, run by tests/package/test_layers.py) keeps
    ``scenario`` importing nothing of the package's but ``wire`` and itself, so no other
    module can shape what the cache holds, and a spawn does not stat the other 140.

    A module is identified by its name, size, inode and modification and change times,
    not by its bytes: reading and hashing 700 kB of source was 4% of a warm spawn. Any
    write to a file moves its change time (``st_ctime_ns``, which no tool can set back),
    and a copy is a new inode, so an edit, a checkout or a copy with preserved
    modification times is still a miss; unchanged files always hit.
    """
    h = hashlib.sha256()
    h.update(_stamp(_PACKAGE / "__init__.py"))
    folders = [_PACKAGE / layer for layer in _SHAPING]
    while folders:
        folder = folders.pop()
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.endswith(".py"):
                h.update(_stamp(entry))
            elif entry.is_dir(follow_symlinks=False) and entry.name.isidentifier():
                folders.append(Path(entry.path))
    for module, dist in _DEPENDENCIES:
        h.update(b"\0%s=%s" % (dist.encode(), _version(module, dist).encode()))
    return h.digest()


def _stamp(file: os.DirEntry[str] | Path) -> bytes:
    """What identifies one module file in the fingerprint (see ``code_fingerprint``)."""
    st = file.stat()
    return b"%s\0%d\0%d\0%d\0%d\0%d\0" % (
        os.fsencode(file), st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns, st.st_ctime_ns)


def _origin(module: str) -> str | None:
    """Where a top-level module's file is, as ``importlib.util.find_spec`` finds it: the loaded
    module's spec, else the first meta-path finder's (the finders' public protocol; importing
    ``importlib.util`` and its ABCs just for this cost every spawn)."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        spec = getattr(loaded, "__spec__", None)
        return None if spec is None else spec.origin
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is not None:
            spec = find(module, None)
            if spec is not None:
                return spec.origin  # type: ignore[no-any-return]
    return None


def _version(module: str, dist: str) -> str:
    """A library's version from its ``.dist-info`` folder name, found without
    importing the library (``importlib.metadata`` alone costs ~30 ms a spawn).

    Where no such folder sits beside the library (a vendored or source copy) its
    ``__init__`` file's size and mtime stand in for the version.
    """
    origin = _origin(module)
    if origin is None:
        return "absent"
    site = os.path.dirname(os.path.dirname(origin))
    prefix = dist.lower() + "-"
    for entry in _listing(site):
        low = entry.lower()
        if low.startswith(prefix) and low.endswith(".dist-info"):
            return entry[len(prefix) : -len(".dist-info")]
    st = os.stat(origin)
    return f"file {st.st_size} {st.st_mtime_ns}"


@lru_cache(maxsize=4)
def _listing(site: str) -> tuple[str, ...]:
    """A site folder's entries, listed once: the libraries of the key usually share one."""
    return tuple(os.listdir(site))


def cache_file(path: Path, raw: bytes, allow_absolute: bool) -> Path:
    digest = hashlib.sha256(
        b"%s\0%s\0%d\0%s\0"
        % (sys.version.encode(), str(path.resolve().parent).encode(), allow_absolute, code_fingerprint())
        + raw
    ).hexdigest()
    return cache_dir() / f"{digest}.pickle"


def read(file: Path) -> Any:
    """The cached (scenario, warnings), or None: no entry, an unreadable one, a damaged one, or
    one that anyone but this user could have written.

    Unpickling runs code the pickle names, so only an entry this user wrote is unpickled: a
    regular file (never through a link), owned by this user and writable by no one else,
    checked on the descriptor it is read from. The folder is the user's own cache, but
    ``HOME`` or ``XDG_CACHE_HOME`` may point into a shared folder (``/tmp`` in some
    containers), where another user can put a file in our place before we make one."""
    try:
        fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # no entry yet (or a cache folder we may not read): load from YAML
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None  # not ours alone: load from YAML (the writer replaces it with one that is)
        with open(fd, "rb", closefd=False) as fh:
            blob = fh.read()
    except OSError:
        return None
    finally:
        os.close(fd)
    head = len(MAGIC) + DIGEST
    payload = blob[head:]
    if blob[: len(MAGIC)] != MAGIC or blob[len(MAGIC) : head] != hashlib.sha256(payload).digest():
        return None  # damaged or from another format: load from YAML and overwrite it
    return _pickle.loads(payload)


def load_cached(name_or_path: str, *, allow_absolute: bool = False) -> Any:
    """The fast path of ``loader.load``: a cache hit, or None (then call ``loader.load``)."""
    path = _locate(name_or_path)
    if path is None:
        return None  # ``loader.load`` reports it properly
    try:
        raw = read_scenario(path)
    except OSError:
        return None
    return read(cache_file(path, raw, allow_absolute))
