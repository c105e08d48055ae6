// The "Latest figures" table of bench/README.md, written by `npm run bench -- --write` from the
// run's own verdicts, between two marker comments (nothing else in the README is touched). A
// section the run left out (`--only`) keeps its previous rows, each naming the run it came from,
// so a partial run never passes off old figures as new ones, nor drops them.
import type { Block, CaseResult, Verdict } from './case.js';
import { NO_TARGET } from './case.js';

export const START =
  '<!-- bench:latest:start (written by `npm run bench -- --write`; edits here are lost) -->';
export const END = '<!-- bench:latest:end -->';

export interface LatestRow {
  /** `(a) cold start: ratio alock / node (median)`: the section's letter first. */
  section: string;
  figure: string;
  target: string;
  /** PASS, MISS, info or NOT RUN. */
  verdict: string;
  /** The run the row comes from (its date). */
  run: string;
}

/** What one `npm run bench -- --write` contributes: `--json` prints it under `latest`. */
export interface LatestRun {
  /** `2026-12-05 14:05 UTC`. */
  date: string;
  /** The bench's machine line: node, platform, cpus. */
  machine: string;
  /** `node -e 0`, median wall ms, measured by the same run. */
  nodeMs: number;
  /** BENCH_QUICK: figures are rough, and the table says so. */
  quick: boolean;
  /** The sections run, in order, with their rows. */
  sections: { id: string; rows: Omit<LatestRow, 'run'>[] }[];
}

function figureOf(v: Verdict): string {
  return v.ratio === null ? '-' : `${Number(v.ratio.toFixed(2))}${v.unit ?? 'x'}`;
}

function verdictOf(v: Verdict): string {
  if (v.ratio === null) return 'NOT RUN';
  if (v.pass === null) return 'info';
  return v.pass ? 'PASS' : 'MISS';
}

/** A section's rows: one per verdict it printed, one per part it could not run, else its summary. */
export function rowsOf(id: string, title: string, result: CaseResult<unknown>): Omit<LatestRow, 'run'>[] {
  const rows: Omit<LatestRow, 'run'>[] = [];
  const add = (label: string, figure: string, target: string, verdict: string) =>
    rows.push({ section: `(${id}) ${title}${label ? `: ${label}` : ''}`, figure, target, verdict });
  const visit = (block: Block) => {
    if (block.kind === 'table')
      for (const v of block.verdicts ?? [])
        add(v.label, figureOf(v), v.target === NO_TARGET ? '' : v.target, verdictOf(v));
    else if (block.kind === 'notRun')
      add(block.title.replace(/^\(\w\)\s*/, ''), '-', '', `NOT RUN: ${block.reason}`);
  };
  result.blocks.forEach(visit);
  if (rows.length === 0)
    add('', result.summaryText, '', result.summaryText === 'figures' ? 'info' : result.summaryText);
  return rows;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The rows of the table between the markers, as written (a row whose first cell starts `(x)`). */
export function parseRows(region: string): LatestRow[] {
  const rows: LatestRow[] = [];
  for (const line of region.split('\n')) {
    if (!line.startsWith('| (')) continue;
    const cells = line
      .slice(1, line.trimEnd().endsWith('|') ? line.trimEnd().length - 1 : undefined)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim().replace(/\\\|/g, '|'));
    const [section = '', figure = '', target = '', verdict = '', run = ''] = cells;
    rows.push({ section, figure, target, verdict, run });
  }
  return rows;
}

const idOf = (row: { section: string }) => /^\((\w)\)/.exec(row.section)?.[1] ?? '';

/** The README with its latest-figures region rewritten for this run. Throws if the markers are gone. */
export function writeLatest(readme: string, run: LatestRun): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start === -1 || end < start)
    throw new Error(`bench --write: bench/README.md has lost its markers (${START} ... ${END})`);
  const ran = new Set(run.sections.map((s) => s.id));
  const kept = parseRows(readme.slice(start, end)).filter((r) => !ran.has(idOf(r)));
  const fresh = run.sections.flatMap((s) => s.rows.map((r) => ({ ...r, run: run.date })));
  // Letters in order; within a section, rows as they were printed.
  const rows = [...kept, ...fresh].sort((a, b) => idOf(a).localeCompare(idOf(b)));
  const letters = run.sections.map((s) => s.id).join(', ');
  const head = [
    `Written by \`npm run bench -- --write\` on ${run.date}${run.quick ? ' (BENCH_QUICK: a smoke run, rough figures)' : ''}, sections ${letters}: ${run.machine}; \`node -e 0\` ${run.nodeMs.toFixed(0)} ms.`,
    'A section that run left out keeps the rows of the run named in its last column. Runs on a shared',
    'machine swing by a fifth from one to the next: the ratios say more than single figures.',
  ];
  const cells = [
    ['section', 'figure', 'target', 'verdict', 'run'],
    ...rows.map((r) => [r.section, r.figure, r.target, r.verdict, r.run].map(cell)),
  ];
  // Padded as the formatter (biome, which checks this file) lays a table out: each column as wide as
  // its widest cell, counted in characters.
  const width = (text: string) => [...text].length;
  const widths = cells[0]!.map((_, i) => Math.max(3, ...cells.map((row) => width(row[i]!))));
  const line = (row: string[]) =>
    `| ${row.map((c, i) => c + ' '.repeat(widths[i]! - width(c))).join(' | ')} |`;
  const table = [line(cells[0]!), line(widths.map((w) => '-'.repeat(w))), ...cells.slice(1).map(line)];
  return `${readme.slice(0, start)}${[START, '', ...head, '', ...table, '', ''].join('\n')}${readme.slice(end)}`;
}
