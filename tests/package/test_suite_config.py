"""The suite's own configuration (tests/conftest.py): how xdist spreads the tests over the cores.

A module with a fixture shared by its tests (module, class or package scope) stays on one
worker so the fixture is built once; any other test is a unit of its own, so a module of long
independent tests no longer runs end to end on one core while the other idles.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from support.paths import ROOT


def _root_conftest(pytestconfig: pytest.Config) -> Any:
    """tests/conftest.py as pytest loaded it (``import conftest`` would find another folder's
    conftest, tests/warm's, when that folder's tests run in the same process first)."""
    path = ROOT / "tests" / "conftest.py"
    (found,) = [p for p in pytestconfig.pluginmanager.get_plugins() if getattr(p, "__file__", None) == str(path)]
    return found


def _scheduler(pytestconfig: pytest.Config) -> Any:
    conftest = _root_conftest(pytestconfig)
    pytest.importorskip("xdist")  # (a test dependency; present wherever the README's command ran)
    fake = SimpleNamespace(
        stash={conftest._FINER_UNITS: True}, rootpath=pytestconfig.rootpath,
        getvalue=lambda name: {"numprocesses": 2, "tx": ["popen"] * 2, "dist": "loadscope"}.get(name),
        option=SimpleNamespace(loadscopereorder=False, numprocesses=2, tx=["popen"] * 2, maxworkerrestart=None),
    )
    sched = conftest.pytest_xdist_make_scheduler(fake, log=None)  # type: ignore[arg-type]
    assert sched is not None
    return sched


def test_tests_of_a_module_with_a_shared_fixture_stay_together(pytestconfig: pytest.Config) -> None:
    sched = _scheduler(pytestconfig)
    # test_wheel.py builds a wheel and a venv once per module
    assert sched._split_scope("tests/package/test_wheel.py::test_a") == sched._split_scope("tests/package/test_wheel.py::test_b") \
        == "tests/package/test_wheel.py"
    # test_interop_matrix.py has none: its long matrix tests go to whichever worker is free
    a = sched._split_scope("tests/interop/test_interop_matrix.py::test_every_bundled_scenario_with_every_client_gives_the_committed_verdict")
    b = sched._split_scope("tests/interop/test_interop_matrix.py::test_every_bundled_scenario_over_http_gives_the_committed_verdict")
    assert a != b


def test_an_explicit_dist_is_left_to_xdist(pytestconfig: pytest.Config) -> None:
    conftest = _root_conftest(pytestconfig)
    fake = SimpleNamespace(stash={})
    assert conftest.pytest_xdist_make_scheduler(fake, log=None) is None  # type: ignore[arg-type]
