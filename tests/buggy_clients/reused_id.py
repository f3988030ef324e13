"""Bug: a second request reuses the id of a request still in flight."""

from _wire import Wire, call, main, req


def run(w: Wire) -> None:
    w.send(call(1, "slow"))  # answered after a delay
    w.call(req(1, "tools/list"))  # same id while 1 is in flight: the mock answers -32600
    w.recv()  # the slow answer


main(run)
