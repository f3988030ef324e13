"""What one authorization exchange tells about the client, for the journal's ``auth`` event and the
verifier's authorization checks: no secret, ever.

The HTTP shell asks for these facts only when someone listens (a journal, a report): they are
read again from the request and the answer the core gave, so the core's own paths stay as they
are and a plain run pays nothing. A code, a token or a client id appears only as a
``fingerprint`` (``wire/redaction``: enough to tell whether the code a token request redeems is
the one an authorization response carried, useless to anyone who reads the journal; no fact is
named after a secret, so the journal's redaction leaves them be); ``state`` and the PKCE values only as present or absent. What a fact is named:

- every exchange: ``exchange`` (``mcp`` for the MCP endpoint's gate, ``resourceMetadata``,
  ``oauth``/``openid``/``openidAppended`` for discovery, ``authorize``, ``token``, ``register``,
  ``jwks``) and, at the authorization server, ``issuer`` (the real one of this server);
- ``mcp``: ``bearer`` (``none``, ``other`` scheme, ``query``, ``malformed``, ``unknown`` to this
  server, ``invalid``: expired, revoked or another resource's, ``ok``: a ``403``), ``presented``,
  ``challenge`` (the scopes the ``WWW-Authenticate`` named), ``held`` and ``operation`` on a ``403``;
- metadata: ``resource``/``resourceOk``, ``issuerOk``, ``scopesSupported``, ``issAdvertised``, ``cimd``;
- ``authorize``: ``client``/``clientKind``, ``pkce`` (the method, ``plain`` when a challenge came
  without one, null without a challenge), ``state``, ``resource``/``resourceOk``, ``scope`` (null:
  no scope parameter), ``offlineListed``, and from the answer ``code``, ``iss`` (``correct``,
  ``missing``, ``wrong``: compared as a string with the metadata's ``issuer``), ``issAdvertised``;
- ``token``: ``grant``, ``client``/``clientKind``, ``authMethod`` (how the client authenticated:
  ``client_secret_basic``, ``client_secret_post`` or ``none``), ``resource``/``resourceOk``, ``code``,
  ``scope``, and on success ``issued`` (the access token) and ``granted``;
- ``register``: ``applicationType``, ``askedMethod`` (the token endpoint auth method asked),
  ``cimd`` (the server offers metadata documents) and, on success, ``client`` and ``registeredMethod`` (the
  method registered, which the server may have replaced).
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from mockmcp.core.auth.answers import AuthMistake, HttpAnswer
from mockmcp.core.auth.clients import Clients
from mockmcp.core.auth.forms import (basic_credentials, gap_problem, parse_form, parse_json_object, parse_pairs, query_of,
                                     split_authorization)
from mockmcp.core.auth.resource import MCP_PATH, has_access_token
from mockmcp.core.auth.site import AuthSite, Listener
from mockmcp.wire.jsonrpc import JsonRefused, strict_loads
from mockmcp.wire.redaction import fingerprint

MAX_TEXT = 200  # a value the client chose (a resource, a scope) is cut to this many characters
MAX_SCOPES = 32
_SCOPE_PARAM = re.compile(r'(?:^|[\s,])scope="((?:[^"\\]|\\.)*)"')
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _cut(value: str | None) -> str | None:
    return None if value is None else value[:MAX_TEXT]


def _scopes(value: str | None) -> list[str] | None:
    return None if value is None else [s[:MAX_TEXT] for s in value.split()[:MAX_SCOPES]]


def _text(headers: Mapping[bytes, bytes], name: bytes) -> str | None:
    value = headers.get(name)
    return None if value is None else value.decode("latin-1")


def _json(body: bytes) -> Any:
    """One of this server's own answers (JSON it encoded), read back."""
    try:
        return json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None


def _header(answer: HttpAnswer, name: bytes) -> str | None:
    for k, v in answer.headers:
        if k == name:
            return v.decode("latin-1")
    return None


