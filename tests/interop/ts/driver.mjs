// Drive the official TypeScript MCP client (@modelcontextprotocol/client) through a plan.
//
// Usage: node driver.mjs PLAN.json   (or the plan on stdin)
// Prints one JSON object on stdout: the connection outcome and, per operation,
// what the client got (ok + trimmed result, error + JSON-RPC code, timeout, or
// client-error). The plan format is shared with ../python_driver.py (see there).
// With --serve it reads batches from stdin, a line each: a batch {"plans": [PLAN, ...], "jobs": N}
// runs every plan in this one process, N sessions at once, and prints {"results": [RESULT, ...]}
// (in the plans' order) as one line; at the end of its input it exits. The interop matrix keeps
// one driver per client for all its rounds (matrix.Driver).
//
// With "transport": "http" the driver spawns plan.command itself (a server that prints
// its Streamable HTTP endpoint URL as its first stdout line, e.g. mockmcp run ... --http 0),
// connects a StreamableHTTPClientTransport to that URL, and ends the server's stdin at the end.
//
// With "auth" (the interop matrix sets it for a scenario with an `auth` section) the HTTP
// transport gets an OAuthClientProvider that plays the user's browser (auth_provider.mjs):
// {"redirectUri", "clientMetadataUrl"?, "clientId"?, "clientSecret"?, "tokenEndpointAuthMethod"?}.
// When the transport stops for an authorization (UnauthorizedError: at connect, or a step-up
// it could not finish alone), the driver does what a host does: finishAuth with the callback,
// then connects again or retries the operation. The result's "auth" lists each authorization
// request's scope and each response's outcome (never a code or a token).
//
// The client connects with versionNegotiation {mode: 'auto'}: on stdio it
// spawns the server twice (a discover probe, then the session). Elicitation,
// sampling and roots handlers are registered (and the capabilities declared)
// so input_required rounds can complete. Every operation's failure is
// recorded, not thrown: the driver reports, the tests and the matrix judge.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Client, ProtocolError, SdkError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BrowserlessProvider, authorized } from './auth_provider.mjs';

const MAX_TEXT = 400;

function trim(value) {
  if (typeof value === 'string') {
    return value.length <= MAX_TEXT ? value : `${value.slice(0, MAX_TEXT)}...(+${value.length - MAX_TEXT})`;
  }
  if (Array.isArray(value)) return value.map(trim);
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, trim(v)]));
  }
  return value;
}

function exampleFromSchema(schema) {
  if (!schema || typeof schema !== 'object') return null;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if ('default' in schema) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  if (Array.isArray(schema.oneOf) && schema.oneOf[0] && 'const' in schema.oneOf[0]) return schema.oneOf[0].const;
  let t = schema.type;
  if (Array.isArray(t)) t = t.find((x) => x !== 'null') ?? 'string';
  if (t === 'object') {
    return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, exampleFromSchema(v)]));
  }
  if (t === 'array') {
    const items = schema.items ?? {};
    if (Array.isArray(items.anyOf) && items.anyOf.length) return [items.anyOf[0].const ?? 'a'];
    if (Array.isArray(items.enum) && items.enum.length) return [items.enum[0]];
    return [];
  }
  if (t === 'integer') return Math.max(1, Math.trunc(schema.minimum ?? 1));
  if (t === 'number') return schema.minimum ?? 1;
  if (t === 'boolean') return true;
  if (schema.format === 'email') return 'ada@example.com';
  return 'example';
}

function describe(err) {
  if (err instanceof SdkError) {
    if (err.code === 'REQUEST_TIMEOUT') return { status: 'timeout', message: String(err.message).slice(0, MAX_TEXT) };
    return { status: 'client-error', type: `SdkError:${err.code}`, message: String(err.message).slice(0, MAX_TEXT) };
  }
  if (err instanceof ProtocolError) {
    const out = { status: 'error', code: err.code, message: err.message };
    if (err.data !== undefined) out.data = trim(err.data);
    return out;
  }
  return { status: 'client-error', type: err?.constructor?.name ?? typeof err, message: String(err?.message ?? err).slice(0, MAX_TEXT) };
}

// A timeout or a lost connection (the matrix then runs the rest in a new session).
function breaksSession(record) {
  if (record.status === 'timeout') return true;
  const text = `${record.type ?? ''} ${record.message ?? ''}`.toLowerCase();
  return record.status === 'client-error' && (text.includes('connection_closed') || text.includes('not connected'));
}

