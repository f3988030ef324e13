// The package against the real mock and the official TypeScript client (2.4.0): stdio with the
// probe-plus-session pattern, control right after connect(), the session's verdict with the probe
// in it, a deliberately wrong client failing its verdict, HTTP, and finding the command.
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterEach, describe, expect, test } from 'vitest';
import { findMockmcp, MockmcpNotFound, startMock, type Mock } from 'mockmcp-js';
import 'mockmcp-js/vitest';

const started: Mock[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((mock) => mock.stop()));
});

async function start(...args: Parameters<typeof startMock>): Promise<Mock> {
  const mock = await startMock(...args);
  started.push(mock);
  return mock;
}

function newClient(): Client {
  return new Client({ name: 'mockmcp-js-tests', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
}

function text(result: Awaited<ReturnType<Client['callTool']>>): string {
  const first = result.content[0];
  if (first?.type !== 'text') throw new Error(`expected text content, got ${JSON.stringify(result.content)}`);
  return first.text;
}

describe('stdio, the client spawning a probe then the session', () => {
  test('a control operation right after connect() reaches the serving process', async () => {
    const mock = await start({ scenario: 'default' });
    const client = newClient();
    await client.connect(new StdioClientTransport(mock.serverParams));
    // no wait, no listen() first: the helper waits for the session process's socket
    const armed = await mock.control.arm({ method: 'tools/call', name: 'echo' }, [{ error: { code: -32000, message: 'backend down' } }]);
    expect(armed.remaining).toBe(1);
    await expect(client.callTool({ name: 'echo', arguments: { text: 'a' } })).rejects.toThrow(ProtocolError);
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'b' } }))).toBe('b');
    await mock.control.addTool({ name: 'wave', replies: [{ steps: [{ text: 'o/' }] }] });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('wave');
    expect((await mock.control.counters()).requests).toBeGreaterThanOrEqual(3);
    await client.close();
    const report = await mock.verdict();
    expect(report.processes).toHaveLength(2); // the probe and the session, one verdict
    expect(report).toBeClean();
  });

  test('the verdict judges the probe with the session: no false failure', async () => {
    const mock = await start({ scenario: 'conformance-tool-arguments' });
    const client = newClient();
    await client.connect(new StdioClientTransport(mock.serverParams));
    const result = await client.callTool({ name: 'book_flight', arguments: { from: 'CDG', to: 'NRT', passengers: 2, class: 'economy' } });
    expect(text(result)).toBe('booked 2 from CDG to NRT');
    await client.close();
    const report = await mock.verdict({ perProcess: true });
    expect(report).toBeClean();
    // alone, the probe (server/discover only) fails "exactly 1 tools/call": the session does not
    const alone = Object.values(report.perProcess ?? {}).map((p) => p.ok);
    expect(alone.sort()).toEqual([false, true]);
  });

  test('a deliberately wrong client fails its verdict, and the matcher says why', async () => {
    const mock = await start({ scenario: 'conformance-tool-arguments' });
    const client = newClient();
    await client.connect(new StdioClientTransport(mock.serverParams));
    await client.callTool({ name: 'book_flight', arguments: { from: 'CDG', to: 'NRT', passengers: '2' } }).catch(() => undefined);
    await client.close();
    const report = await mock.verdict();
    expect(report.ok).toBe(false);
    expect(report).not.toBeClean();
    expect(() => expect(report).toBeClean()).toThrow(/failed expectation book \(tools\/call book_flight[\s\S]*seen 0 times[\s\S]*error tools\.arguments\.invalid/);
  });

  test('journal() skips a torn last line, as a process being written or killed leaves it', async () => {
    const mock = await start({ scenario: 'default' });
    const client = newClient();
    await client.connect(new StdioClientTransport(mock.serverParams));
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'kept' } }))).toBe('kept');
    await client.close();
    const whole = mock.journal();
    expect(whole.some((r) => r.dir === 'in' && JSON.stringify(r).includes('kept'))).toBe(true);
    appendFileSync(path.join(mock.sessionDir, 'journal.jsonl'), '{"t": 1.25, "pid": 7, "dir": "in", "message": {"jsonr');
    expect(mock.journal()).toEqual(whole); // it threw a SyntaxError
  });
});

describe('Streamable HTTP', () => {
  test('the URL once it listens, control, verdict, stop', async () => {
    const mock = await start({ scenario: 'default', transport: 'http' });
    expect(mock.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const client = newClient();
    await client.connect(new StreamableHTTPClientTransport(new URL(mock.url!)));
    await mock.control.replaceTool({ name: 'echo', replies: [{ steps: [{ text: 'replaced' }] }] });
    expect(text(await client.callTool({ name: 'echo', arguments: { text: 'x' } }))).toBe('replaced');
    const seen = await mock.control.waitFor({ method: 'tools/call', name: 'echo' }, { since: 0, timeout: 5 });
    expect(seen.method).toBe('tools/call');
    await client.close();
    await mock.stop();
    expect(await mock.verdict().catch((e: Error) => e.message)).toMatch(/report/); // the folder went with stop()
  });
});

describe('finding mockmcp', () => {
  test('an explicit option, then MOCKMCP, then PATH, then python3 -m mockmcp, else the install line', () => {
    expect(findMockmcp({ mockmcp: '/opt/m/bin/mockmcp', env: { MOCKMCP: 'other' } })).toEqual(['/opt/m/bin/mockmcp']);
    expect(findMockmcp({ env: { MOCKMCP: 'uvx --from git+file:///x mockmcp', PATH: '/usr/bin' } })).toEqual(['uvx', '--from', 'git+file:///x', 'mockmcp']);
    expect(() => findMockmcp({ env: { PATH: '/nonexistent' } })).toThrow(MockmcpNotFound);
    expect(() => findMockmcp({ env: { PATH: '/nonexistent' } })).toThrow(/pipx install 'git\+/);
  });

  test('a missing mock is a clear error, bounded, not ENOENT', async () => {
    const mock = await start({ scenario: 'default', connectTimeoutMs: 200 });
    await expect(mock.control.position()).rejects.toThrow(/after waiting 200 ms.*call after client\.connect\(\)/);
  });
});
