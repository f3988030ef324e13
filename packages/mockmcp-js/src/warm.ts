/**
 * A warm fork server for this test run (docs/warm.md), tied to this process: what
 * `pytest --mockmcp-warm` is to a Python suite, for a vitest or jest `globalSetup`.
 *
 * It runs `mockmcp warm start --lifeline 3` in a private folder, with the other end of a socket
 * pair held here: when this process ends, however it ends (a SIGKILL, a CI step's time-out), the
 * kernel closes that end and the server stops, its mocks with it, and removes its folder. While it
 * runs, `MOCKMCP_WARM_ARGV` names its launcher and `MOCKMCP_WARM_DIR` its folder, so every
 * `startMock` (and every worker started afterwards, which inherits them) spawns through it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Socket } from 'node:net';
import { findMockmcp, WARM_ARGV } from './locate.js';

/** The runtime folder a warm server and its launchers use (docs/warm.md); it wins over the prefix's. */
const WARM_DIR = 'MOCKMCP_WARM_DIR';

export interface WarmServerOptions {
  /** The mockmcp command (as for `startMock`); default: found as `findMockmcp` says. */
  mockmcp?: string | string[];
  /** How long the start may take (it imports everything a mock may need), default 60 s. */
  timeoutMs?: number;
}

/** A running warm server of this process; `stop()` it in the global teardown. */
export interface WarmServer {
  /** The launcher's prefix, spawned instead of mockmcp (`MOCKMCP_WARM_ARGV` holds it as JSON). */
  readonly argv: string[];
  readonly pid: number;
  /** Its private runtime folder (socket, pid file, log); gone once it has stopped. */
  readonly folder: string;
  /** Stop it (running mocks get their 2 s grace), wait until it is gone, restore the two variables. */
  stop(): Promise<void>;
}

interface Finished {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The command's status and output, once it has exited and its stdout and stderr are read to their
 * end ('close' would also wait for the lifeline, which the server holds on). */
function finished(child: ChildProcess, timeoutMs: number, what: string): Promise<Finished> {
  const read = (stream: NodeJS.ReadableStream | null) => new Promise<string>((resolve) => {
    let text = '';
    if (stream === null) return resolve(text);
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => { text += chunk; });
    stream.once('end', () => resolve(text));
    stream.once('error', () => resolve(text));
  });
  const exited = new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not finish in ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (error) => { clearTimeout(timer); reject(error); });
    child.once('exit', (status) => { clearTimeout(timer); resolve(status); });
  });
  return Promise.all([exited, read(child.stdout), read(child.stderr)])
    .then(([status, stdout, stderr]) => ({ status, stdout, stderr }));
}

/** `mockmcp warm argv`'s JSON list of strings, or an error saying what came instead. */
function launcherArgv(printed: Finished): string[] {
  let value: unknown;
  try {
    value = JSON.parse(printed.stdout);
  } catch {
    value = undefined;
  }
  if (printed.status !== 0 || !Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string')) {
    throw new Error(`mockmcp warm argv printed no JSON list of strings (status ${printed.status}): ${(printed.stderr || printed.stdout).trim()}`);
  }
  return value as string[];
}

function ended(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return true;
  }
  try { // a zombie (its parent, the start command, is gone; whoever adopted it reaps it) has ended too
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()!.startsWith('Z');
  } catch {
    return false;
  }
}

async function gone(pid: number, folder: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (ended(pid) && !existsSync(folder)) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

/**
 * Start a warm server for this process (see the module's comment) and point
 * `MOCKMCP_WARM_ARGV` and `MOCKMCP_WARM_DIR` at it. Rejects with the command's own message when it cannot start.
 */
export async function startWarmServer(options: WarmServerOptions = {}): Promise<WarmServer> {
  const mockmcp = findMockmcp({ mockmcp: options.mockmcp });
  const timeoutMs = options.timeoutMs ?? 60_000;
  const folder = mkdtempSync(path.join(os.tmpdir(), 'mmw-')); // 0700, and a short socket path
  const env: NodeJS.ProcessEnv = { ...process.env, [WARM_DIR]: folder };
  delete env[WARM_ARGV];
  const command = (...args: string[]) =>
    spawn(mockmcp[0]!, [...mockmcp.slice(1), 'warm', ...args], { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  const starting = command('start', '--lifeline', '3');
  // Our end of the socket pair: the server's lifeline. It must not keep this process alive.
  const lifeline = starting.stdio[3] as Socket | null | undefined;
  lifeline?.on('error', () => {});
  lifeline?.unref();
  let pid: number;
  let argv: string[];
  try {
    const started = await finished(starting, timeoutMs, 'mockmcp warm start');
    pid = Number(/pid (\d+)/.exec(started.stdout)?.[1]);
    if (started.status !== 0 || !pid) {
      throw new Error(`mockmcp warm start exited with status ${started.status}: ${started.stderr.trim()}`);
    }
    const printed = await finished(command('argv'), timeoutMs, 'mockmcp warm argv');
    argv = launcherArgv(printed);
  } catch (error) {
    lifeline?.destroy(); // (a server that did start stops at this end of file)
    rmSync(folder, { recursive: true, force: true });
    throw error;
  }
  // Both variables, as `pytest --mockmcp-warm` sets them: a MOCKMCP_WARM_DIR left from outside
  // (an enclosing run's) would win over the prefix's folder in every spawn given this environment.
  const ours: Record<string, string> = { [WARM_ARGV]: JSON.stringify(argv), [WARM_DIR]: folder };
  const saved = Object.fromEntries(Object.keys(ours).map((name) => [name, process.env[name]]));
  Object.assign(process.env, ours);
  let stopped: Promise<void> | undefined;
  return {
    argv,
    pid,
    folder,
    stop() {
      stopped ??= (async () => {
        for (const [name, value] of Object.entries(saved)) {
          if (process.env[name] !== ours[name]) continue; // (set since by someone else: theirs now)
          if (value === undefined) delete process.env[name];
          else process.env[name] = value;
        }
        lifeline?.destroy(); // its end of file: the server stops as for `mockmcp warm stop`
        if (!(await gone(pid, folder, 10_000))) {
          try { process.kill(pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
          rmSync(folder, { recursive: true, force: true });
        }
      })();
      return stopped;
    },
  };
}
