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
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
