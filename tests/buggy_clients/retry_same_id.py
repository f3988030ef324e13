"""Bug: the retry after input_required reuses the original request's id."""

from _wire import ANSWER, Wire, call, main


def run(w: Wire) -> None:
    state = w.call(call(1, "greet"))["result"]["requestState"]
    w.call(call(1, "greet", inputResponses=ANSWER, requestState=state))


main(run)
