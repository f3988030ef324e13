"""Bug: the client sends a JSON-RPC response (there are no server requests in this revision)."""

from _wire import Wire, main, req


def run(w: Wire) -> None:
    w.call(req(1, "tools/list"))
    w.send({"jsonrpc": "2.0", "id": 0, "result": {}})  # as if answering a server request
    w.call(req(2, "tools/list"))  # still answered normally


main(run)