async function one(client, op, timeout, progress, rounds) {
  const opts = { timeout };
  // The client also reports each input_required round through onprogress (its own
  // message, no notification on the wire): counted apart, as rounds.
  const onprogress = (p) => {
    if (String(p.message ?? '').startsWith('Fulfilling input required')) rounds.push(p.progress);
    else progress.push(p.progress);
  };
  const withProgress = { timeout, onprogress };
  switch (op.op) {
    case 'callTool':
      return client.callTool({ name: op.name, arguments: op.arguments ?? {} }, withProgress);
    case 'getPrompt':
      return client.getPrompt({ name: op.name, arguments: op.arguments ?? {} }, opts);
    case 'readResource':
      return client.readResource({ uri: op.uri }, opts);
    case 'complete':
      return client.complete({ ref: op.ref, argument: op.argument }, opts);
    case 'listen': {
      const seen = [];
      const notes = ['notifications/tools/list_changed', 'notifications/prompts/list_changed',
        'notifications/resources/list_changed', 'notifications/resources/updated'];
      for (const method of notes) client.setNotificationHandler(method, async () => { seen.push(method); });
      const sub = await client.listen(op.filter ?? {}, { timeout });
      await new Promise((resolve) => setTimeout(resolve, op.ms ?? 1500));
      await sub.close();
      for (const method of notes) client.removeNotificationHandler(method);
      return { honored: sub.honoredFilter, events: seen.length, kinds: [...new Set(seen)].sort(), closed: await sub.closed };
    }
    case 'listTools': {
      const r = await client.listTools(undefined, { timeout });
      return { tools: r.tools.map((t) => t.name), items: r.tools };
    }
    case 'listPrompts': {
      const r = await client.listPrompts(undefined, { timeout });
      return { prompts: r.prompts.map((p) => p.name), items: r.prompts };
    }
    case 'listResources': {
      const r = await client.listResources(undefined, { timeout });
      return { resources: r.resources.map((x) => x.uri), items: r.resources };
    }
    case 'listResourceTemplates': {
      const r = await client.listResourceTemplates(undefined, { timeout });
      return { resourceTemplates: r.resourceTemplates.map((x) => x.uriTemplate), items: r.resourceTemplates };
    }
    default:
      throw new Error(`unknown op ${op.op}`);
  }
}

function newClient(notes, clientErrors) {
  const client = new Client(
    { name: 'mockmcp-interop-ts', version: '1.0.0' },
    {
      capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} },
      versionNegotiation: { mode: 'auto' },
    },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    const mode = request.params.mode ?? 'form';
    notes.elicitation.push(mode);
    if (mode === 'url') return { action: 'accept' };
    return { action: 'accept', content: exampleFromSchema(request.params.requestedSchema) ?? {} };
  });
  client.setRequestHandler('sampling/createMessage', async (request) => {
    notes.sampling.push(request.params.messages.length);
    return { role: 'assistant', model: 'mock-model', content: { type: 'text', text: 'sampled answer' } };
  });
  client.setRequestHandler('roots/list', async () => {
    notes.roots.push(1);
    return { roots: [{ uri: 'file:///project', name: 'project' }] };
  });
  client.setNotificationHandler('notifications/message', async (n) => {
    notes.log.push(n.params.level);
  });
  // Errors the client reports without failing a request (unknown progress tokens, bad lines...).
  client.onerror = (err) => clientErrors.push(String(err?.message ?? err).slice(0, MAX_TEXT));
  return client;
}

// The OAuth mode's provider, from the plan's "auth" options.
function oauthProvider(options) {
  const preRegistered = options.clientId
    ? { client_id: options.clientId, ...(options.clientSecret ? { client_secret: options.clientSecret } : {}) }
    : undefined;
  return new BrowserlessProvider({
    clientName: 'mockmcp interop matrix (TypeScript)',
    redirectUrl: options.redirectUri,
    clientMetadataUrl: options.clientMetadataUrl,
    preRegistered,
    tokenEndpointAuthMethod: options.tokenEndpointAuthMethod,
  });
}

// What the OAuth mode saw, without a secret: each authorization request's scope and
// each authorization response's outcome (code, error, iss).
function authSummary(provider) {
  return {
    requests: provider.authorizations.map((q) => ({ scope: q.scope ?? null, resource: q.resource ?? null })),
    responses: provider.callbacks.map((c) => ({ code: 'code' in c, error: c.error ?? null, iss: c.iss ?? null })),
  };
}

