/**
 * `npm run bench -- --write`'s table writer, on a result saved from a real run
 * (`BENCH_QUICK=1 npm run -s bench -- --only a --write --json`, its `latest`) and on the README as
 * it is in the repository (read, never written). No bench runs here.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CaseResult } from '../../bench/case.js';
import { END, type LatestRun, parseRows, rowsOf, START, writeLatest } from '../../bench/latest-table.js';

const root = path.resolve(import.meta.dirname, '../..');
const readme = readFileSync(path.join(root, 'bench/README.md'), 'utf8');
const saved = (
  JSON.parse(readFileSync(path.join(import.meta.dirname, 'saved-run.json'), 'utf8')) as {
    latest: LatestRun;
  }
).latest;

const region = (text: string) => text.slice(text.indexOf(START), text.indexOf(END));

describe('bench --write', () => {
  it('writes the run’s rows with its date, machine line and node -e 0, and keeps the sections it left out', () => {
    const before = parseRows(region(readme));
    expect(before.some((r) => r.section.startsWith('(a)'))).toBe(true);
    expect(before.some((r) => r.section.startsWith('(k)'))).toBe(true);

    const written = writeLatest(readme, saved);
    const rows = parseRows(region(written));
    // (a) is the run's, and only the run's: the hand-written (a) row is gone.
    expect(rows.filter((r) => r.section.startsWith('(a)'))).toEqual([
      {
        section: '(a) cold start: ratio alock / node (median)',
        figure: '1.47x',
        target: '<= 1.5x',
        verdict: 'PASS',
        run: '2026-12-05 12:19 UTC',
      },
    ]);
    // Every other section keeps its rows as they were, with the run they came from.
    expect(rows.filter((r) => !r.section.startsWith('(a)'))).toEqual(
      before.filter((r) => !r.section.startsWith('(a)')),
    );
    expect(rows.map((r) => r.section[1])).toEqual([...rows.map((r) => r.section[1])].sort());
    const head = region(written);
    expect(head).toContain('on 2026-12-05 12:19 UTC (BENCH_QUICK: a smoke run, rough figures), sections a:');
    expect(head).toContain('node v20.20.2, linux 6.18.44-fc-v1272 x64, 2 cpus (AMD EPYC)');
    expect(head).toContain('`node -e 0` 240 ms');
    // Outside the markers, nothing moves.
    expect(written.slice(0, written.indexOf(START))).toBe(readme.slice(0, readme.indexOf(START)));
    expect(written.slice(written.indexOf(END))).toBe(readme.slice(readme.indexOf(END)));
    // Writing the same run again changes nothing.
    expect(writeLatest(written, saved)).toBe(written);
  });

  it('lays the table out as the formatter that checks bench/README.md does', () => {
    const written = writeLatest(readme, { ...saved, quick: false });
    const biome = path.join(root, 'node_modules/.bin/biome');
    const formatted = spawnSync(biome, ['format', '--stdin-file-path=bench/README.md'], {
      cwd: root,
      input: written,
      encoding: 'utf8',
    });
    expect(formatted.status, formatted.stderr).toBe(0);
    expect(formatted.stdout).toBe(written);
  });

  it('makes one row per verdict, says NOT RUN with the reason, and falls back to the summary', () => {
    const result: CaseResult<unknown> = {
      data: null,
      summary: {},
      summaryText: 'Redis MISS file PASS',
      blocks: [
        {
          kind: 'table',
          title: '(f) hand-off',
          header: [],
          rows: [],
          verdicts: [
            { label: 'p99 | file', ratio: 5.4, unit: ' ms', target: '<= 5 ms', pass: false },
            { label: 'worker CPU', ratio: 2.951, target: 'none', pass: null },
            { label: 'whole round', ratio: 1.2, target: '<= 1.25x', pass: true },
          ],
        },
        { kind: 'notRun', title: '(f) hand-off, Redis', reason: 'redis-server is not installed' },
      ],
    };
    expect(rowsOf('f', 'hand-off', result)).toEqual([
      { section: '(f) hand-off: p99 | file', figure: '5.4 ms', target: '<= 5 ms', verdict: 'MISS' },
      { section: '(f) hand-off: worker CPU', figure: '2.95x', target: '', verdict: 'info' },
      { section: '(f) hand-off: whole round', figure: '1.2x', target: '<= 1.25x', verdict: 'PASS' },
      {
        section: '(f) hand-off: hand-off, Redis',
        figure: '-',
        target: '',
        verdict: 'NOT RUN: redis-server is not installed',
      },
    ]);
    expect(rowsOf('i', 'events', { ...result, blocks: [], summaryText: 'figures' })).toEqual([
      { section: '(i) events', figure: 'figures', target: '', verdict: 'info' },
    ]);
    // A | in a cell survives the round trip through the table.
    const run: LatestRun = { ...saved, sections: [{ id: 'f', rows: rowsOf('f', 'hand-off', result) }] };
    expect(
      parseRows(region(writeLatest(readme, run))).find((r) => r.section.startsWith('(f)'))?.section,
    ).toBe('(f) hand-off: p99 | file');
  });

  it('refuses a README whose markers are gone, rather than guess where the table goes', () => {
    expect(() => writeLatest(readme.replace(START, ''), saved)).toThrow(/lost its markers/);
  });
});
