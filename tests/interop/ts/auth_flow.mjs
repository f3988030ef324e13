// The official TypeScript client's whole authorization flow against a protected mockmcp
// (`mockmcp run auth --http 0`): usage `node auth_flow.mjs URL`. Connects with the
// BrowserlessProvider (auth_provider.mjs), lists the tools, calls echo, then admin_report
// (a 403 insufficient_scope: the client steps up), and prints one JSON line: what each
// step got, every authorization request and response, and the tokens' scope.
// tests/interop/test_interop_auth.py runs it and judges; this script only reports.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { BrowserlessProvider, authorized } from './auth_provider.mjs';

function errorText(err) {
  return `${err?.constructor?.name ?? typeof err}: ${String(err?.message ?? err).slice(0, 400)}`;
}

async function main() {
  const url = new URL(process.argv[2]);
  const provider = new BrowserlessProvider();
  const out = { steps: {} };
  let transport;
  let client;
  const connect = async () => {
    // a connect refused for authorization leaves the transport started: a new pair each time
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    client = new Client({ name: 'mockmcp-interop-ts-auth', version: '1.0.0' },
      { capabilities: {}, versionNegotiation: { mode: 'auto' } });
    await client.connect(transport);
  };
  try {
    await authorized({ finishAuth: (p) => transport.finishAuth(p) }, provider, connect);
    out.steps.connect = { ok: true, protocolVersion: client.getNegotiatedProtocolVersion() };
    const steps = {
      tools: async () => (await client.listTools()).tools.map((t) => t.name).sort(),
      echo: async () => (await client.callTool({ name: 'echo', arguments: { text: 'hi' } })).content[0].text,
      admin: async () => (await client.callTool({ name: 'admin_report', arguments: {} })).content[0].text,
    };
    for (const [name, step] of Object.entries(steps)) {
      try {
        out.steps[name] = { ok: true, value: await authorized(transport, provider, step) };
      } catch (err) {
        out.steps[name] = { ok: false, error: errorText(err) };
      }
    }
  } catch (err) {
    out.steps.connect = { ok: false, error: errorText(err) };
  }
  out.authorizations = provider.authorizations;
  out.callbacks = provider.callbacks;
  out.scope = provider.tokens()?.scope;
  out.clientId = provider.clientInformation()?.client_id;
  try {
    await client?.close();
  } catch (err) {
    out.close = errorText(err);
  }
  await new Promise((resolve) => process.stdout.write(`${JSON.stringify(out)}\n`, resolve));
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`auth_flow failed: ${err?.stack ?? err}\n`);
    process.exit(2);
  },
);
