"""The rules of one recorded exchange: when it matches, and the steps that answer it.

A rule matches the request's exact arguments (or params, or uri), a redacted
value by its presence; its steps are what the server was seen doing, in order
(progress, log messages, garbage lines, requests to the client, the final
answer), with the pauses between them when timing is kept. With ``as_modern``,
the legacy era's requests to the client become ``input_required`` rounds, one
rule per round.
"""

from __future__ import annotations

from typing import Any, Iterator

from mockmcp.record.cassette.recorder import LOG_LEVELS, Exchange
from mockmcp.record.cassette.shapes import (clean_result, duration, input_request_ok, literal, result_ok, when_value,
                                            without_meta)
from mockmcp.record.redact import Redactor
from mockmcp.wire import protocol as p

_ASKABLE = frozenset({p.SAMPLE, p.ELICIT, p.LIST_ROOTS})  # what a legacy `request` step may send
# A raw answer's id: whatever id the replayed request has (a whole-value template keeps its JSON
# type), not the recorded one, or a second call of the same tool would get the first one's id and
# never its own answer. Written as a marker no recorded value can be (redaction and the literal
# rewrite of "{{" pass it by), then as the template once the steps are done.
_REQUEST_ID = object()
ID_TEMPLATE = "{{ id }}"


class RuleWriter:
    """Writes the rules of exchanges, redacting every value it writes."""

    def __init__(self, redactor: Redactor, *, keep_timing: bool, as_modern: bool) -> None:
        self.red = redactor
        self.keep_timing = keep_timing
        self.as_modern = as_modern

    def rules(self, ex: Exchange, *, braces: bool = False) -> Iterator[dict[str, Any]]:
        """The rules one exchange gives: one, or one per round when legacy requests become MRTR rounds.
        ``braces``: the recording holds a "{{", which steps (they render templates) must write as
        a literal."""
        for rule in self._rules(ex):
            steps = literal(rule["steps"]) if braces else rule["steps"]
            for step in steps:
                raw = step.get("raw")
                if type(raw) is dict and raw.get("id") is _REQUEST_ID:
                    raw["id"] = ID_TEMPLATE
            rule["steps"] = steps
            yield rule

    def _rules(self, ex: Exchange) -> Iterator[dict[str, Any]]:
        when = self._when(ex)
        asked = ex.final is not None and type(ex.final[2]) is dict and ex.final[2].get("resultType") == "input_required"
        if ex.round > 1 or asked:
            when["round"] = ex.round  # a first round that asked must not answer the retries
            responses = ex.params.get("inputResponses")
            if type(responses) is dict:
                red = self.red.value(responses)
                when["inputResponses"] = when_value(responses, red)
        events = ex.events
        asks = [i for i, e in enumerate(events) if e[1] == "request"]
        if self.as_modern and asks and ex.method in p.INPUT_REQUIRED_METHODS:
            # The legacy round trips become input_required rounds: round n asks for the n-th request.
            start = 0
            t_prev = ex.t0
            for n, i in enumerate(asks, start=1):
                steps, t_prev = self._steps(ex, events[start:i], t_prev)
                msg = events[i][2]
                steps.append({"inputRequired": {"inputRequests": {f"input-{n}": self.red.value(
                    {"method": msg["method"], "params": msg.get("params", {})})}}})
                rule_when = dict(when, round=n)
                if n > 1:
                    rule_when["inputResponses"] = self._answer(ex, asks[n - 2], n - 1)
                yield {"when": rule_when, "steps": steps}
                start = i + 1
            steps, _ = self._steps(ex, events[start:], t_prev)
            steps.extend(self._final(ex, t_prev))
            last = dict(when, round=len(asks) + 1, inputResponses=self._answer(ex, asks[-1], len(asks)))
            yield {"when": last, "steps": steps}
            return
        steps, t_prev = self._steps(ex, events, ex.t0)
        steps.extend(self._final(ex, t_prev))
        yield {"when": when, "steps": steps}

    def _answer(self, ex: Exchange, ask: int, n: int) -> dict[str, Any]:
        asked = ex.events[ask][2]
        for _, kind, msg in ex.events[ask:]:
            if kind == "answer" and msg.get("id") == asked.get("id") and type(msg.get("result")) is dict:
                red = self.red.value(msg["result"])
                return {f"input-{n}": when_value(msg["result"], red)}
        return {f"input-{n}": {"$present": True}}

    def _when(self, ex: Exchange) -> dict[str, Any]:
        params = ex.params
        if ex.method in (p.TOOLS_CALL, p.PROMPTS_GET):
            args = params.get("arguments")
            args = args if type(args) is dict else {}
            return {"arguments": when_value(args, self.red.value(args)), "exactArguments": True}
        if ex.method == p.RESOURCES_READ:
            uri = params.get("uri")
            return {"params": {"uri": when_value(uri, self.red.value({"uri": uri})["uri"])}}
        rest = {k: v for k, v in without_meta(params).items() if k != "inputResponses"}
        return {"params": when_value(rest, self.red.value(rest))} if rest else {}

    def _steps(self, ex: Exchange, events: list[tuple[float, str, Any]], t_prev: float) -> tuple[list[dict[str, Any]], float]:
        steps: list[dict[str, Any]] = []
        red = self.red
        for t, kind, value in events:
            step: dict[str, Any] | None = None
            if kind == "progress":
                spec = {k: value[k] for k in ("progress", "total", "message") if value.get(k) is not None}
                if type(spec.get("progress")) in (int, float) and type(spec.get("total", 0)) in (int, float):
                    step = {"progress": red.value(spec)}
            elif kind == "log":
                if value.get("level") in LOG_LEVELS and "data" in value:
                    spec = {"level": value["level"], "data": value["data"]}
                    if type(value.get("logger")) is str:
                        spec["logger"] = value["logger"]
                    step = {"log": red.value(spec)}
            elif kind == "raw":
                step = {"rawBytes": red.raw_text(value) + "\n"}
            elif kind == "request":
                if self.as_modern:
                    continue  # the modern era has no server-to-client requests (only rounds, above)
                step = self._request_step(ex, value)
            if step is None:
                continue
            if self.keep_timing and t - t_prev >= 0.001:
                steps.append({"sleep": duration(t - t_prev)})
            t_prev = max(t_prev, t)
            steps.append(step)
        return steps, t_prev

    def _request_step(self, ex: Exchange, msg: dict[str, Any]) -> dict[str, Any]:
        """A legacy server-to-client request as a ``request`` step: the replay sends it, waits for
        the client's answer before the later steps, and compares it with the recorded answer."""
        method, params = msg.get("method"), msg.get("params", {})
        if method not in _ASKABLE or type(params) is not dict or not input_request_ok(msg):
            return {"raw": self.red.value(msg)}  # nothing the format can ask: sent as it was, not waited for
        spec: dict[str, Any] = {"method": method}
        if params:
            spec["params"] = self.red.value(params)
        for _, kind, answer in ex.events:
            if kind == "answer" and answer.get("id") == msg.get("id"):
                got = {"error": answer["error"]} if "error" in answer else {"result": answer.get("result")}
                spec["expect"] = when_value(got, self.red.value(got))
                break
        return {"request": spec}

    def _final(self, ex: Exchange, t_prev: float) -> list[dict[str, Any]]:
        if ex.final is None:
            return [{"hang": True}]
        t, kind, value = ex.final
        steps: list[dict[str, Any]] = []
        if self.keep_timing and t - t_prev >= 0.001:
            steps.append({"sleep": duration(t - t_prev)})
        if kind == "error":
            if type(value) is not dict or type(value.get("code")) is not int or type(value.get("message")) is not str:
                # (an error step would fill in a missing message: only a raw step sends what came)
                steps += [{"raw": self.red.value({"jsonrpc": "2.0", "id": _REQUEST_ID, "error": value})}, {"hang": True}]
                return steps
            spec: dict[str, Any] = {"code": value["code"], "message": value["message"]}
            if "data" in value:
                spec["data"] = value["data"]
            steps.append({"error": self.red.value(spec)})
            return steps
        if type(value) is not dict:
            steps += [self._raw_result(value), {"hang": True}]
            return steps
        if value.get("resultType") == "input_required":
            requests = value.get("inputRequests")
            if ex.method not in p.INPUT_REQUIRED_METHODS or (type(requests) is dict and not all(
                    type(k) is str and input_request_ok(r) for k, r in requests.items())):
                steps += [self._raw_result(value), {"hang": True}]  # no inputRequired step can say it
                return steps
            spec = {"inputRequests": self.red.value(requests) if type(requests) is dict else {}}
            if not spec["inputRequests"]:
                spec["requestState"] = True
            steps.append({"inputRequired": spec})
            return steps
        cleaned = clean_result(value, drop_cache=True)
        if result_ok(ex.method, cleaned):
            steps.append({"result": self.red.value(cleaned)})
        else:
            steps += [self._raw_result(value), {"hang": True}]
        return steps

    def _raw_result(self, value: Any) -> dict[str, Any]:
        """A result no step of the format takes, as the message the server sent (a ``raw`` step;
        a ``hang`` follows it, since a reply ends with a final step and the answer is out); its id
        is the replayed request's."""
        return {"raw": self.red.value({"jsonrpc": "2.0", "id": _REQUEST_ID, "result": value})}


__all__ = ["RuleWriter"]
