"""The bundled ``auth-*`` scenarios (the conformance suite's ``auth/*`` client scenarios) judge a
client as the suite does, through the real ``mockmcp run auth-<name> --http 0`` process.

For each scenario the well-behaved raw client of tests/support/oauthclient.py must pass (no
finding; its call reaches the tool exactly when the scenario lets a careful client through), and
each deliberately wrong client the scenario exists to catch (the same client with one rule
switched: ignores ``iss``, drops scopes on step-up, retries forever, ...) must be caught: the
findings the scenario names for it, or its calls never reach the tool (the ``called``
expectation's failure), or they do where nothing may (``no-list``, ``no-call``).

The checks judge a process's client, so a process serves one client that ever held a token: a
wrong client that never gets one shares the scenario's process and runs first (the journal,
``--journal``, is cut where each client began; nothing it leaves behind can be taken for the
careful client's), one that gets a token has a process of its own and is judged by its report.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from support.httpmock import HttpMock
from support.oauthclient import Behaviour, OAuthClient, PreRegistered, Refused
from support.paths import SCENARIOS

DOCUMENT = "https://conformance-test.local/client-metadata.json"
PRE = PreRegistered("pre-registered-client", "pre-registered-secret", "client_secret_basic")
OTHER = PreRegistered("some-other-client", "its-secret", "client_secret_basic")  # credentials of another server


@attrs.frozen
class Wrong:
    """A deliberately wrong client and what the scenario finds: its findings (exactly these), and
    whether its calls reach the tool (``through``)."""

    behaviour: Behaviour
    findings: frozenset[str] = frozenset()
    through: bool = False
    alone: bool = False  # it gets a token: a process of its own
    client: dict[str, Any] | None = None  # what it is given, when not what the careful client is


@attrs.frozen
class Case:
    passes: bool  # a careful client completes the session (else it refuses, as it must)
    wrongs: tuple[Wrong, ...]
    client: dict[str, Any] = attrs.Factory(dict)  # what the client is given (credentials, its document)


def W(findings: tuple[str, ...] = (), through: bool = False, alone: bool = False, client: dict[str, Any] | None = None,
      **behaviour: Any) -> Wrong:
    return Wrong(Behaviour(**behaviour), frozenset(findings), through, alone or through, client)


CASES: dict[str, Case] = {
    "metadata-default": Case(True, (W(prm="rootOnly"),)),
    "metadata-var1": Case(True, (W(asMetadata="oauthOnly"),)),
    "metadata-var2": Case(True, (W(asMetadata="rootOnly"),)),
    "metadata-var3": Case(True, (W(prm="noChallenge"),)),
    "basic-cimd": Case(True, (W(("auth.registration.cimdUnused",), True, registration="dynamic"),),
                       {"document_url": DOCUMENT}),
    "scope-from-www-authenticate": Case(True, (W(("auth.scope.order",), True, scope="supportedFirst"),)),
    "scope-from-scopes-supported": Case(True, (W(("auth.scope.order",), alone=True, scope="none"),)),
    "scope-omitted-when-undefined": Case(True, (W(("auth.scope.invented",), True, scope="asMetadata"),)),
    "scope-step-up": Case(True, (W(("auth.scope.dropped",), alone=True, stepUp="missing"),)),
    "scope-retry-limit": Case(False, (W(("auth.scope.retryLimit",), alone=True, step_up_limit=6),)),
    # a client asking another method is registered with the supported one (RFC 7591 3.2.1); one that
    # then authenticates as it asked, ignoring the registration response, is refused at /token
    "token-endpoint-auth-basic": Case(True, (W(("auth.registration.ignored",), tokenAuthMethod="client_secret_post"),
                                             W(("auth.resource.missing",), sendResource=False))),
    "token-endpoint-auth-post": Case(True, (W(("auth.registration.ignored",), tokenAuthMethod="client_secret_basic"),)),
    "token-endpoint-auth-none": Case(True, (W(("auth.registration.ignored",), tokenAuthMethod="client_secret_basic"),)),
    "pre-registration": Case(True, (W(tokenAuthMethod="client_secret_post"),
                                    W(("auth.registration.unexpected",), client={"pre_registered": OTHER})),
                             {"pre_registered": PRE}),
    "resource-mismatch": Case(False, (W(("auth.resource.unvalidated",), True, checkResource=False),)),
    # the suite's two checks here are a SHOULD and a MAY: no client that completes fails it, so the
    # only wrong client is one that does not complete (it gives up without offline_access's refresh)
    "offline-access-scope": Case(True, (W(prm="rootOnly"),), {"document_url": DOCUMENT}),
    "offline-access-not-supported": Case(True, (W(("auth.offlineAccess.unsupported",), True, offlineAccess="always"),)),
    "authorization-server-migration": Case(True, (W(("auth.registration.stale",), alone=True,
                                                     reuseRegistration=True),)),
    "iss-supported": Case(True, (W(iss="href"),)),
    "iss-not-advertised": Case(True, (W(iss="require"),)),
    "iss-supported-missing": Case(False, (W(("auth.iss.unchecked",), True, iss="ignore"),)),
    "iss-wrong-issuer": Case(False, (W(("auth.iss.unchecked",), True, iss="ignore"),)),
    "iss-unexpected": Case(False, (W(("auth.iss.unchecked",), True, iss="ignore"),)),
    "iss-normalized": Case(False, (W(("auth.iss.unchecked",), True, iss="normalize"),
                                   W(("auth.iss.unchecked",), True, iss="href"))),
    "metadata-issuer-mismatch": Case(False, (W(("auth.issuer.mismatch",), True, checkIssuer=False),)),
}


def test_every_bundled_auth_scenario_has_a_case() -> None:
    bundled = sorted(p.stem.removeprefix("auth-") for p in SCENARIOS.glob("auth-*.yaml"))
    assert bundled == sorted(CASES)
    assert len(bundled) == 25


def _records(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines() if line.strip()]


def _found(records: list[dict[str, Any]]) -> set[str]:
    return {r["finding"]["check"] for r in records if r.get("dir") == "finding"}


def _calls(records: list[dict[str, Any]]) -> int:
    """tools/call requests of test-tool that got past the gate (the engine saw them)."""
    return sum(1 for r in records if r.get("dir") == "in" and isinstance(r.get("message"), dict)
               and r["message"].get("method") == "tools/call"
               and r["message"].get("params", {}).get("name") == "test-tool")


def _run(client: OAuthClient) -> bool:
    """The session every conformance auth scenario's client runs; False when the client refused."""
    try:
        result = client.session()
    except Refused:
        return False
    assert result["content"] == [{"type": "text", "text": "test"}], result
    return True


