"""The clients the built-in authorization server knows, and how a client proves who it is.

Three ways in (MCP authorization, client registration): pre-registered credentials from the
scenario, Client ID Metadata Documents (the document is the scenario's: the mock never fetches
a URL), and dynamic registration (RFC 7591, with OIDC's ``application_type`` checked against the
redirect URIs). At the token endpoint a client authenticates the way it registered:
``client_secret_basic``, ``client_secret_post`` or ``none`` (RFC 6749 2.3, OAuth 2.1 2.4); a
registration asking a method the server does not list gets one it does, named in the response
(RFC 7591 3.2.1), unless the scenario says ``unsupportedAuthMethod: reject``.
Registered clients are bounded (``MAX_CLIENTS``, and ``MAX_KEPT_URI_CHARS`` of redirect URIs in
all: the oldest forgotten), each registration too (``MAX_REDIRECT_URIS`` of at most
``MAX_REDIRECT_URI_CHARS``).
"""

from __future__ import annotations

import hmac
import re
from typing import Any, Mapping
from urllib.parse import urlsplit

from mockmcp.core.auth.answers import OAuthError
from mockmcp.core.auth.forms import basic_credentials, scheme_shown, split_authorization
from mockmcp.core.auth.tokens import Mint
from mockmcp.scenario.model.auth import AuthorizationServer

MAX_CLIENTS = 10_000
# What one registration may ask to be kept, and what all of them may keep together: the
# registered clients' memory is bounded by bytes as well as by count (the oldest forgotten).
MAX_REDIRECT_URIS = 16
MAX_REDIRECT_URI_CHARS = 2048
MAX_KEPT_URI_CHARS = 4 * 1024 * 1024
GRANT_TYPES = frozenset({"authorization_code", "refresh_token"})
# What a URI may hold as sent (RFC 3986: everything else percent-encoded). Checked before any
# parse: urlsplit silently drops CR, LF and TAB, so a URI carrying them would pass the checks
# and then go into a Location header raw.
_URI_TEXT = re.compile(r"[\x21-\x7e]+")


def uri_text_problem(uri: str) -> str | None:
    """Why ``uri`` cannot be a redirect URI as written (None: only printable ASCII, no space)."""
    if _URI_TEXT.fullmatch(uri):
        return None
    return (f"{uri[:200]!r} has a character outside printable ASCII (a control character, a space or raw"
            " non-ASCII): percent-encode it (RFC 3986)")


