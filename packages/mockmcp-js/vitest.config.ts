import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (file: string) => fileURLToPath(new URL(`./src/${file}`, import.meta.url));

// The tests and the docs' examples import the package by its name, as a user would; here the
// name resolves to the sources (tsconfig.json's paths say the same to tsc).
export default defineConfig({
  resolve: {
    alias: [
      { find: /^mockmcp-js\/vitest$/, replacement: src('vitest.ts') },
      { find: /^mockmcp-js\/jest$/, replacement: src('jest.ts') },
      { find: /^mockmcp-js$/, replacement: src('index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'threads',
    maxWorkers: 2,
    // One module graph per worker, not one per test file: the files share no state the tests
    // rely on (each spawns its own mock), and a fresh graph per file was a third of the run's CPU.
    isolate: false,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