class Served:
    """One ``mockmcp run auth-<name> --http 0`` with a journal and a report."""

    def __init__(self, name: str, tmp: Path, tag: str) -> None:
        self.journal, self.report_path = tmp / f"{tag}.jsonl", tmp / f"{tag}.json"
        self.mock = HttpMock(f"auth-{name}", "--journal", str(self.journal), "--report", str(self.report_path))

    def mark(self) -> int:
        return len(_records(self.journal)) if self.journal.exists() else 0

    def stop(self) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        with self.mock:
            assert self.mock.stop() == 0
            assert "Traceback" not in self.mock.stderr()
        return _records(self.journal), dict(json.loads(self.report_path.read_text()))

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.mock.__exit__(*exc)  # killed if a failed assert left it running


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_careful_client_passes_and_each_wrong_one_is_caught(name: str, tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        _scenario(name, tmp_path, stack)


def _scenario(name: str, tmp_path: Path, stack: contextlib.ExitStack) -> None:
    case = CASES[name]
    served = stack.enter_context(Served(name, tmp_path, "main"))
    begun: list[tuple[Wrong, int]] = []  # the wrong clients that share the process, where each began
    for wrong in (w for w in case.wrongs if not w.alone):
        begun.append((wrong, served.mark()))
        client = OAuthClient(served.mock.url, behaviour=wrong.behaviour, **(wrong.client or case.client))
        assert _run(client) is wrong.through, (wrong, client.exchanges)
        assert client.token is None, "a wrong client that gets a token needs a process of its own (alone)"
    cut = served.mark()
    good = OAuthClient(served.mock.url, **case.client)
    assert _run(good) is case.passes, good.exchanges
    records, report = served.stop()
    ends = [b for _, b in begun[1:]] + [cut]
    for (wrong, begin), end in zip(begun, ends):
        part = records[begin:end]
        assert _found(part) == set(wrong.findings), (wrong, [r["finding"] for r in part if r.get("dir") == "finding"])
        assert _calls(part) == 0, wrong
    mine = records[cut:]
    assert _found(mine) == set(), [r["finding"] for r in mine if r.get("dir") == "finding"]
    assert (_calls(mine) >= 1) is case.passes
    # the report holds both: exactly the wrong clients' findings, the expectations as the calls say
    _judged(name, records, report, set().union(*(w.findings for w, _ in begun)), let_through=case.passes)
    for i, wrong in enumerate(w for w in case.wrongs if w.alone):
        own = stack.enter_context(Served(name, tmp_path, f"wrong{i}"))
        client = OAuthClient(own.mock.url, behaviour=wrong.behaviour, **(wrong.client or case.client))
        assert _run(client) is wrong.through, (wrong, client.exchanges)
        records, report = own.stop()
        _judged(name, records, report, wrong.findings, let_through=wrong.through)


def test_a_registration_asking_an_unsupported_method_is_given_one_or_refused(tmp_path: Path) -> None:
    """``registration.unsupportedAuthMethod``: ``replace`` (the default) registers a public client
    that asks ``none`` of a server taking only ``client_secret_post`` with a secret and that method,
    which the client uses as the response says; ``reject`` refuses it (``invalid_client_metadata``)
    and still registers a client that asks a listed method."""
    with Served("token-endpoint-auth-post", tmp_path, "replace") as served:
        public = OAuthClient(served.mock.url, behaviour=Behaviour(registerMethod="none"))
        assert _run(public), public.exchanges
        assert public.client is not None and public.client.method == "client_secret_post" and public.client.secret
        records, report = served.stop()
        assert _found(records) == set() and report["counts"]["byCheck"] == {}
        assert {v["expectation"]: v["verdict"] for v in report["expectations"]} == {"called": "passed"}
    data = yaml.safe_load((SCENARIOS / "auth-token-endpoint-auth-post.yaml").read_text(encoding="utf-8"))
    data["auth"]["server"]["registration"]["unsupportedAuthMethod"] = "reject"
    strict = tmp_path / "strict.yaml"
    strict.write_text(yaml.safe_dump(data), encoding="utf-8")
    journal, report_path = tmp_path / "reject.jsonl", tmp_path / "reject.json"
    with HttpMock(strict, "--journal", str(journal), "--report", str(report_path)) as mock:
        public = OAuthClient(mock.url, behaviour=Behaviour(registerMethod="none"))
        with pytest.raises(Refused, match=r"registration refused: 400 .*invalid_client_metadata.*client_secret_post"):
            public.session()
        careful = OAuthClient(mock.url)
        assert _run(careful), careful.exchanges
        assert mock.stop() == 0
    assert json.loads(report_path.read_text())["counts"]["byCheck"] == {}


def _judged(name: str, records: list[dict[str, Any]], report: dict[str, Any], findings: frozenset[str] | set[str], *,
            let_through: bool) -> None:
    assert set(report["counts"]["byCheck"]) == set(findings) == _found(records), report["counts"]
    verdicts = {v["expectation"]: v["verdict"] for v in report["expectations"]}
    data = yaml.safe_load((SCENARIOS / f"auth-{name}.yaml").read_text(encoding="utf-8"))
    ids = [e["id"] for e in data["expectations"]]
    if ids == ["called"]:  # a careful client gets through: the call must be seen
        assert verdicts == {"called": "passed" if let_through else "failed"}, report["expectations"]
    else:  # a careful client is never let through: nothing may be
        assert ids == ["no-list", "no-call"], ids
        assert verdicts == dict.fromkeys(ids, "failed" if let_through else "passed"), report["expectations"]


# ------------------------------------------------------------------ docs/interop.md's table

ROOT = SCENARIOS.parent
TABLE = "### The conformance suite's auth scenarios"
_CODE = re.compile(r"`(auth\.[A-Za-z.]+)`")


def _suite_auth() -> dict[str, str]:
    """The pinned suite's 2026-07-28 ``auth/*`` client scenarios (``list --client``), name -> revisions."""
    out = {}
    for line in (ROOT / "tests" / "interop" / "conformance" / "client-scenarios.txt").read_text().splitlines():
        name, _, revisions = line.strip().partition(" ")
        if name.startswith("auth/") and "2026-07-28" in revisions:
            out[name] = ", ".join(revisions.strip("[]").split(","))
    return out


def _table() -> list[list[str]]:
    text = (ROOT / "docs" / "interop.md").read_text(encoding="utf-8")
    assert TABLE in text, f"docs/interop.md has no {TABLE!r}"
    section = text.split(TABLE, 1)[1].split("\n#", 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()
            if line.startswith("| `auth/")]


def test_the_interop_table_has_a_row_per_suite_scenario_and_bundled_file() -> None:
    suite = _suite_auth()
    rows = _table()
    assert [r[0].strip("`") for r in rows] == list(suite), "one row per 2026-07-28 auth scenario, in the suite's order"
    verification = (ROOT / "docs" / "verification.md").read_text(encoding="utf-8")
    known = set(re.findall(r"^\| `(auth\.[A-Za-z.]+)` \|", verification, flags=re.M))
    assert len(known) >= 20
    for suite_name, revisions, bundled, what in rows:
        name = suite_name.strip("`").removeprefix("auth/")
        assert revisions == suite[f"auth/{name}"], (name, revisions)
        assert bundled == f"`auth-{name}`" and (SCENARIOS / f"auth-{name}.yaml").is_file(), bundled
        named = set(_CODE.findall(what))
        assert named <= known, f"{name}: {named - known} are not checks docs/verification.md lists"
        caught = set().union(*(w.findings for w in CASES[name].wrongs))
        assert caught <= named, f"{name}: the row does not name {caught - named}, which the test's wrong clients meet"
        text = (SCENARIOS / f"auth-{name}.yaml").read_text(encoding="utf-8")
        header = "".join(line for line in text.splitlines(keepends=True) if line.startswith("#"))
        assert set(re.findall(r"\b(auth\.[A-Za-z]+\.[A-Za-z]+)", header)) <= named, f"{name}: the header names more"
        for expectation in yaml.safe_load(text)["expectations"]:
            assert f"`{expectation['id']}`" in what, f"{name}: the row does not name expectation {expectation['id']}"
