/**
 * mockmcp-js: test an MCP client written in TypeScript against mockmcp.
 *
 * ```ts
 * const mock = await startMock({ scenario: 'default', transport: 'stdio' });
 * await client.connect(new StdioClientTransport(mock.serverParams));
 * await mock.control.emitToolsChanged();
 * expect(await mock.verdict()).toBeClean();   // import 'mockmcp-js/vitest'
 * ```
 */
export { startMock, Mock, type ServerParams, type StartOptions } from './mock.js';
export { ControlClient, ControlError, WaitTimedOut, NotAnAnswer, ANSWER_TIMEOUT_MS, CONNECT_TIMEOUT_MS, MAX_ANSWER, type Kind, type Operation, type Params, type Result } from './control.js';
export { findMockmcp, MockmcpNotFound, INSTALL_HINT, type LocateOptions } from './locate.js';
export { startWarmServer, type WarmServer, type WarmServerOptions } from './warm.js';
export { explain, matchers, type MatcherResult } from './matchers.js';
export type * from './generated.js';
