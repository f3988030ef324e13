"""The load cache's key and its damaged entries.

The key must cover every piece of code that shapes a cached scenario, so an
edit anywhere in the layers that make one (not only in a list of modules) is a
miss; an entry damaged on disk is a miss; and the cache hides no other exception.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest
from support.paths import ROOT
from support.messages import line, request
from support.process import mockmcp_cmd

from mockmcp.scenario import cachewrite, loadcache
from mockmcp.scenario.loader import load


def spawn(package_root: Path, cache: Path) -> set[str]:
    """Run ``mockmcp run default`` from ``package_root``; the modules it imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mockmcp", "run", "default"],
        input=line(request(1, "server/discover")), capture_output=True, timeout=60, cwd=package_root,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(package_root)},
    )
    assert proc.returncode == 0 and b'"result"' in proc.stdout, proc.stderr[-2000:]
    return {row.split("|")[-1].strip() for row in proc.stderr.decode().splitlines() if row.startswith("import time:")}


def test_editing_a_module_that_makes_a_scenario_is_a_cache_miss_and_no_other(tmp_path):
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "mockmcp", copy / "mockmcp")  # with its bytecode (conftest writes it), as a checkout has
    shutil.copytree(ROOT / "scenarios", copy / "scenarios")
    cache = tmp_path / "cache"
    # the loader is imported only on a miss (a hit is read by loadcache alone)
    assert "mockmcp.scenario.loader" in spawn(copy, cache)  # cold: loads from YAML and fills the cache
    assert "mockmcp.scenario.loader" not in spawn(copy, cache)  # warm: a hit
    for edited in ("scenario/expectations.py", "scenario/model/tasks.py", "wire/errors.py", "__init__.py", "scenario/new_module.py"):
        with open(copy / "mockmcp" / edited, "a") as fh:
            fh.write("\n# an edit\n")
        assert "mockmcp.scenario.loader" in spawn(copy, cache), f"an edit of {edited} is a miss"
        assert "mockmcp.scenario.loader" not in spawn(copy, cache)
    with open(copy / "mockmcp" / "core" / "engine.py", "a") as fh:  # no loaded scenario runs it
        fh.write("\n# an edit\n")
    assert "mockmcp.scenario.loader" not in spawn(copy, cache), "an edit outside the key's layers is a hit"


def test_the_layers_the_key_stamps_import_no_other_module_of_the_package():
    """The key stamps the ``scenario`` and ``wire`` layers and the package's ``__init__``
    (``loadcache._SHAPING``): every import of the package's own modules there, at run time or
    under ``TYPE_CHECKING``, stays inside them, so nothing else can shape a loaded scenario."""
    inside = tuple(f"mockmcp.{layer}" for layer in loadcache._SHAPING)
    outside = []
    for layer in loadcache._SHAPING:
        for file in sorted((ROOT / "mockmcp" / layer).rglob("*.py")):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom):
                    assert node.level == 0, f"{file}: a relative import"
                    names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                    names = names[:1] if node.module != "mockmcp" else names[1:]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                outside += [f"{file.relative_to(ROOT)}: {n}" for n in names
                            if (n == "mockmcp" or n.startswith("mockmcp.")) and not n.startswith(inside)]
    assert outside == []


@pytest.mark.parametrize(("module", "dist"), [("attr", "attrs"), ("cattrs", "cattrs"), ("yaml", "pyyaml")])
def test_the_key_holds_the_versions_of_the_libraries_that_load(module, dist):
    assert loadcache._version(module, dist) == importlib.metadata.version(dist)


def cached_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    load("default")
    (entry,) = (tmp_path / "mockmcp").glob("*.pickle")
    return entry


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # torn
        lambda b: b[:-1] + bytes([b[-1] ^ 1]),  # one bit flipped in the pickle
        lambda b: b"",  # empty
        lambda b: b"\x80\x05garbage",  # not even ours
        lambda b: b[:20] + b"\0" + b[21:],  # the header
    ],
    ids=["torn", "bit-flip", "empty", "foreign", "header"],
)
def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path, monkeypatch, damage):
    entry = cached_default(tmp_path, monkeypatch)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    assert loadcache.read(entry) is None
    scenario, _ = load("default")
    assert scenario == load("default", use_cache=False)[0]
    assert entry.read_bytes() == good


