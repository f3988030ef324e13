"""Bug (against scenarios/stdio-cancel-on-timeout.yaml): gives up on stuck without telling the server."""

import time

from _wire import Wire, call, main, req


def run(w: Wire) -> None:
    w.call(req(0, "server/discover"))
    w.send(call(1, "stuck"))
    time.sleep(0.3)  # "timed out": no notifications/cancelled
    w.call(call(2, "ping_me"))


main(run)
