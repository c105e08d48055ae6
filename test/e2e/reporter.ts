/**
 * The e2e suite's report: one line per harness and case, the cost lines the suites print, and
 * `N passed, M failed` as the very last line.
 */
import type { Reporter, TestCase, TestModule } from 'vitest/node';

type UserConsoleLog = Parameters<NonNullable<Reporter['onUserConsoleLog']>>[0];

export default class E2eReporter implements Reporter {
  private passed = 0;
  private failed = 0;
  private skipped = 0;
  private known = 0;
  private readonly costs: string[] = [];

  onUserConsoleLog(log: UserConsoleLog): void {
    for (const line of log.content.split('\n')) {
      if (line.startsWith('COST ')) this.costs.push(line.slice(5));
      else if (line.trim() !== '') process.stdout.write(`${line}\n`);
    }
  }

  onTestCaseResult(testCase: TestCase): void {
    const result = testCase.result();
    const suite = testCase.parent.type === 'suite' ? testCase.parent.name : testCase.module.moduleId;
    // `it.fails` cases (a harness gap written down) are counted on their own, never as passes.
    const known = testCase.name.includes('KNOWN FAILING');
    const word =
      known && result.state === 'passed'
        ? 'KNOWN-FAIL'
        : result.state === 'passed'
          ? 'PASS'
          : result.state === 'failed'
            ? 'FAIL'
            : 'SKIP';
    if (known && result.state === 'passed') this.known++;
    else if (result.state === 'passed') this.passed++;
    else if (result.state === 'failed') this.failed++;
    else this.skipped++;
    // Each case's time: a harness session is seconds to a minute, and a slow one is worth seeing.
    const ms = testCase.diagnostic()?.duration;
    const took = ms === undefined || result.state === 'skipped' ? '' : ` (${(ms / 1000).toFixed(1)} s)`;
    process.stdout.write(`${word}  ${suite} :: ${testCase.name}${took}\n`);
    if (result.state === 'failed') {
      for (const error of result.errors ?? []) {
        const text = (error.message ?? String(error)).split('\n').slice(0, 40).join('\n      ');
        process.stdout.write(`      ${text}\n`);
      }
    }
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandled: ReadonlyArray<unknown>): void {
    for (const m of modules) {
      // A failed beforeAll leaves its cases skipped: the suite's own error is a failure.
      const errors = [
        ...m.errors().map((e) => [m.moduleId, e] as const),
        ...[...m.children.allSuites()].flatMap((s) => s.errors().map((e) => [s.name, e] as const)),
      ];
      for (const [where, error] of errors) {
        this.failed++;
        process.stdout.write(`FAIL  ${where}: ${error.message}\n`);
      }
    }
    for (const error of unhandled) {
      this.failed++;
      process.stdout.write(`FAIL  unhandled: ${String((error as { message?: string }).message ?? error)}\n`);
    }
    if (this.costs.length > 0) {
      process.stdout.write(
        '\nWhole-session cost per harness (same scripted free edit, with and without the hook):\n',
      );
      for (const c of this.costs) process.stdout.write(`  ${c}\n`);
    }
    const notes = [
      this.known > 0 ? `${this.known} known failing` : '',
      this.skipped > 0 ? `${this.skipped} SKIPPED` : '',
    ].filter((n) => n !== '');
    const tail = notes.length > 0 ? ` (${notes.join(', ')})` : '';
    process.stdout.write(`\n${this.passed} passed, ${this.failed} failed${tail}\n`);
  }
}