def test_an_entry_that_verifies_but_fails_to_unpickle_is_not_hidden(tmp_path, monkeypatch):
    """Verified bytes that do not unpickle mean a bug in mockmcp: the error shows."""
    entry = cached_default(tmp_path, monkeypatch)
    payload = entry.read_bytes()[len(loadcache.MAGIC) + loadcache.DIGEST :]
    payload = payload.replace(b"Scenario", b"Scenariy", 1)  # a class that does not exist (same length)
    entry.write_bytes(loadcache.MAGIC + hashlib.sha256(payload).digest() + payload)
    with pytest.raises(AttributeError, match="Scenariy"):
        loadcache.read(entry)


def test_the_reader_unpickles_with_the_function_pickle_exports():
    """``loadcache`` reads with ``_pickle.loads`` so that a warm spawn need not import ``pickle``:
    that must be the very function ``pickle.loads`` is (CPython's C unpickler), or the reader and
    the writer (``cachewrite``, through ``pickle``) could disagree."""
    import _pickle
    import pickle

    assert _pickle.loads is pickle.loads and loadcache._pickle is _pickle


@pytest.mark.parametrize("name", loadcache.bundled_names())
def test_an_entry_unpickles_to_the_scenario_it_was_written_from(name):
    """The writer's reduced form (``cls(*values)``, trailing defaults left out) read back by the
    reader's unpickler is the scenario the loader built, field for field."""
    import _pickle
    import pickle

    loaded = load(name, use_cache=False)
    buffer = io.BytesIO()
    cachewrite.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(loaded)
    back = _pickle.loads(buffer.getvalue())
    assert back == loaded
    assert repr(back) == repr(loaded)  # (every field, and classes whose eq leaves one out)


def test_trailing_defaults_are_left_out_of_an_entry():
    from mockmcp.scenario.model.base import Rule, TextStep

    rule = Rule(steps=[TextStep("hi")])
    reduced = cachewrite.Pickler(io.BytesIO()).reducer_override(rule)
    assert reduced[0] is Rule and len(reduced[1]) < len(attrs.fields(Rule))
    assert Rule(*reduced[1]) == rule


def test_an_unreadable_cache_is_a_miss(tmp_path, monkeypatch):
    entry = cached_default(tmp_path, monkeypatch)
    entry.unlink()
    entry.mkdir()  # reading a directory: IsADirectoryError
    assert loadcache.read(entry) is None
    assert load("default")[0].mockmcp == 1


def test_an_edit_that_keeps_size_and_mtime_is_still_a_miss(tmp_path):
    """The key reads modules' identities, not their bytes: an edit of the same length with
    the modification time set back must still change it (the change time moves)."""
    import time

    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "mockmcp", copy / "mockmcp", ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "mockmcp" / "scenario" / "expectations.py"  # (in a layer folder: the key walks them all)
    code = [sys.executable, "-c", "from mockmcp.scenario import loadcache; print(loadcache.code_fingerprint().hex())"]

    def key() -> str:
        return subprocess.run(code, capture_output=True, text=True, check=True, cwd=copy,
                              env={**os.environ, "PYTHONPATH": str(copy)}).stdout

    before = key()
    assert key() == before  # stable while nothing changes
    st = os.stat(module)
    text = module.read_bytes()
    time.sleep(0.01)
    module.write_bytes(text[:-1] + (b"#" if text[-1:] != b"#" else b" "))
    os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(module).st_size == st.st_size and os.stat(module).st_mtime_ns == st.st_mtime_ns
    assert key() != before


