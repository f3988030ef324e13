/**
 * `startMock`: what the official client needs to reach mockmcp, a session directory for the
 * probe-plus-session pattern, the control client and the session's one verdict.
 *
 * On stdio the client spawns the mock (with `versionNegotiation` it spawns it twice: a
 * `server/discover` probe, then the session process), so `startMock` spawns nothing: it returns
 * the spawn parameters, every process of which shares one `--session DIR` and one control socket
 * path. The verdict is `mockmcp report DIR`, over every process of the session, so a probe that
 * only asked `server/discover` is judged together with the session, never alone. Over HTTP
 * `startMock` spawns the one process itself and resolves once it prints its URL.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ControlClient, CONNECT_TIMEOUT_MS } from './control.js';
import { findMockmcp, warmArgv } from './locate.js';
import type { JournalRecord, Report } from './generated.js';

export interface StartOptions {
  /** A bundled scenario's name (`mockmcp list`) or a scenario file. */
  scenario: string;
  /** `stdio` (default): the client spawns the mock; `http`: the mock is spawned now, `url` is its endpoint. */
  transport?: 'stdio' | 'http';
  /** A control socket (default true): `mock.control` drives the running mock. */
  control?: boolean;
  /** A session directory (default: a new temporary one): every process of the session shares it, and `verdict()` judges it. */
  session?: string;
  /** More arguments for `mockmcp run` (`--grace 1`, `--time-scale 0.1`, ...). */
  args?: string[];
  /** The mockmcp command; default: `MOCKMCP`, then `mockmcp` on PATH, then `python3 -m mockmcp`. */
  mockmcp?: string | string[];
  /**
   * A command prefix to spawn instead of the one found (e.g. a warm fork server's argv, as
   * `mockmcp warm argv` prints it); `mockmcp`'s other commands (`report`) still use the one found.
   */
  command?: string[];
  /**
   * Spawn through a warm server's launcher when `MOCKMCP_WARM_ARGV` names one (default true; set
   * by `pytest --mockmcp-warm`, or by hand: docs/warm.md). `command` and `mockmcp` win over it.
   */
  warm?: boolean;
  /** Milliseconds a control call waits for the mock's socket (default 10,000). */
  connectTimeoutMs?: number;
  /** Milliseconds to wait for the HTTP URL (default 30,000). */
  startTimeoutMs?: number;
}

/** What `StdioClientTransport` takes (`new StdioClientTransport(mock.serverParams)`). */
export interface ServerParams {
  command: string;
  args: string[];
  /** mockmcp is configured by arguments only (the client passes its child a whitelisted environment). */
  env?: Record<string, string>;
  stderr?: 'inherit' | 'ignore' | 'pipe';
}

/** A short socket path on every platform: macOS temporary folders pass the 104-byte limit alone. */
function socketPath(): string {
  const base = process.platform === 'win32' ? os.tmpdir() : '/tmp';
  return path.join(base, `mmcp-${randomBytes(6).toString('hex')}.sock`);
}

function run(command: string[], args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(command[0]!, [...command.slice(1), ...args], { maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') reject(error);
      else resolve({ code: error ? Number(error.code) : 0, stdout, stderr });
    });
  });
}

export class Mock {
  readonly scenario: string;
  readonly transport: 'stdio' | 'http';
  /** The session directory every process of this mock shares. */
  readonly sessionDir: string;
  /** The control socket's path, when `control` is on. */
  readonly controlPath: string | undefined;
  /** The HTTP endpoint (`transport: 'http'`). */
  url: string | undefined;
  private readonly mockmcp: string[];
  private readonly spawnCommand: string[];
  private readonly runArgs: string[];
  private readonly tmp: string | undefined;
  private readonly controlClient: ControlClient | undefined;
  private child: ChildProcess | undefined;

