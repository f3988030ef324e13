/**
 * Finding the mockmcp command, in one order everywhere (the docs say the same):
 * an explicit option, then `MOCKMCP` in the environment, then `mockmcp` on PATH,
 * then `python3 -m mockmcp`. None working is an error naming the install lines.
 * And what to spawn instead when a warm server runs: `MOCKMCP_WARM_ARGV` (docs/warm.md).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

export const INSTALL_HINT =
  "install it with one of: pipx install 'git+<mockmcp git URL>' | " +
  "python3 -m venv ~/.mockmcp && ~/.mockmcp/bin/pip install 'git+<mockmcp git URL>' (then MOCKMCP=~/.mockmcp/bin/mockmcp) | " +
  "MOCKMCP='uvx --from git+<mockmcp git URL> mockmcp'; see docs/other-languages.md#install";

/** mockmcp could not be found: the message names what was tried and how to install it. */
export class MockmcpNotFound extends Error {
  constructor(tried: string[]) {
    super(`mockmcp not found (tried: ${tried.join('; ')}); ${INSTALL_HINT}`);
    this.name = 'MockmcpNotFound';
  }
}

/** Where to look: the environment and PATH, given so tests can pin them. */
export interface LocateOptions {
  /** An explicit command (a path, or a command and its first arguments). */
  mockmcp?: string | string[];
  env?: NodeJS.ProcessEnv;
}

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir && executable(path.join(dir, name))) return path.join(dir, name);
  }
  return undefined;
}

function split(command: string): string[] {
  return command.trim().split(/\s+/).filter(Boolean);
}

const found = new Map<string, string[]>();

/**
 * The command (program and first arguments) that runs mockmcp, e.g. `['/usr/bin/mockmcp']` or
 * `['python3', '-m', 'mockmcp']`. `MOCKMCP` may name a path or a command line (split on spaces).
 * An explicit command or `MOCKMCP` is taken as given; PATH and the Python fallback are looked up.
 */
export function findMockmcp(options: LocateOptions = {}): string[] {
  const env = options.env ?? process.env;
  if (options.mockmcp !== undefined) {
    return typeof options.mockmcp === 'string' ? split(options.mockmcp) : [...options.mockmcp];
  }
  if (env.MOCKMCP) return split(env.MOCKMCP);
  const key = env.PATH ?? '';
  const cached = found.get(key);
  if (cached) return [...cached];
  const tried = ['the mockmcp option', 'MOCKMCP (unset)'];
  let command: string[] | undefined;
  const binary = onPath('mockmcp', env);
  if (binary) command = [binary];
  else {
    tried.push('mockmcp on PATH');
    const python = onPath('python3', env);
    if (python && spawnSync(python, ['-c', 'import mockmcp'], { env, stdio: 'ignore', timeout: 30_000 }).status === 0) {
      command = [python, '-m', 'mockmcp'];
    } else tried.push(python ? `${python} -m mockmcp (no module mockmcp)` : 'python3 on PATH');
  }
  if (!command) throw new MockmcpNotFound(tried);
  found.set(key, command);
  return [...command];
}

/** A warm server's launcher prefix as a JSON list (`mockmcp warm argv` prints it; `pytest --mockmcp-warm` sets it). */
export const WARM_ARGV = 'MOCKMCP_WARM_ARGV';

/**
 * The command prefix to spawn instead of mockmcp when `MOCKMCP_WARM_ARGV` names a warm server's
 * launcher, else undefined. Read from the environment, never by spawning anything: no cost per
 * mock. The prefix is safe whether or not its server still runs (the launcher then runs the
 * mock itself). A value that is not a JSON list of strings is an error naming the variable.
 */
export function warmArgv(env: NodeJS.ProcessEnv = process.env): string[] | undefined {
  const text = env[WARM_ARGV];
  if (!text) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  if (!Array.isArray(value) || value.length === 0 || !value.every((item) => typeof item === 'string')) {
    throw new Error(`${WARM_ARGV} must be a JSON list of strings, as \`mockmcp warm argv\` prints it; got ${JSON.stringify(text)}`);
  }
  return value as string[];
}
