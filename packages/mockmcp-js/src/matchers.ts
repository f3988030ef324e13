/**
 * `toBeClean`: a report with no failed expectation and no error-level finding, and, when not,
 * a message that lists each failed expectation (why it failed) and each finding (error or
 * warning) so the test's output says what the client did wrong. The matcher's shape is the one
 * vitest's and jest's `expect.extend` share.
 */
import type { Report } from './generated.js';

export interface MatcherResult {
  pass: boolean;
  message: () => string;
}

/** The readable lines of what went wrong in a report (empty when it is clean). */
export function explain(report: Report): string[] {
  const lines: string[] = [];
  for (const v of report.expectations) {
    if (v.verdict === 'failed') lines.push(`failed expectation ${v.expectation} (${v.request}, wanted ${v.wanted}): ${v.why ?? ''}`);
  }
  for (const f of report.findings) {
    if (f.level !== 'note') lines.push(`${f.level} ${f.check}${f.pid === undefined ? '' : ` (pid ${f.pid})`}: ${f.text}`);
  }
  return lines;
}

function isReport(value: unknown): value is Report {
  return typeof value === 'object' && value !== null && 'ok' in value && 'expectations' in value && 'findings' in value;
}

export const matchers = {
  toBeClean(received: unknown): MatcherResult {
    if (!isReport(received)) {
      return { pass: false, message: () => 'expected a mockmcp report (await mock.verdict()), got ' + JSON.stringify(received) };
    }
    const where = received.session ?? `process ${received.pid ?? '?'}`;
    const problems = explain(received);
    return {
      pass: received.ok,
      message: received.ok
        ? () => `expected the verdict of ${where} not to be clean, but it is`
        : () => [`expected the verdict of ${where} to be clean:`, ...problems.map((line) => `  - ${line}`)].join('\n'),
    };
  },
};
