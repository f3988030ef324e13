"""Bug (against scenarios/stdio-version-retry.yaml): on -32022 to the probe it falls back to initialize."""

from _wire import Wire, main, req


def run(w: Wire) -> None:
    probe = w.call(req(0, "server/discover"))
    assert probe["error"]["code"] == -32022
    w.call({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "buggy-client", "version": "0"}}})


main(run)
