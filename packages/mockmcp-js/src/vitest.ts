/** `import 'mockmcp-js/vitest'`: registers `expect(report).toBeClean()` with vitest, types included. */
import { expect } from 'vitest';
import { matchers } from './matchers.js';

expect.extend(matchers);

declare module 'vitest' {
  interface Matchers<T = any> {
    /** The mockmcp verdict is ok; otherwise the failed expectations and findings are printed. */
    toBeClean(): T;
  }
}

export { matchers };