  constructor(options: StartOptions) {
    this.scenario = options.scenario;
    this.transport = options.transport ?? 'stdio';
    this.mockmcp = findMockmcp({ mockmcp: options.mockmcp });
    const warm = options.command === undefined && options.mockmcp === undefined && options.warm !== false
      ? warmArgv() : undefined;
    this.spawnCommand = options.command ?? warm ?? this.mockmcp;
    if (options.session === undefined) {
      this.tmp = mkdtempSync(path.join(os.tmpdir(), 'mockmcp-'));
      this.sessionDir = path.join(this.tmp, 'session');
    } else {
      this.sessionDir = options.session;
    }
    this.controlPath = options.control === false ? undefined : socketPath();
    this.controlClient = this.controlPath === undefined
      ? undefined : new ControlClient(this.controlPath, options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS);
    this.runArgs = ['run', this.scenario, '--session', this.sessionDir,
      ...(this.controlPath === undefined ? [] : ['--control', this.controlPath]), ...(options.args ?? [])];
  }

  /** `new StdioClientTransport(mock.serverParams)`: every spawn the client makes joins the session. */
  get serverParams(): ServerParams {
    return { command: this.spawnCommand[0]!, args: [...this.spawnCommand.slice(1), ...this.runArgs], stderr: 'inherit' };
  }

  /** The typed control client; each call waits (bounded) for the serving process's socket. */
  get control(): ControlClient {
    if (this.controlClient === undefined) throw new Error('startMock({control: false}): this mock has no control socket');
    return this.controlClient;
  }

  /** Spawn the HTTP server and wait for its URL (its first stdout line). */
  async listen(timeoutMs: number): Promise<void> {
    const child = spawn(this.spawnCommand[0]!, [...this.spawnCommand.slice(1), ...this.runArgs, '--http', '0'],
      { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    const lines = createInterface({ input: child.stdout! });
    this.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`mockmcp --http printed no URL in ${timeoutMs} ms`)), timeoutMs);
      lines.once('line', (line) => { clearTimeout(timer); resolve(line.trim()); });
      child.once('exit', (code) => { clearTimeout(timer); reject(new Error(`mockmcp --http exited with status ${code} before its URL`)); });
      child.once('error', (error) => { clearTimeout(timer); reject(error); });
    });
    lines.close();
    child.stdout!.resume();
  }

  /** The session's one verdict (`mockmcp report DIR --json`), over every process the session had. */
  async verdict(options: { perProcess?: boolean } = {}): Promise<Report> {
    const args = ['report', this.sessionDir, '--json', ...(options.perProcess ? ['--per-process'] : [])];
    const { code, stdout, stderr } = await run(this.mockmcp, args);
    if (code !== 0 && code !== 1) throw new Error(`mockmcp report ${this.sessionDir} failed (status ${code}): ${stderr.trim()}`);
    return JSON.parse(stdout) as Report;
  }

  /**
   * Every record of the session's journal so far (every process's, in order of writing). A line
   * that is not a JSON object is skipped: the last line of a journal a process is writing right
   * now, or that a killed process left torn (the Python side's readers skip them too).
   */
  journal(): JournalRecord[] {
    let text: string;
    try {
      text = readFileSync(path.join(this.sessionDir, 'journal.jsonl'), 'utf8');
    } catch {
      return [];
    }
    const records: JournalRecord[] = [];
    for (const line of text.split('\n')) {
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof value === 'object' && value !== null && !Array.isArray(value)) records.push(value as JournalRecord);
    }
    return records;
  }

  /**
   * End an HTTP mock (its stdin closed, as a graceful stop; SIGTERM after 5 s) and remove the
   * temporary folder. Read `verdict()` first: the session directory goes with the folder.
   */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.stdin?.end();
      const timer = setTimeout(() => child.kill('SIGTERM'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    if (this.tmp !== undefined) rmSync(this.tmp, { recursive: true, force: true });
  }
}

/** Start a mock: see `StartOptions`. Over HTTP it resolves once the endpoint listens. */
export async function startMock(options: StartOptions): Promise<Mock> {
  const mock = new Mock(options);
  if (mock.transport === 'http') {
    try {
      await mock.listen(options.startTimeoutMs ?? 30_000);
    } catch (error) {
      await mock.stop();
      throw error;
    }
  }
  return mock;
}