class Client:
    __slots__ = ("client_id", "secret", "method", "redirect_uris", "kind", "grant_types")

    def __init__(self, client_id: str, secret: str | None, method: str, redirect_uris: tuple[str, ...] | None, kind: str,
                 grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")) -> None:
        self.client_id = client_id
        self.secret = secret
        self.method = method  # the token endpoint auth method it registered
        self.redirect_uris = redirect_uris  # None: any loopback redirect
        self.kind = kind  # "preRegistered", "document" or "dynamic"
        self.grant_types = grant_types


# A loopback redirect as written: lower-case http, one of the loopback hosts, an optional port
# (the part that may differ, RFC 8252 7.3), no userinfo, no fragment. A regex, not urlsplit:
# urlsplit lower-cases the scheme, drops CR/LF/TAB, and leaves a bad port for later.
_LOOPBACK_URI = re.compile(r"http://(127\.0\.0\.1|\[::1\]|localhost)(?::([0-9]{1,5}))?((?:[/?][^#]*)?)")
# Schemes a browser runs or reads itself rather than hand to an app: never a redirect target.
_NOT_REDIRECTS = frozenset({"javascript", "vbscript", "data", "file", "about", "blob", "filesystem"})


def _loopback_key(uri: str) -> str | None:
    """A loopback redirect URI without its port (None: not a loopback redirect, or a bad port)."""
    m = _LOOPBACK_URI.fullmatch(uri)
    if m is None or (m.group(2) is not None and not 0 < int(m.group(2)) <= 65535):
        return None
    return f"http://{m.group(1)}{m.group(3)}"


def is_loopback(uri: str) -> bool:
    """An ``http`` redirect to this machine (RFC 8252 7.3), whose port the client picks at run time."""
    return _loopback_key(uri) is not None


def redirect_matches(registered: str, given: str) -> bool:
    """Exact string equality, except that a loopback redirect's port may differ (OAuth 2.1 4.1.1,
    RFC 8252 7.3): no case folding, no normalization, nothing else may differ."""
    if registered == given:
        return True
    key = _loopback_key(given)
    return key is not None and key == _loopback_key(registered)


def redirect_problem(uri: str) -> str | None:
    """Why ``uri`` can never be a redirect URI, at registration or in an authorization request
    (None: it may be one): a character outside printable ASCII, a fragment (RFC 6749 3.1.2),
    userinfo, an invalid port."""
    problem = uri_text_problem(uri)
    if problem is not None:
        return problem
    if "#" in uri:
        return f"{uri[:200]!r} has a fragment (a redirect URI has none: RFC 6749 3.1.2)"
    try:
        parts = urlsplit(uri)
        port = parts.port  # (raises for a port that is not a number, or past 65535)
    except ValueError:
        return f"{uri[:200]!r} is not a URI with a valid host and port (1-65535)"
    if "@" in parts.netloc:
        return f"{uri[:200]!r} has userinfo (user@host): a redirect URI names its host alone"
    if port == 0 or (port is None and ":" in parts.netloc.rsplit("]", 1)[-1]):
        return f"{uri[:200]!r} has an invalid port (1-65535)"
    return None


def registration_problem(uri: Any) -> str | None:
    """Why a client may not register ``uri`` (None: it may): ``redirect_problem``, then an
    absolute URI whose scheme is lower-case ``http`` to loopback (any other host uses ``https``,
    OAuth 2.1) or ``https`` with a host, or an app's own scheme (RFC 8252 7.1), never one a
    browser runs itself (``javascript:``, ``data:``, ...)."""
    if not isinstance(uri, str):
        return f"a redirect URI is a string, not {type(uri).__name__}"
    if len(uri) > MAX_REDIRECT_URI_CHARS:
        return f"a redirect URI of {len(uri)} characters is longer than this server keeps ({MAX_REDIRECT_URI_CHARS})"
    problem = redirect_problem(uri)
    if problem is not None:
        return problem
    scheme = uri.split(":", 1)[0] if ":" in uri else ""
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.\-]*", scheme):
        return f"{uri[:200]!r} is not an absolute URI (it needs a scheme)"
    if scheme.lower() in ("http", "https") and scheme != scheme.lower():
        return f"{uri[:200]!r}: write the scheme in lower case (redirect URIs are compared as strings)"
    if scheme == "http" and not is_loopback(uri):
        return (f"{uri[:200]!r}: http is only for a loopback redirect (http://127.0.0.1, http://[::1] or"
                " http://localhost, RFC 8252 7.3); any other host uses https")
    if scheme == "https" and not urlsplit(uri).hostname:
        return f"{uri[:200]!r} has no host"
    if scheme.lower() in _NOT_REDIRECTS:
        return f"{uri[:200]!r}: a {scheme}: URI is never a redirect target"
    return None


def _kept(client: Client) -> int:
    return sum(map(len, client.redirect_uris or ()))


