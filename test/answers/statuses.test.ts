/**
 * Every status a command answers is in one typed table (answers/contract.ts) with its exit code.
 * The `@ts-expect-error` lines are checked by `tsc` (npm run typecheck covers test/): if a status
 * outside the table ever compiled, the directive itself would fail the typecheck.
 */
import { describe, expect, it } from 'vitest';
import type { Answer } from '../../src/answers/answer.js';
import { ANSWERS, type AnyStatus, exitCodeFor, type StatusOf } from '../../src/answers/contract.js';
import { contractDocument } from '../../src/cli/contract.js';

const blank = { command: 'acquire', exitCode: 0, locks: [], conflicts: [], message: '', text: [] };

describe('the status table', () => {
  it('makes a status outside the table a compile error', () => {
    // @ts-expect-error no command answers 'bogus'
    const bogus: Answer = { ...blank, status: 'bogus' };
    // @ts-expect-error acquire never answers 'listed'
    expect(() => exitCodeFor('acquire', 'listed')).toThrow(/acquire has no answer "listed"/);
    // @ts-expect-error run's 'failed' takes its exit code from the program (126, 127), not from here
    expect(() => exitCodeFor('run', 'failed')).toThrow(/run has no answer "failed"/);
    // @ts-expect-error an unknown command has no answers
    expect(() => exitCodeFor('frobnicate', 'held')).toThrow();
    const aborted: StatusOf<'acquire'> = 'aborted';
    const failed: AnyStatus = 'failed';
    expect([bogus.status, aborted, failed]).toEqual(['bogus', 'aborted', 'failed']);
  });

  it('never falls back to 0: ok answers exit 0, fail answers 1, anything else throws', () => {
    expect(exitCodeFor('acquire', 'acquired')).toBe(0);
    expect(exitCodeFor('acquire', 'held')).toBe(1);
    expect(exitCodeFor('check', 'other_worktree')).toBe(1);
    expect(() => exitCodeFor('check', 'aborted' as never)).toThrow(/check has no answer "aborted"/);
  });

  it('puts the answers with other exit codes (aborted, failed) in the contract, with their codes', () => {
    const doc = contractDocument('') as {
      commands: {
        name: string;
        answers: { exit_0: string[]; exit_1: string[]; other?: Record<string, string> };
      }[];
    };
    const answers = (name: string) => doc.commands.find((c) => c.name === name)?.answers;
    expect(answers('acquire')?.other?.aborted).toMatch(/130 on SIGINT/);
    expect(answers('run')?.other?.failed).toMatch(/126 .*127/);
    expect(answers('run')?.other?.aborted).toMatch(/143 on SIGTERM/);
    for (const name of ['log', 'watch', 'ui'])
      expect(Object.keys(answers(name)?.other ?? {})).toEqual(['aborted']);
    // No command has nothing to answer (`ui` used to show an empty row).
    const empty = doc.commands.filter(
      (c) =>
        c.answers.exit_0.length + c.answers.exit_1.length + Object.keys(c.answers.other ?? {}).length === 0,
    );
    expect(empty).toEqual([]);
    expect(Object.keys(ANSWERS).sort()).toEqual(doc.commands.map((c) => c.name).sort());
  });
});
