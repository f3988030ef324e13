"""Bug (against scenarios/conformance-tool-arguments.yaml): passengers sent as a string, class left out."""

from _wire import Wire, call, main, req


def run(w: Wire) -> None:
    w.call(req(0, "server/discover"))
    w.call(req(1, "tools/list"))
    w.call(call(2, "book_flight", {"from": "CDG", "to": "NRT", "passengers": "2"}))


main(run)
