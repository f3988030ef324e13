"""Finding scenario files and the pickle load cache, without yaml or cattrs.

Split out of ``loader`` so that ``mockmcp run`` on a scenario it has loaded
before never imports yaml or cattrs (tens of milliseconds per spawn, and suites
spawn the mock once per test). The cache is keyed by the file's bytes, its
folder, the flags that change loading, mockmcp's version and Python's.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Any

from .problems import LoadError, Problem


def bundled_dir() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "scenarios"
    return packaged if packaged.is_dir() else here.parent / "scenarios"


def bundled_names() -> list[str]:
    return sorted(p.stem for p in bundled_dir().glob("*.yaml"))


def resolve(name_or_path: str) -> Path:
    """A scenario argument is a file path, or the name of a bundled scenario."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or os.sep in name_or_path or p.exists():
        return p
    candidate = bundled_dir() / f"{name_or_path}.yaml"
    if candidate.exists():
        return candidate
    known = ", ".join(bundled_names())
    raise LoadError([Problem(name_or_path, 0, 0, f"no such file or bundled scenario (bundled: {known})", ())])


def cache_dir() -> Path:
    from .codecache import cache_dir

    return Path(cache_dir())


# The modules whose code decides what a loaded scenario is: their size and mtime
# are part of the key, so editing the model in a checkout never loads a stale pickle.
_CODE = ("model.py", "check.py", "loader.py", "templates.py", "loadcache.py")


def _code_fingerprint() -> bytes:
    here = Path(__file__).resolve().parent
    parts = []
    for name in _CODE:
        try:
            st = os.stat(here / name)
            parts.append(b"%d:%d" % (st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append(b"-")
    return b",".join(parts)


def cache_file(path: Path, raw: bytes, allow_absolute: bool) -> Path:
    from . import __version__

    digest = hashlib.sha256(
        b"%s\0%s\0%s\0%d\0%s\0"
        % (__version__.encode(), sys.version.encode(), str(path.resolve().parent).encode(), allow_absolute, _code_fingerprint())
        + raw
    ).hexdigest()
    return cache_dir() / f"{digest}.pickle"


def read(file: Path) -> Any:
    """The cached (scenario, warnings), or None on any miss or unreadable entry."""
    try:
        with open(file, "rb") as fh:
            return pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None  # a stale or damaged entry is a miss: load from YAML and overwrite it


class _Pickler(pickle.Pickler):
    """Pickles attrs instances as ``cls(*values)``.

    attrs' own pickling of slotted frozen classes stores a dict per object and
    restores it with a Python-level ``__setstate__`` loop; calling the
    generated ``__init__`` with positional values loads about twice as fast,
    which matters for scenarios with 100,000 rules. Classes whose ``__init__``
    does not take every field positionally keep the default.
    """

    _positional: dict[type, bool] = {}

    def reducer_override(self, obj: Any) -> Any:
        cls = type(obj)
        fields = getattr(cls, "__attrs_attrs__", None)
        if fields is None:
            return NotImplemented
        ok = self._positional.get(cls)
        if ok is None:
            ok = self._positional[cls] = not hasattr(cls, "__attrs_post_init__") and all(
                f.init and not f.kw_only and f.converter is None and f.alias == f.name for f in fields
            )
        if not ok:
            return NotImplemented
        return cls, tuple([getattr(obj, f.name) for f in fields])


def write(file: Path, result: Any) -> None:
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        tmp = file.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            _Pickler(fh, protocol=pickle.HIGHEST_PROTOCOL).dump(result)
        os.replace(tmp, file)
    except OSError:
        pass  # a read-only home is fine: we just load from YAML next time


def load_cached(name_or_path: str, *, allow_absolute: bool = False) -> Any:
    """The fast path of ``loader.load``: a cache hit, or None (then call ``loader.load``)."""
    try:
        path = resolve(name_or_path)
        raw = path.read_bytes()
    except (LoadError, OSError):
        return None  # ``loader.load`` reports it properly
    return read(cache_file(path, raw, allow_absolute))
