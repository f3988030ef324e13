/**
 * `import 'mockmcp-js/jest'` (in a setup file, `setupFilesAfterEach`): registers
 * `expect(report).toBeClean()` with jest's global `expect`. With `@jest/globals` instead of the
 * globals, call `expect.extend(matchers)` yourself.
 */
import { matchers } from './matchers.js';

interface Extensible {
  extend(matchers: Record<string, unknown>): void;
}

const globalExpect = (globalThis as { expect?: Extensible }).expect;
if (globalExpect === undefined) {
  throw new Error("mockmcp-js/jest: no global expect (import it from a jest setup file, or call expect.extend(matchers))");
}
globalExpect.extend(matchers);

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace jest {
    interface Matchers<R> {
      /** The mockmcp verdict is ok; otherwise the failed expectations and findings are printed. */
      toBeClean(): R;
    }
  }
}

export { matchers };
