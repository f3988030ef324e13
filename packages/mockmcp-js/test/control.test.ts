// The control client against a real Unix socket that answers anything: what a path naming another
// program's socket, or a mock killed mid-answer, sends. JSON.parse ran inside the socket's 'data'
// handler, so a line that was not JSON threw there: an uncaught exception in the test's own
// process, and the call never settled. Now every call settles: a value, a ControlError, or a
// NotAnAnswer quoting what came.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import { ControlClient, ControlError, NotAnAnswer, MAX_ANSWER } from 'mockmcp-js';

const servers: net.Server[] = [];
const folders: string[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  for (const dir of folders.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A socket that reads one request line per connection, sends `answer` and closes. */
async function answering(answer: string): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctl-'));
  folders.push(dir);
  const socketPath = path.join(dir, 'c.sock');
  const server = net.createServer((conn) => {
    let seen = '';
    conn.on('data', (chunk) => {
      seen += chunk.toString();
      if (seen.includes('\n')) conn.end(answer);
    });
    conn.on('error', () => {}); // the client stopped reading: past its bound
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return socketPath;
}

async function outcome(answer: string): Promise<[string, unknown]> {
  const client = new ControlClient(await answering(answer), 1000);
  try {
    return ['value', await client.emit('tools/list_changed')];
  } catch (error) {
    if (error instanceof ControlError) return ['error', error.code];
    if (error instanceof NotAnAnswer) return ['refused', error.message];
    throw error;
  }
}

const NOT_A_RESPONSE = 'the control socket answered with something that is not a JSON-RPC response: ';

describe('the control client settles on whatever comes back', () => {
  test.each([
    ['value', '{"jsonrpc":"2.0","id":1,"result":{"delivered":3}}\n', ['value', 3]],
    ['two lines', '{"result":{"delivered":3}}\n{"more":1}\n', ['value', 3]],
    ['error', '{"error":{"code":-32602,"message":"no"}}\n', ['error', -32602]],
    ['nothing', '', ['refused', 'the mock closed the control connection without answering']],
    ['no newline', '{"result":{"delivered":4}}', ['value', 4]],
    ['http', 'HTTP/1.1 400 Bad Request\r\n\r\n', ['refused', NOT_A_RESPONSE + JSON.stringify('HTTP/1.1 400 Bad Request\r\n')]],
    ['array', '[1,2]\n', ['refused', NOT_A_RESPONSE + '"[1,2]\\n"']],
    ['null', 'null\n', ['refused', NOT_A_RESPONSE + '"null\\n"']],
    ['string code', '{"error":{"code":"x"}}\n', ['refused', NOT_A_RESPONSE + JSON.stringify('{"error":{"code":"x"}}\n')]],
    ['null result', '{"result":null}\n', ['refused', NOT_A_RESPONSE + JSON.stringify('{"result":null}\n')]],
  ])('%s', async (_name, answer, expected) => {
    expect(await outcome(answer)).toEqual(expected);
  });

  test('silence is refused after the answer timeout beyond the operation\'s own', async () => {
    // a peer that accepts and never answers (a stopped mock) held every call forever
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ctl-'));
    folders.push(dir);
    const socketPath = path.join(dir, 'c.sock');
    const server = net.createServer((conn) => {
      conn.on('error', () => {});
      conn.resume(); // (reads and drops the request: a paused socket would not see the client leave)
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    const started = Date.now();
    const client = new ControlClient(socketPath, 1000, 300);
    await expect(client.waitFor({ method: 'tools/call' }, { timeout: 0.4 })).rejects.toThrow(
      new NotAnAnswer(`no answer from ${socketPath} within 0.7 s: it accepted the connection but said nothing `
        + '(a stopped mock, or another program\'s socket)'));
    expect(Date.now() - started).toBeGreaterThanOrEqual(690);
  }, 30_000);

  test('an answer past the bound is refused, not read whole', async () => {
    const [kind, why] = await outcome('{"result":{"delivered":"' + 'x'.repeat(MAX_ANSWER + 10));
    expect(kind).toBe('refused');
    expect(why).toMatch(/^the control socket's answer is longer than 67108864 characters/);
  }, 30_000);

  test('random bytes never escape as anything but NotAnAnswer or a value', async () => {
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let round = 0; round < 40; round++) {
      const length = next() % 48;
      const text = Array.from({ length }, () => String.fromCharCode(next() % 128)).join('') + '\n';
      const [kind] = await outcome(text);
      expect(['value', 'error', 'refused']).toContain(kind);
    }
  });
});
