/**
 * The control channel (docs/control.md) from TypeScript: one JSON line over the mock's Unix
 * socket per call, a connection per call (a `waitFor` in one place and an `emit` in another stay
 * independent), typed by the operations' JSON Schemas (`mockmcp schema control`).
 *
 * Every call waits for the socket (bounded: `connectTimeoutMs`), retrying while it is absent
 * (ENOENT) or refuses (ECONNREFUSED, a stale socket of a killed process). That is what makes a
 * call right after the client's `connect()` reach the serving process: the TypeScript client
 * probes with `server/discover` in a throwaway process and reaps it before it spawns the session
 * process, whose socket appears a moment after `connect()` returns.
 */
import net from 'node:net';
import type {
  ArmParams, Armed, AuthState, ControlOperations, CountersResult, DisarmResult, JournalResult, ListTasksResult,
  PendingAuthorization, RequireScopeParams, RequireScopeResult, SetAuthMetadataResult, SetTaskParams, SetTaskResult,
  Task, When,
} from './generated.js';

export const CONNECT_TIMEOUT_MS = 10_000;
/** How long an answer may take beyond the operation's own `timeout` (a `waitFor`): a live mock answers
 * every operation at once, so only a stopped mock or another program's socket is slower. */
export const ANSWER_TIMEOUT_MS = 30_000;
const TIMED_OUT = -32008;
const RETRY_MS = 10;

/** An error answer of the control channel (`code`, `message`, `data`: docs/control.md). */
export class ControlError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'ControlError';
    this.code = code;
    this.data = data;
  }
}

/** `waitFor` saw no matching request in time; `data.nearMiss` names the closest one. */
export class WaitTimedOut extends ControlError {
  constructor(message: string, data?: unknown) {
    super(TIMED_OUT, message, data);
    this.name = 'WaitTimedOut';
  }
}

/**
 * What came back over the control socket is not a control answer: no answer, a line that is not a
 * JSON-RPC response, or one longer than `MAX_ANSWER`. A path that names another program's socket,
 * or a mock killed mid-answer; the message quotes the start of what came.
 */
export class NotAnAnswer extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NotAnAnswer';
  }
}

/** The longest answer read, in characters (a journal page is the longest a mock sends). */
export const MAX_ANSWER = 64 * 1024 * 1024;

export type Operation = keyof ControlOperations;
export type Params<Op extends Operation> = ControlOperations[Op]['params'];
export type Result<Op extends Operation> = ControlOperations[Op]['result'];
export type Kind = 'tool' | 'prompt' | 'resource' | 'template';
type Json = Record<string, unknown>;

interface Answer {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

function connectOnce(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(path);
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

async function connect(path: string, timeoutMs: number): Promise<net.Socket> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await connectOnce(path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && code !== 'ECONNREFUSED') || Date.now() >= deadline) {
        const waited = code === 'ENOENT' || code === 'ECONNREFUSED' ? ` after waiting ${timeoutMs} ms for the mock's socket` : '';
        throw new Error(`mockmcp control: cannot connect to ${path}${waited} (${code ?? String(error)}); ` +
          'a control call needs a running mock: on stdio the client spawns it, so call after client.connect()');
      }
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}

function exchange(socket: net.Socket, line: string, where: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let done = false;
    socket.setEncoding('utf8');
    socket.setTimeout(timeoutMs, () => {
      if (done) return;
      done = true;
      socket.destroy();
      reject(new NotAnAnswer(`no answer from ${where} within ${timeoutMs / 1000} s: it accepted the connection but said nothing `
        + '(a stopped mock, or another program\'s socket)'));
    });
    socket.on('data', (chunk: string) => {
      if (done) return;
      const at = chunk.indexOf('\n'); // (only the new chunk: a search of the whole buffer per chunk was quadratic)
      const end = at < 0 ? -1 : buffer.length + at;
      buffer += chunk;
      if (end < 0 && buffer.length <= MAX_ANSWER) return;
      done = true;
      socket.end();
      if (end < 0) reject(new NotAnAnswer(`the control socket's answer is longer than ${MAX_ANSWER} characters: ${quote(buffer)}...`));
      else resolve(buffer.slice(0, end + 1));
    });
    socket.once('error', (error) => {
      done = true;
      reject(error);
    });
    socket.once('close', () => {
      if (done) return;
      done = true;
      // what came without a newline is judged as a whole line (the Python client does the same)
      if (buffer === '') reject(new NotAnAnswer('the mock closed the control connection without answering'));
      else resolve(buffer);
    });
    socket.write(line);
  });
}

function quote(text: string): string {
  return JSON.stringify(text.slice(0, 200));
}

/** The answer a line holds, or why it is not one: a JSON-RPC response with an object result or an error whose code is an integer. */
function answerOf(line: string): Answer {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    value = undefined;
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const record = value as Record<string, unknown>;
    const error = record.error;
    if (typeof error === 'object' && error !== null && !Array.isArray(error)) {
      const { code, message, data } = error as Record<string, unknown>;
      if (Number.isInteger(code)) return { error: { code: code as number, message: String(message ?? ''), data } };
    } else if (error === undefined && typeof record.result === 'object' && record.result !== null && !Array.isArray(record.result)) {
      return { result: record.result }; // (every operation's result is an object: `mockmcp schema control`)
    }
  }
  throw new NotAnAnswer(`the control socket answered with something that is not a JSON-RPC response: ${quote(line)}`);
}