async function runPlan(plan) {
  const timeout = plan.timeoutMs ?? 5000;
  const notes = { elicitation: [], sampling: [], roots: [], log: [] };
  const out = { client: 'typescript', ops: [] };
  let clientErrors = [];
  let client = newClient(notes, clientErrors);

  const [command, ...args] = plan.command;
  let server = null;
  let transport;
  let provider;
  // the transport's own calls pass through `authorized` in the OAuth mode (a no-op otherwise)
  let withAuth = (fn) => fn();
  const t0 = Date.now();
  try {
    if (plan.transport === 'http') {
      server = await spawnHttpServer(command, args, plan.connectTimeoutMs ?? timeout);
      const url = new URL(server.url);
      if (plan.auth) {
        provider = oauthProvider(plan.auth);
        withAuth = (fn) => authorized(transport, provider, fn);
        // a connect stopped for authorization leaves its transport started: a new pair each round
        let attempts = 0;
        const connect = async () => {
          transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
          // (the errors the refused client reported, its UnauthorizedError, go with it)
          if (attempts++) client = newClient(notes, clientErrors = []);
          await client.connect(transport, { timeout: plan.connectTimeoutMs ?? timeout });
        };
        await authorized({ finishAuth: (p) => transport.finishAuth(p) }, provider, connect);
      } else {
        transport = new StreamableHTTPClientTransport(url);
      }
    } else {
      transport = new StdioClientTransport({ command, args, env: plan.env, stderr: 'inherit' });
    }
    if (!provider) await client.connect(transport, { timeout: plan.connectTimeoutMs ?? timeout });
    out.connect = {
      status: 'ok',
      era: client.getProtocolEra(),
      protocolVersion: client.getNegotiatedProtocolVersion(),
      ms: Date.now() - t0,
    };
  } catch (err) {
    out.connect = describe(err);
  }
  if (out.connect.status === 'ok') {
    for (const op of plan.ops) {
      const record = { op: op.op };
      for (const k of ['name', 'uri']) if (k in op) record[k] = op[k];
      const progress = [];
      const rounds = [];
      try {
        record.result = trim(await withAuth(() => one(client, op, op.timeoutMs ?? timeout, progress, rounds)));
        record.status = 'ok';
      } catch (err) {
        Object.assign(record, describe(err));
      }
      if (progress.length) record.progress = progress.length;
      if (rounds.length) record.inputRounds = rounds.length;
      out.ops.push(record);
      if (plan.stopAfterBreak && breaksSession(record)) break;
    }
  }
  try {
    await client.close();
  } catch (err) {
    out.shutdown = describe(err);
  }
  if (server) await server.stop();
  if (provider) out.auth = authSummary(provider);
  if (clientErrors.length) out.clientErrors = clientErrors;
  out.callbacks = Object.fromEntries(Object.entries(notes).filter(([, v]) => v.length));
  return out;
}

// Spawn a server that prints its URL as the first stdout line; {url, stop()} (stop: end
// its stdin, wait up to 5 s for it to exit, then kill it).
function spawnHttpServer(command, args, timeoutMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    let buffered = '';
    const exited = new Promise((done) => child.once('exit', done));
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error('the server printed no URL in time')); }, timeoutMs);
    child.once('error', (err) => { clearTimeout(timer); reject(err); });
    child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`the server exited (${code}) before printing its URL`)); });
    child.stdout.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      const nl = buffered.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      const stop = async () => {
        child.stdin.end();
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(killer);
      };
      resolve({ url: buffered.slice(0, nl).trim(), stop });
    });
  });
}

// Every plan of a batch, `jobs` sessions at once; results in the plans' order.
async function runBatch(batch) {
  const results = new Array(batch.plans.length);
  let next = 0;
  const worker = async () => {
    while (next < batch.plans.length) {
      const i = next++;
      results[i] = await runPlan(batch.plans[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, batch.jobs ?? 4) }, worker));
  return { results };
}

// One line on stdout; resolves once it is flushed (process.exit does not wait for a pipe's
// pending writes: a result line past 64 KiB was cut, everything-legacy's cells made it that long).
function writeLine(out) {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(out)}\n`, resolve));
}

async function main() {
  if (process.argv[2] === '--serve') {
    const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
    for await (const line of lines) {
      if (line.trim()) await writeLine(await runBatch(JSON.parse(line)));
    }
    return;
  }
  const path = process.argv[2];
  await writeLine(await runPlan(JSON.parse(path ? readFileSync(path, 'utf8') : readFileSync(0, 'utf8'))));
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`driver failed: ${err?.stack ?? err}\n`);
    process.exit(2);
  },
);
