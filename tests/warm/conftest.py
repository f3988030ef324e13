"""One warm server per test module, in a runtime folder of its own (never the user's)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.process import WarmServer


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WarmServer]:
    server = WarmServer(tmp_path_factory.mktemp("warm"))
    server.start()
    yield server
    server.stop()