/** The wait an operation asks the mock for (`timeout` seconds: `waitFor`), in ms; 0 if none. */
function waitOf(params: unknown): number {
  const wait = (params as { timeout?: unknown } | null)?.timeout;
  return typeof wait === 'number' && wait > 0 && wait < 1e6 ? wait * 1000 : 0;
}

function clean<T extends Json>(params: T): T {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)) as T;
}

/** Every control operation, typed; `call` is the one transport, the rest name the operations. */
export class ControlClient {
  private ids = 0;

  constructor(readonly path: string, readonly connectTimeoutMs: number = CONNECT_TIMEOUT_MS,
              readonly answerTimeoutMs: number = ANSWER_TIMEOUT_MS) {}

  /** Send one operation by its wire name and return its result (an error answer throws `ControlError`). */
  async call<Op extends Operation>(op: Op, params: Params<Op>): Promise<Result<Op>> {
    const socket = await connect(this.path, this.connectTimeoutMs);
    const line = JSON.stringify({ jsonrpc: '2.0', id: ++this.ids, method: op, params }) + '\n';
    let answer: Answer;
    try {
      answer = answerOf(await exchange(socket, line, this.path, this.answerTimeoutMs + waitOf(params)));
    } finally {
      socket.destroy();
    }
    if (answer.error) {
      const { code, message, data } = answer.error;
      throw code === TIMED_OUT ? new WaitTimedOut(message, data) : new ControlError(code, message, data);
    }
    return answer.result as Result<Op>;
  }

  // events: the number of notifications delivered
  async emit(event: Params<'emit'>['event'], uri?: string): Promise<number> {
    return (await this.call('emit', clean({ event, uri }))).delivered;
  }
  emitToolsChanged(): Promise<number> { return this.emit('tools/list_changed'); }
  emitPromptsChanged(): Promise<number> { return this.emit('prompts/list_changed'); }
  emitResourcesChanged(): Promise<number> { return this.emit('resources/list_changed'); }
  emitResourceUpdated(uri: string): Promise<number> { return this.emit('resources/updated', uri); }
  async emitLog(level: string, data: unknown, logger?: string): Promise<number> {
    return (await this.call('emit', clean({ event: 'log' as const, level, data, logger }))).delivered;
  }
  async emitTask(taskId: string): Promise<number> {
    return (await this.call('emit', { event: 'tasks', taskId })).delivered;
  }

  // tasks (the Tasks extension)
  async listTasks(): Promise<ListTasksResult['tasks']> { return (await this.call('listTasks', {})).tasks; }
  async getTask(taskId: string): Promise<Task> { return (await this.call('getTask', { taskId })).task; }
  async setTask(taskId: string, status: SetTaskParams['status'], more: Omit<SetTaskParams, 'taskId' | 'status'> = {}): Promise<SetTaskResult> {
    return this.call('setTask', clean({ taskId, status, ...more }));
  }
  async completeTask(taskId: string, result?: Json, statusMessage?: string): Promise<Task> {
    return (await this.setTask(taskId, 'completed', clean({ result, statusMessage }))).task;
  }
  async failTask(taskId: string, error: Json, statusMessage?: string): Promise<Task> {
    return (await this.setTask(taskId, 'failed', clean({ error, statusMessage }))).task;
  }
  async cancelTask(taskId: string, statusMessage?: string): Promise<Task> {
    return (await this.setTask(taskId, 'cancelled', clean({ statusMessage }))).task;
  }
  async requireInput(taskId: string, inputRequests: Json, statusMessage?: string): Promise<Task> {
    return (await this.setTask(taskId, 'input_required', clean({ inputRequests, statusMessage }))).task;
  }

  // definitions: written exactly like an entry of the scenario's tools:, prompts:, resources:, resourceTemplates:
  add(kind: Kind, definition: Json, notify = true): Promise<Result<'add'>> {
    return this.call('add', { kind, definition, notify });
  }
  replace(kind: Kind, definition: Json, notify = true): Promise<Result<'replace'>> {
    return this.call('replace', { kind, definition, notify });
  }
  remove(kind: Kind, key: string, notify = true): Promise<Result<'remove'>> {
    return this.call('remove', { kind, key, notify });
  }
  addTool(definition: Json, notify = true): Promise<Result<'add'>> { return this.add('tool', definition, notify); }
  replaceTool(definition: Json, notify = true): Promise<Result<'replace'>> { return this.replace('tool', definition, notify); }
  removeTool(name: string, notify = true): Promise<Result<'remove'>> { return this.remove('tool', name, notify); }
  addPrompt(definition: Json, notify = true): Promise<Result<'add'>> { return this.add('prompt', definition, notify); }
  replacePrompt(definition: Json, notify = true): Promise<Result<'replace'>> { return this.replace('prompt', definition, notify); }
  removePrompt(name: string, notify = true): Promise<Result<'remove'>> { return this.remove('prompt', name, notify); }
  addResource(definition: Json, notify = true): Promise<Result<'add'>> { return this.add('resource', definition, notify); }
  replaceResource(definition: Json, notify = true): Promise<Result<'replace'>> { return this.replace('resource', definition, notify); }
  removeResource(uri: string, notify = true): Promise<Result<'remove'>> { return this.remove('resource', uri, notify); }
  addTemplate(definition: Json, notify = true): Promise<Result<'add'>> { return this.add('template', definition, notify); }
  replaceTemplate(definition: Json, notify = true): Promise<Result<'replace'>> { return this.replace('template', definition, notify); }
  removeTemplate(uriTemplate: string, notify = true): Promise<Result<'remove'>> { return this.remove('template', uriTemplate, notify); }

