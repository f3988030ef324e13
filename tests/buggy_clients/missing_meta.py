"""Bug: a request without params._meta (no protocol version, no capabilities)."""

from _wire import Wire, main, req


def run(w: Wire) -> None:
    w.call(req(1, "tools/list", meta=False))


main(run)
