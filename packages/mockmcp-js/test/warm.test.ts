// startMock through a warm server (docs/warm.md): with MOCKMCP_WARM_ARGV set, as `pytest
// --mockmcp-warm` sets it, the official client's spawns (the probe and the session) are the
// launcher's, forked by the warm server (its log says so), with the same verdict; the explicit
// options win over it, and a malformed value is a clear error.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findMockmcp, startMock, type Mock, type StartOptions } from 'mockmcp-js';
import 'mockmcp-js/vitest';

const mockmcp = findMockmcp();
const folder = mkdtempSync(path.join(os.tmpdir(), 'mmw-')); // 0700, as a warm server's folder must be
const env: NodeJS.ProcessEnv = { ...process.env, MOCKMCP_WARM_DIR: folder };
delete env.MOCKMCP_WARM_ARGV;

function warm(action: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(mockmcp[0]!, [...mockmcp.slice(1), 'warm', action], { env, encoding: 'utf8', timeout: 60_000 });
}

/** startMock with MOCKMCP_WARM_ARGV set to `value` while the options are read (synchronously). */
function startWith(value: string, options: StartOptions): Promise<Mock> {
  const saved = process.env.MOCKMCP_WARM_ARGV;
  process.env.MOCKMCP_WARM_ARGV = value;
  try {
    return startMock(options);
  } finally {
    if (saved === undefined) delete process.env.MOCKMCP_WARM_ARGV;
    else process.env.MOCKMCP_WARM_ARGV = saved;
  }
}

let prefix: string[] = [];
beforeAll(() => {
  const started = warm('start');
  expect(started.status, started.stderr).toBe(0);
  prefix = JSON.parse(warm('argv').stdout) as string[];
});
afterAll(() => {
  warm('stop');
  rmSync(folder, { recursive: true, force: true });
});

describe('a warm server', () => {
  test('MOCKMCP_WARM_ARGV: the probe and the session are forked by it, one verdict as ever', async () => {
    const mock = await startWith(JSON.stringify(prefix), { scenario: 'default' });
    try {
      expect([mock.serverParams.command, ...mock.serverParams.args.slice(0, prefix.length - 1)]).toEqual(prefix);
      const client = new Client({ name: 'warm', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
      await client.connect(new StdioClientTransport(mock.serverParams));
      const result = await client.callTool({ name: 'echo', arguments: { text: 'warm' } });
      expect(result.content[0]).toEqual({ type: 'text', text: 'warm' });
      await client.close();
      const report = await mock.verdict();
      expect(report).toBeClean();
      expect(report.processes).toHaveLength(2);
      const log = readdirSync(folder).filter((name) => name.endsWith('.log'))
        .map((name) => readFileSync(path.join(folder, name), 'utf8')).join('');
      for (const pid of report.processes ?? []) expect(log).toMatch(new RegExp(`forked \\d+ for pid ${pid}\\n`));
      expect(log).not.toMatch(/refused/);
    } finally {
      await mock.stop();
    }
  });

  test('command and mockmcp win over it; warm: false leaves it; a malformed value is a clear error', async () => {
    const value = JSON.stringify(prefix);
    const given = await startWith(value, { scenario: 'default', control: false, command: ['/opt/x', 'y'] });
    const explicit = await startWith(value, { scenario: 'default', control: false, mockmcp: mockmcp });
    const off = await startWith(value, { scenario: 'default', control: false, warm: false });
    expect(given.serverParams.command).toBe('/opt/x');
    expect(explicit.serverParams.command).toBe(mockmcp[0]);
    expect(off.serverParams.command).toBe(mockmcp[0]);
    await Promise.all([given.stop(), explicit.stop(), off.stop()]);
    await expect(startWith('python -S launcher.py', { scenario: 'default' })).rejects.toThrow(/MOCKMCP_WARM_ARGV must be a JSON list of strings/);
  });
});