  // state and counters
  async getState(): Promise<string> { return (await this.call('getState', {})).state; }
  /** Set the named state; the previous one. */
  async setState(state: string): Promise<string> { return (await this.call('setState', { state })).previous; }
  counters(): Promise<CountersResult> { return this.call('counters', {}); }

  // armed replies
  /** Answer the next `times` requests matching `when` with `steps` (as in a scenario rule). */
  arm(when: When, steps: ArmParams['steps'], times = 1): Promise<Armed> { return this.call('arm', { when, steps, times }); }
  /** Remove one armed reply (by id), or all; how many. */
  async disarm(id?: number): Promise<DisarmResult['disarmed']> { return (await this.call('disarm', clean({ id }))).disarmed; }

  // reading requests
  async pause(seconds?: number): Promise<void> { await this.call('pause', clean({ seconds })); }
  async resume(): Promise<void> { await this.call('resume', {}); }

  // traffic
  /** The journal position the next MCP message will get (for `waitFor`'s `since`). */
  async position(): Promise<number> { return (await this.call('ping', {})).position; }
  /** The first request matching `when` read from now on (or from position `since`); `WaitTimedOut` after `timeout` seconds. */
  async waitFor(when: When, options: { timeout?: number; since?: number } = {}): Promise<Record<string, unknown>> {
    const answer = await this.call('waitFor', clean({ when, timeout: options.timeout ?? 5, since: options.since }));
    return answer.message as Record<string, unknown>;
  }
  journal(since = 0, limit?: number): Promise<JournalResult> { return this.call('journal', clean({ since, limit })); }
  // authorization (a scenario with auth, over HTTP)
  /** Expire access tokens now (a client's, a scope's, or all; `refresh`: refresh tokens too): the number expired. */
  async expireTokens(options: { clientId?: string; scope?: string; refresh?: boolean } = {}): Promise<number> {
    return (await this.call('expireTokens', clean(options))).expired;
  }
  /** Revoke tokens now (refresh tokens too unless `refresh: false`): the number revoked. */
  async revokeTokens(options: { clientId?: string; scope?: string; refresh?: boolean } = {}): Promise<number> {
    return (await this.call('revokeTokens', clean(options))).revoked;
  }
  /** Scopes a method, tool, prompt or resource (none named: every request) needs from now on. */
  requireScope(scopes: string[], target: Omit<RequireScopeParams, 'scopes'> = {}): Promise<RequireScopeResult> {
    return this.call('requireScope', { scopes, ...clean(target) });
  }
  /** The authorization requests waiting for a decision (`decision: wait`), oldest first. */
  async pendingAuthorizations(): Promise<PendingAuthorization[]> { return (await this.call('listAuthorizations', {})).pending; }
  /** Approve one waiting request (all without `id`), perhaps granting only `scopes`: the ids decided. */
  async approveAuthorization(id?: string, scopes?: string[]): Promise<string[]> {
    return (await this.call('approveAuthorization', clean({ id, scopes }))).decided;
  }
  /** Deny one waiting request (all without `id`): `access_denied` on its redirect URI. The ids decided. */
  async denyAuthorization(id?: string, description?: string): Promise<string[]> {
    return (await this.call('denyAuthorization', clean({ id, description }))).decided;
  }
  /** Override metadata fields from now on (a `null` value removes the field). */
  setAuthMetadata(fields: { resource?: Record<string, unknown>; server?: Record<string, unknown> }): Promise<SetAuthMetadataResult> {
    return this.call('setAuthMetadata', clean(fields));
  }
  /** Move the resource to the second authorization server now: its URL. */
  async migrate(): Promise<string | null> { return (await this.call('migrate', {})).authorizationServer; }
  /** Where the MCP URL, the authorization server and the second origin are. */
  async authState(): Promise<AuthState | undefined> { return (await this.call('getState', {})).auth; }

  /** End the mock: as at the end of stdin, or (`crash`) at once with `status` (default 1). */
  async shutdown(options: { crash?: boolean; status?: number } = {}): Promise<void> {
    await this.call('shutdown', clean({ mode: options.crash ? ('crash' as const) : ('graceful' as const), status: options.status }));
  }
}