def facts_of(site: AuthSite, method: bytes, target: bytes, headers: Mapping[bytes, bytes], body: bytes, origin: str,
             answer: HttpAnswer, listener: Listener = "mcp") -> dict[str, Any]:
    """The facts of one exchange: a request the site answered (one of its paths, on either
    listener) or refused at the MCP endpoint's gate, and that answer."""
    text = target.decode("latin-1")
    route = site.route(text.split("?", 1)[0], listener)
    if route is None:
        return gate_facts(site, text, headers, body, answer)
    kind, _, server = route
    canonical = server.mcp_origin(origin) + MCP_PATH if listener == "second" else origin + MCP_PATH
    out: dict[str, Any] = {"exchange": kind}
    if kind == "resourceMetadata":
        doc = _json(answer.body) if answer.status == 200 else None
        if isinstance(doc, dict):
            resource = doc.get("resource")
            out.update(_resource(resource if isinstance(resource, str) else None, canonical),
                       scopesSupported=doc.get("scopes_supported"))
        return out
    out["issuer"] = server.issuer(origin)
    if kind == "jwks":
        return out
    meta = site.overrides.apply(server.metadata("oauth", origin), site.overrides.server)
    if kind in ("oauth", "openid", "openidAppended"):
        doc = _json(answer.body) if answer.status == 200 else None
        if isinstance(doc, dict):
            out.update(issuerOk=doc.get("issuer") == out["issuer"], scopesSupported=doc.get("scopes_supported"),
                       issAdvertised=doc.get("authorization_response_iss_parameter_supported"),
                       cimd=doc.get("client_id_metadata_document_supported") is True)
        return out
    ctype = _text(headers, b"content-type")
    try:
        if kind == "authorize":
            params = parse_form(body, ctype) if method == b"POST" else parse_pairs(query_of(text), "query")
            out.update(_authorize(server.clients, params, canonical, meta, answer))
        elif kind == "token":
            out.update(_token(server.clients, parse_form(body, ctype), _text(headers, b"authorization"), canonical, answer))
        elif kind == "register":
            out.update(_register(parse_json_object(body, ctype, "invalid_client_metadata"), answer),
                       cimd=meta.get("client_id_metadata_document_supported") is True)
    except AuthMistake:
        out["malformed"] = True  # the core refused the request as unreadable; nothing more to tell
    return out


def _client(clients: Clients, client_id: str | None) -> dict[str, Any]:
    if client_id is None:
        return {"client": None, "clientKind": None}
    found = clients.find(client_id)
    return {"client": fingerprint(client_id), "clientKind": found.kind if found is not None else "unknown"}


def _resource(given: str | None, canonical: str) -> dict[str, Any]:
    out: dict[str, Any] = {"resource": _cut(given), "resourceOk": given == canonical}
    if given != canonical:
        out["canonical"] = canonical
    return out


def _authorize(clients: Clients, params: Mapping[str, str], canonical: str, meta: Mapping[str, Any],
               answer: HttpAnswer) -> dict[str, Any]:
    challenge = params.get("code_challenge")
    listed = meta.get("scopes_supported")
    out: dict[str, Any] = {
        **_client(clients, params.get("client_id")),
        "pkce": None if challenge is None else params.get("code_challenge_method") or "plain",
        "state": params.get("state") is not None,
        **_resource(params.get("resource"), canonical),
        "scope": _scopes(params.get("scope")),
        "offlineListed": isinstance(listed, list) and "offline_access" in listed,
        "issAdvertised": meta.get("authorization_response_iss_parameter_supported") is True,
    }
    location = _header(answer, b"location") if answer.status in (302, 303) else None
    if location is not None:
        try:
            got = parse_pairs(query_of(location.split("#", 1)[0]), "redirect")
        except AuthMistake:
            got = {}
        if "code" in got:
            out["code"] = fingerprint(got["code"])
        iss = got.get("iss")
        out["iss"] = "missing" if iss is None else "correct" if iss == meta.get("issuer") else "wrong"
        if "error" in got:
            out["error"] = _cut(got["error"])
    return out


