"""One warm server per test module, in a runtime folder of its own (never the user's)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from support.process import WarmServer, runtime_folder


@pytest.fixture(scope="module")
def warm() -> Iterator[WarmServer]:
    server = WarmServer(runtime_folder())
    server.start()
    yield server
    server.stop()
    shutil.rmtree(server.folder, ignore_errors=True)
