// An OAuthClientProvider for the official TypeScript client (@modelcontextprotocol/client)
// that needs no user: it plays the browser itself.
//
// The client calls redirectToAuthorization(url) when it needs a user's approval; this
// provider GETs that URL without following the redirect and keeps the callback's query
// (code, state, iss) from the Location header. The transport then throws
// UnauthorizedError (connect, or a call after a 403 insufficient_scope), as it does for
// any host: the host checks `state` (the SDK does not), hands the callback's parameters
// to transport.finishAuth (which validates `iss` and redeems the code), and retries.
// `authorized` below is that host loop. Everything lives in memory, one provider per
// session. Used by auth_flow.mjs (tests/interop/test_interop_auth.py) and driver.mjs's
// OAuth mode (the interop matrix over the auth-* scenarios).

import { randomBytes } from 'node:crypto';
import { SdkError, SdkErrorCode, UnauthorizedError } from '@modelcontextprotocol/client';

export const REDIRECT = 'http://127.0.0.1:47003/callback';

export class BrowserlessProvider {
  constructor({ clientName = 'mockmcp interop (TypeScript)', redirectUrl = REDIRECT, clientMetadataUrl,
    preRegistered, tokenEndpointAuthMethod, scope } = {}) {
    this._redirectUrl = redirectUrl;
    this._metadata = {
      client_name: clientName,
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      application_type: 'native',
    };
    // left to the SDK unless the application knows it (a pre-registered client's method)
    if (tokenEndpointAuthMethod) this._metadata.token_endpoint_auth_method = tokenEndpointAuthMethod;
    if (scope) this._metadata.scope = scope;
    if (clientMetadataUrl) this.clientMetadataUrl = clientMetadataUrl;
    this._client = preRegistered; // {client_id, client_secret?}: known already, no registration
    this._tokens = undefined;
    this._verifier = undefined;
    this._state = undefined;
    this._discovery = undefined;
    this.callbacks = []; // every authorization response (code, state, iss), in order
    this.authorizations = []; // every authorization request's query (what the client asked)
    this.pending = undefined; // the callback not yet handed to finishAuth
  }

  get redirectUrl() { return this._redirectUrl; }
  get clientMetadata() { return this._metadata; }
  state() {
    this._state = randomBytes(16).toString('base64url');
    return this._state;
  }
  clientInformation() { return this._client; }
  saveClientInformation(info) { this._client = info; }
  tokens() { return this._tokens; }
  saveTokens(tokens) { this._tokens = tokens; }
  // kept as the SDK asks (it binds the callback leg to the authorization server it started with)
  discoveryState() { return this._discovery; }
  saveDiscoveryState(state) { this._discovery = state; }
  saveCodeVerifier(verifier) { this._verifier = verifier; }
  codeVerifier() {
    if (!this._verifier) throw new Error('no PKCE code verifier saved');
    return this._verifier;
  }
  invalidateCredentials(scope) {
    if (scope === 'all' || scope === 'tokens') this._tokens = undefined;
    if (scope === 'all' || scope === 'client') this._client = undefined;
    if (scope === 'all' || scope === 'verifier') this._verifier = undefined;
    if (scope === 'all' || scope === 'discovery') this._discovery = undefined;
  }

  // The user's browser: the authorization server answers 302 to our redirect URI at once.
  async redirectToAuthorization(url) {
    this.authorizations.push(Object.fromEntries(url.searchParams));
    const response = await fetch(url, { redirect: 'manual' });
    const location = response.headers.get('location');
    if (!location) {
      throw new Error(`the authorization endpoint answered ${response.status} without a redirect`);
    }
    const callback = new URL(location);
    const params = Object.fromEntries(callback.searchParams);
    this.callbacks.push(params);
    this.pending = callback.searchParams;
  }

  // What a host does with the callback: its own `state` check, then the code to the SDK.
  takeCallback() {
    const params = this.pending;
    this.pending = undefined;
    if (!params) return undefined;
    if (params.get('state') !== this._state) {
      throw new Error(`the authorization response's state ${params.get('state')} is not the one sent`);
    }
    if (params.has('error')) {
      throw new Error(`authorization refused: ${params.get('error')}`);
    }
    return params;
  }
}

// Run `fn`; when the transport stops it for a user's authorization (UnauthorizedError after
// redirectToAuthorization), complete it with finishAuth and run `fn` once more. On a 401 that
// outlives a fresh authorization the SDK leaves it to the host to forget the discovery it
// keeps (so a changed authorization server is found: its docs for discoveryState), and this
// host does, then runs `fn` again. At most `rounds` such rounds per call (a server that keeps
// asking is not looped on forever).
export async function authorized(transport, provider, fn, rounds = 2) {
  for (let i = 0; ; i += 1) {
    try {
      return await fn();
    } catch (err) {
      if (i >= rounds) throw err;
      if (err instanceof SdkError && err.code === SdkErrorCode.ClientHttpAuthentication) {
        await provider.invalidateCredentials('discovery');
        continue;
      }
      if (!(err instanceof UnauthorizedError)) throw err;
      const params = provider.takeCallback();
      if (!params) throw err;
      await transport.finishAuth(params);
    }
  }
}