def test_a_miss_keeps_the_cache_folder_within_its_bounds(tmp_path):
    """Suites write scenarios under new temporary folders, so every run adds entries: past
    ``MAX_ENTRIES`` a miss (here a real ``mockmcp run``) removes the oldest written until a
    quarter of the bound is free, and keeps the newest and its own."""
    folder = tmp_path / "cache" / "mockmcp"
    folder.mkdir(parents=True)
    old = [folder / f"{n:04d}.pickle" for n in range(cachewrite.MAX_ENTRIES + 10)]
    for n, file in enumerate(old):
        file.write_bytes(b"x")
        os.utime(file, ns=(n * 10**9, n * 10**9))  # written in this order
    scenario = tmp_path / "mine.yaml"
    shutil.copy(ROOT / "scenarios" / "default.yaml", scenario)
    proc = subprocess.run([sys.executable, "-m", "mockmcp", "run", str(scenario)], input=line(request(1, "server/discover")),
                          capture_output=True, timeout=60, cwd=ROOT, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 0 and b'"result"' in proc.stdout, proc.stderr[-2000:]
    left = sorted(p.name for p in folder.iterdir())
    assert len(left) == cachewrite.MAX_ENTRIES * 3 // 4
    assert old[0].name not in left and old[-1].name in left  # the oldest went first
    assert [name for name in left if not name[0].isdigit() or len(name) > len("0000.pickle")], "its own entry stays"


def test_past_its_bytes_the_cache_removes_the_oldest_too(tmp_path):
    for n in range(4):
        (tmp_path / f"{n}.pickle").write_bytes(b"x" * 100)
        os.utime(tmp_path / f"{n}.pickle", ns=(n * 10**9, n * 10**9))
    cachewrite.prune(tmp_path, max_entries=100, max_bytes=350)  # 400 bytes: down to 262 or less
    assert sorted(p.name for p in tmp_path.iterdir()) == ["2.pickle", "3.pickle"]
    cachewrite.prune(tmp_path, max_entries=100, max_bytes=350)  # within bounds: nothing goes
    assert len(list(tmp_path.iterdir())) == 2


class _Planted:
    """What another user might put in our cache: unpickling it writes a file (it runs code)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[Path, str]]:
        return (Path.write_text, (self.marker, "ran"))


def plant(entry: Path, marker: Path) -> bytes:
    """Replace ``entry`` with a well-formed one (magic, digest) whose pickle runs code."""
    import pickle

    payload = pickle.dumps(_Planted(marker))
    data = loadcache.MAGIC + hashlib.sha256(payload).digest() + payload
    entry.unlink()
    entry.write_bytes(data)
    return data


@pytest.mark.parametrize("how", ["group-writable", "world-writable", "another owner", "a link"])
def test_an_entry_anyone_else_could_have_written_is_never_unpickled(tmp_path, monkeypatch, how):
    entry = cached_default(tmp_path, monkeypatch)
    assert entry.stat().st_mode & 0o777 == 0o600 and entry.parent.stat().st_mode & 0o777 == 0o700
    marker = tmp_path / "ran"
    plant(entry, marker)
    entry.chmod(0o600)
    assert loadcache.read(entry) is not None and marker.exists()  # (the plant runs when it passes for ours)
    marker.unlink()
    if how == "group-writable":
        entry.chmod(0o620)
    elif how == "world-writable":
        entry.chmod(0o602)
    elif how == "another owner":
        monkeypatch.setattr(os, "geteuid", lambda: entry.stat().st_uid + 1)
    else:
        elsewhere = tmp_path / "elsewhere.pickle"
        entry.rename(elsewhere)
        entry.symlink_to(elsewhere)
    assert loadcache.read(entry) is None and not marker.exists()
    assert load("default")[0] == load("default", use_cache=False)[0]  # loaded from YAML, and written anew
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert load("default")[0] == load("default", use_cache=False)[0]  # (the entry written in its place: ours)
    assert not marker.exists() and entry.stat(follow_symlinks=False).st_mode & 0o777 == 0o600


def test_a_mock_spawned_with_a_planted_cache_entry_does_not_run_it(tmp_path):
    """Through the real process: a world-writable entry at the very key the spawn computes."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    first = subprocess.run(mockmcp_cmd("run", "default"), input=line(request(1, "server/discover")), env=env,
                           capture_output=True, timeout=60)
    assert first.returncode == 0, first.stderr
    (entry,) = (tmp_path / "mockmcp").glob("*.pickle")
    marker = tmp_path / "ran"
    plant(entry, marker)
    entry.chmod(0o666)
    proc = subprocess.run(mockmcp_cmd("run", "default"), input=line(request(1, "server/discover")), env=env,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0 and b'"result"' in proc.stdout, proc.stderr
    assert not marker.exists()
    assert entry.stat().st_mode & 0o777 == 0o600  # the spawn wrote its own entry in its place


def test_a_relative_cache_home_is_ignored(tmp_path, monkeypatch):
    """(The XDG specification: a relative path in these variables is invalid.) Before, each spawn
    made a cache folder under whatever folder its client ran in."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for value in ("relative/cache", "", "."):
        monkeypatch.setenv("XDG_CACHE_HOME", value)
        assert loadcache.cache_dir() == tmp_path / "home" / ".cache" / "mockmcp"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert loadcache.cache_dir() == tmp_path / "xdg" / "mockmcp"