def _token(clients: Clients, form: Mapping[str, str], authorization: str | None, canonical: str,
           answer: HttpAnswer) -> dict[str, Any]:
    client_id = form.get("client_id")
    used = "client_secret_post" if "client_secret" in form else "none"
    if authorization is not None and split_authorization(authorization)[0].lower() == "basic":
        used = "client_secret_basic"
        try:
            client_id = basic_credentials(authorization)[0]
        except AuthMistake:
            client_id = None
    out: dict[str, Any] = {"grant": _cut(form.get("grant_type")), **_client(clients, client_id), "authMethod": used,
                           **_resource(form.get("resource"), canonical), "scope": _scopes(form.get("scope"))}
    if "code" in form:
        out["code"] = fingerprint(form["code"])
    doc = _json(answer.body) if answer.status == 200 else None
    if isinstance(doc, dict) and isinstance(doc.get("access_token"), str):
        out["issued"] = fingerprint(doc["access_token"])
        out["granted"] = _scopes(doc.get("scope")) if isinstance(doc.get("scope"), str) else []
    return out


def _register(body: Mapping[str, Any], answer: HttpAnswer) -> dict[str, Any]:
    kind = body.get("application_type")
    out: dict[str, Any] = {"applicationType": _cut(kind) if isinstance(kind, str) else None if kind is None else "?"}
    asked = body.get("token_endpoint_auth_method", "client_secret_basic")
    out["askedMethod"] = _cut(asked) if isinstance(asked, str) else "?"
    doc = _json(answer.body) if answer.status == 201 else None
    if isinstance(doc, dict) and isinstance(doc.get("client_id"), str):
        method = doc.get("token_endpoint_auth_method")
        out.update(client=fingerprint(doc["client_id"]), clientKind="dynamic",
                   registeredMethod=_cut(method) if isinstance(method, str) else None)
    return out


def gate_facts(site: AuthSite, target: str, headers: Mapping[bytes, bytes], body: bytes,
               answer: HttpAnswer) -> dict[str, Any]:
    """A request the MCP endpoint's gate refused: how it carried its token, and what it was told."""
    out: dict[str, Any] = {"exchange": "mcp"}
    authorization = _text(headers, b"authorization")
    if "?" in target and has_access_token(target.split("?", 1)[1]):
        out["bearer"] = "query"
    elif authorization is None:
        out["bearer"] = "none"
    else:
        scheme, gap, token = split_authorization(authorization)
        if scheme.lower() != "bearer":
            out["bearer"] = "other"
        elif not token or " " in token or gap_problem(scheme, gap) is not None:
            out["bearer"] = "malformed"
        else:
            out["presented"] = fingerprint(token)
            grant = site.tokens.access.get(token)
            if grant is None:
                out["bearer"] = "unknown"
            elif answer.status == 403:
                out.update(bearer="ok", held=list(grant.scopes))
            else:
                out["bearer"] = "invalid"
    found = _SCOPE_PARAM.search(_header(answer, b"www-authenticate") or "")
    out["challenge"] = found.group(1).replace('\\"', '"').replace("\\\\", "\\").split() if found else None
    if answer.status == 403:
        out["operation"] = operation(body)
    return out


def operation(body: bytes) -> str | None:
    """``tools/call echo``: the method of a POST body's message and the name it acts on (the key
    by which a client's retries after ``403`` are counted)."""
    try:  # the client's body: read as strictly as the engine reads it
        message = strict_loads(body.decode("utf-8"))
    except (UnicodeDecodeError, JsonRefused):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None
    method: str = message["method"]
    params = message.get("params")
    key = _NAMED.get(method)
    name = params.get(key) if key is not None and isinstance(params, dict) else None
    return _cut(f"{method} {name}" if isinstance(name, str) else method)
