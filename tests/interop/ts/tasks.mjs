// What the official TypeScript client (2.4.0) does with the Tasks extension on 2026-07-28.
//
// Usage: node tasks.mjs COMMAND [ARGS...]   (the mock to spawn, e.g. python -m mockmcp run tasks)
// Prints one JSON object: per probe, what the client gave (ok + result, or the error's class,
// code and message). tests/test_interop_tasks.py judges it; docs/interop.md records it.

import { Client, ProtocolError, SdkError } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import * as z from 'zod';

const [command, ...args] = process.argv.slice(2);
const EXT = 'io.modelcontextprotocol/tasks';

function describe(err) {
  if (err instanceof SdkError) return { status: 'client-error', code: err.code, message: String(err.message) };
  if (err instanceof ProtocolError) return { status: 'error', code: err.code, message: String(err.message) };
  return { status: 'client-error', code: err?.constructor?.name, message: String(err?.message ?? err) };
}

async function attempt(fn) {
  try {
    return { status: 'ok', result: await fn() };
  } catch (err) {
    return describe(err);
  }
}

async function session(capabilities, probes) {
  const transport = new StdioClientTransport({ command, args });
  const client = new Client({ name: 'tasks-probe', version: '0' }, { capabilities, versionNegotiation: { mode: 'auto' } });
  await client.connect(transport);
  const out = { version: client.getNegotiatedProtocolVersion?.() ?? null };
  for (const [name, fn] of Object.entries(probes)) out[name] = await attempt(() => fn(client));
  await client.close();
  return out;
}

const loose = z.looseObject({});
const withExtension = await session({ extensions: { [EXT]: {} } }, {
  callTool: (c) => c.callTool({ name: 'build', arguments: {} }),
  requestWithSchema: (c) => c.request({ method: 'tools/call', params: { name: 'build', arguments: {} } }, loose),
  tasksGet: (c) => c.request({ method: 'tasks/get', params: { taskId: 'no-such-task' } }, loose),
  tasksGetNoSchema: (c) => c.request({ method: 'tasks/get', params: { taskId: 'no-such-task' } }),
});
const plain = await session({}, {
  quick: (c) => c.callTool({ name: 'quick', arguments: {} }),
  build: (c) => c.callTool({ name: 'build', arguments: {} }),
});
console.log(JSON.stringify({ withExtension, plain }));
