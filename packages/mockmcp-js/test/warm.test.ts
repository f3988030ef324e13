// startMock through a warm server (docs/warm.md): with MOCKMCP_WARM_ARGV set, as
// `startWarmServer` (and `pytest --mockmcp-warm`) sets it, the official client's spawns (the probe
// and the session) are the launcher's, forked by the warm server (its log says so), with the same
// verdict; the explicit options win over it, and a malformed value is a clear error. The server is
// tied to the process that started it: stopped, or killed with it, it goes with its folder.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { transformWithEsbuild } from 'vite';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { findMockmcp, startMock, startWarmServer, type Mock, type StartOptions, type WarmServer } from 'mockmcp-js';
import 'mockmcp-js/vitest';

const DISCOVER = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 't', version: '0' } } } }) + '\n';

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

function log(folder: string): string {
  return readdirSync(folder).filter((name) => name.endsWith('.log'))
    .map((name) => readFileSync(path.join(folder, name), 'utf8')).join('');
}

function alive(pid: number): boolean {
  try {
    return !readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.startsWith('Z');
  } catch {
    return false;
  }
}

async function goneWithin(pid: number, folder: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid) || existsSync(folder)) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

let server: WarmServer;
let prefix: string[] = [];
let before: (string | undefined)[] = [];
beforeAll(async () => {
  before = [process.env.MOCKMCP_WARM_ARGV, process.env.MOCKMCP_WARM_DIR];
  server = await startWarmServer();
  prefix = server.argv;
});
afterAll(async () => {
  await server.stop();
  expect([process.env.MOCKMCP_WARM_ARGV, process.env.MOCKMCP_WARM_DIR]).toEqual(before);
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
      const text = log(server.folder);
      for (const pid of report.processes ?? []) expect(text).toMatch(new RegExp(`forked \\d+ for pid ${pid}\\n`));
      expect(text).not.toMatch(/refused/);
    } finally {
      await mock.stop();
    }
  });

  test('command and mockmcp win over it; warm: false leaves it; a malformed value is a clear error', async () => {
    const value = JSON.stringify(prefix);
    const given = await startWith(value, { scenario: 'default', control: false, command: ['/opt/x', 'y'] });
    const mockmcp = findMockmcp();
    const explicit = await startWith(value, { scenario: 'default', control: false, mockmcp: mockmcp });
    const off = await startWith(value, { scenario: 'default', control: false, warm: false });
    expect(given.serverParams.command).toBe('/opt/x');
    expect(explicit.serverParams.command).toBe(mockmcp[0]);
    expect(off.serverParams.command).toBe(mockmcp[0]);
    await Promise.all([given.stop(), explicit.stop(), off.stop()]);
    await expect(startWith('python -S launcher.py', { scenario: 'default' })).rejects.toThrow(/MOCKMCP_WARM_ARGV must be a JSON list of strings/);
  });

  test('startWarmServer names itself in MOCKMCP_WARM_ARGV; stop() ends it and its folder, and restores the variable', async () => {
    const outer = process.env.MOCKMCP_WARM_ARGV;
    const outerDir = process.env.MOCKMCP_WARM_DIR;
    expect(JSON.parse(outer!)).toEqual(prefix);
    const other = await startWarmServer();
    expect(JSON.parse(process.env.MOCKMCP_WARM_ARGV!)).toEqual(other.argv);
    expect(process.env.MOCKMCP_WARM_DIR).toBe(other.folder); // (one set outside would send spawns elsewhere)
    expect(other.argv.at(-1)).toBe(`--warm-dir=${other.folder}`);
    const served = spawnSync(other.argv[0]!, [...other.argv.slice(1), 'run', 'default'], { input: DISCOVER, encoding: 'utf8', timeout: 60_000 });
    expect(JSON.parse(served.stdout).id).toBe(1);
    expect(log(other.folder), served.stderr).toMatch(new RegExp(`forked \\d+ for pid ${served.pid}\\n`));
    await other.stop();
    expect(alive(other.pid)).toBe(false);
    expect(existsSync(other.folder)).toBe(false);
    expect(process.env.MOCKMCP_WARM_ARGV).toBe(outer);
    expect(process.env.MOCKMCP_WARM_DIR).toBe(outerDir);
  });

  test('a start that fails (or cannot be spawned) rejects with its status and message, and leaves no folder', async () => {
    const folders = () => readdirSync(os.tmpdir()).filter((name) => name.startsWith('mmw-')).sort();
    const before = folders();
    const failing = [process.execPath, '-e', 'console.error("no warm server here"); process.exit(3)'];
    await expect(startWarmServer({ mockmcp: failing })).rejects.toThrow('mockmcp warm start exited with status 3: no warm server here');
    await expect(startWarmServer({ mockmcp: ['/nonexistent/mockmcp'] })).rejects.toThrow(/ENOENT/);
    expect(folders()).toEqual(before);
  });

  test('a process killed with SIGKILL takes the warm server it started, and its folder', async () => {
    // The package's own modules, as plain JavaScript a separate Node process can import.
    const built = mkdtempSync(path.join(os.tmpdir(), 'mockmcp-js-'));
    try {
      for (const name of ['warm', 'locate']) {
        const file = fileURLToPath(new URL(`../src/${name}.ts`, import.meta.url));
        const js = await transformWithEsbuild(readFileSync(file, 'utf8'), file, { loader: 'ts', format: 'esm' });
        writeFileSync(path.join(built, `${name}.js`), js.code);
      }
      writeFileSync(path.join(built, 'starter.mjs'),
        "import { startWarmServer } from './warm.js';\n" +
        'const s = await startWarmServer();\n' +
        'console.log(JSON.stringify({ pid: s.pid, folder: s.folder }));\n' +
        'setInterval(() => {}, 1000);\n');
      const starter = spawn(process.execPath, [path.join(built, 'starter.mjs')], { stdio: ['ignore', 'pipe', 'inherit'] });
      const line = await new Promise<string>((resolve, reject) => {
        createInterface({ input: starter.stdout! }).once('line', resolve);
        starter.once('exit', (code) => reject(new Error(`the starter exited with status ${code}`)));
      });
      const { pid, folder } = JSON.parse(line) as { pid: number; folder: string };
      expect(alive(pid)).toBe(true);
      starter.kill('SIGKILL');
      expect(await goneWithin(pid, folder, 20_000)).toBe(true);
    } finally {
      rmSync(built, { recursive: true, force: true });
    }
  });
});