class Clients:
    def __init__(self, config: AuthorizationServer, mint: Mint) -> None:
        self.config = config
        self.mint = mint
        reg = config.registration
        self.known: dict[str, Client] = {
            c.clientId: Client(c.clientId, c.clientSecret, c.tokenEndpointAuthMethod,
                               None if c.redirectUris is None else tuple(c.redirectUris), "preRegistered")
            for c in reg.preRegistered
        }
        self.documents: dict[str, Mapping[str, Any]] = {d.url: d.document for d in reg.documents} \
            if reg.clientIdMetadataDocuments else {}
        self.dynamic: dict[str, Client] = {}
        self.kept_chars = 0  # the dynamic clients' redirect URIs, in characters

    def find(self, client_id: str) -> Client | None:
        found = self.known.get(client_id) or self.dynamic.get(client_id)
        if found is not None:
            return found
        reg = self.config.registration
        if not reg.clientIdMetadataDocuments or not client_id.startswith("https://"):
            return None
        doc = self.documents.get(client_id)
        if doc is not None:
            uris = doc.get("redirect_uris")
            return Client(client_id, None, "none", tuple(u for u in uris if isinstance(u, str)) if isinstance(uris, list) else (),
                          "document")
        if reg.acceptAnyDocument:
            return Client(client_id, None, "none", None, "document")
        return None

    def redirect_for(self, client: Client, given: str | None) -> str:
        """The redirect URI an authorization request may use (``OAuthError`` if none: never redirected)."""
        if given is None:
            if client.redirect_uris is not None and len(client.redirect_uris) == 1:
                return client.redirect_uris[0]
            raise OAuthError("invalid_request", "redirect_uri is required (the client has no single registered one)")
        problem = redirect_problem(given)
        if problem is not None:  # never redirected to (with control characters it could not even be written)
            raise OAuthError("invalid_request", f"redirect_uri {problem}")
        if client.redirect_uris is None:
            if is_loopback(given):
                return given
            raise OAuthError("invalid_request", f"redirect_uri {given[:200]!r} is not a loopback redirect this client"
                             " may use (http://127.0.0.1, http://[::1] or http://localhost, any port)")
        if any(redirect_matches(r, given) for r in client.redirect_uris):
            return given
        raise OAuthError("invalid_request", f"redirect_uri {given[:200]!r} is not registered for this client (compared"
                         " as a string: only a loopback redirect's port may differ)")

    # ------------------------------------------------------------ dynamic registration

    def register(self, body: Mapping[str, Any]) -> tuple[Client, dict[str, Any]]:
        """RFC 7591: the new client and the registration response's body."""
        methods = self.config.tokenEndpointAuthMethods
        uris = body.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            raise OAuthError("invalid_redirect_uri", "redirect_uris is required: a non-empty list of redirect URIs")
        if len(uris) > MAX_REDIRECT_URIS:
            raise OAuthError("invalid_redirect_uri", f"{len(uris)} redirect URIs: this server keeps at most"
                             f" {MAX_REDIRECT_URIS} per client")
        for uri in uris:
            problem = registration_problem(uri)
            if problem is not None:
                raise OAuthError("invalid_redirect_uri", problem)
        method = self._auth_method(body.get("token_endpoint_auth_method", "client_secret_basic"))
        grants = body.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or not all(isinstance(g, str) for g in grants):
            raise OAuthError("invalid_client_metadata", "grant_types must be a list of strings")
        unknown = [g for g in grants if g not in GRANT_TYPES]
        if unknown:
            raise OAuthError("invalid_client_metadata", f"grant type {unknown[0]!r} is not supported")
        responses = body.get("response_types", ["code"])
        if not isinstance(responses, list) or any(r != "code" for r in responses):
            raise OAuthError("invalid_client_metadata", "response_types may only list 'code'")
        self._application_type(body.get("application_type"), uris)
        for key in ("client_name", "scope", "client_uri", "logo_uri"):
            if key in body and not isinstance(body[key], str):
                raise OAuthError("invalid_client_metadata", f"{key} must be a string")
        client_id = "dyn-" + self.mint()
        secret = None if method == "none" else self.mint()
        client = Client(client_id, secret, method, tuple(uris), "dynamic", tuple(grants))
        self.dynamic[client_id] = client
        self.kept_chars += _kept(client)
        while len(self.dynamic) > MAX_CLIENTS or self.kept_chars > MAX_KEPT_URI_CHARS:
            self.kept_chars -= _kept(self.dynamic.pop(next(iter(self.dynamic))))
        answer = {k: v for k, v in body.items() if k not in ("client_id", "client_secret")}
        answer.update(client_id=client_id, token_endpoint_auth_method=method, grant_types=grants, response_types=responses)
        if secret is not None:
            answer.update(client_secret=secret, client_secret_expires_at=0)
        return client, answer

    def _auth_method(self, asked: Any) -> str:
        """The token endpoint auth method a registration gets: the one asked when the server supports
        it; else, with ``unsupportedAuthMethod: replace``, the first the server lists (RFC 7591 3.2.1:
        the server may replace a requested value, and the response says what was registered; a public
        client asking ``none`` where only secrets are accepted gets a secret), or ``invalid_client_metadata``."""
        methods = self.config.tokenEndpointAuthMethods
        if not isinstance(asked, str):
            raise OAuthError("invalid_client_metadata", "token_endpoint_auth_method must be a string")
        if asked in methods:
            return asked
        if self.config.registration.unsupportedAuthMethod == "replace" and methods:
            return methods[0]
        raise OAuthError("invalid_client_metadata", f"token_endpoint_auth_method {asked[:100]!r} is not supported"
                         f" (token_endpoint_auth_methods_supported: {', '.join(methods)})")

    def _application_type(self, kind: Any, uris: list[str]) -> None:
        """OIDC Registration 2: a ``web`` client redirects over https and not to loopback; a ``native``
        one to loopback or a scheme of its own (the MCP spec: clients MUST send it)."""
        policy = self.config.registration.applicationType
        if policy == "ignore":
            return
        if kind is None:
            if policy == "require":
                raise OAuthError("invalid_client_metadata", "application_type is required (native or web)")
            return
        if kind not in ("native", "web"):
            raise OAuthError("invalid_client_metadata", f"application_type must be native or web, got {kind!r}")
        for uri in uris:
            scheme = uri.split(":", 1)[0].lower()
            if kind == "web" and (scheme != "https" or is_loopback(uri)):
                raise OAuthError("invalid_redirect_uri", f"a web client's redirect URIs use https on a public host,"
                                 f" not {uri!r} (register it with application_type: native)")
            if kind == "native" and scheme == "http" and not is_loopback(uri):
                raise OAuthError("invalid_redirect_uri", f"a native client redirects to loopback or a scheme of its own,"
                                 f" not {uri!r}")

    # ------------------------------------------------------------ the token endpoint

    def authenticate(self, form: Mapping[str, str], authorization: str | None) -> Client:
        """The client a token request comes from, authenticated as it registered."""
        basic = False
        if authorization is not None:
            scheme, _, credentials = split_authorization(authorization)
            if scheme.lower() != "basic":
                raise OAuthError("invalid_client", "the token endpoint takes Basic client credentials (or client_secret"
                                 f" in the body), not {scheme_shown(scheme, credentials)}", status=401)
            basic = True
        if basic and "client_secret" in form:
            raise OAuthError("invalid_request", "the client authenticated twice (Basic and client_secret): use one method")
        if basic:
            assert authorization is not None
            client_id, secret = basic_credentials(authorization)
            if "client_id" in form and form["client_id"] != client_id:
                raise OAuthError("invalid_request", "client_id differs from the Basic credentials' user")
            used = "client_secret_basic"
        else:
            client_id_or_none, secret_or_none = form.get("client_id"), form.get("client_secret")
            if client_id_or_none is None:
                raise OAuthError("invalid_client", "no client_id and no client credentials", status=401)
            client_id, secret = client_id_or_none, secret_or_none or ""
            used = "client_secret_post" if secret_or_none is not None else "none"
        client = self.find(client_id)
        if client is None:
            raise OAuthError("invalid_client", f"unknown client {client_id!r}", status=401)
        if used not in self.config.tokenEndpointAuthMethods:
            raise OAuthError("invalid_client", f"{used} is not a supported token endpoint auth method", status=401)
        if used != client.method:
            raise OAuthError("invalid_client", f"the client registered {client.method} but authenticated with {used}",
                             status=401)
        if client.secret is not None and not hmac.compare_digest(secret.encode(), client.secret.encode()):
            raise OAuthError("invalid_client", "wrong client secret", status=401)
        return client
