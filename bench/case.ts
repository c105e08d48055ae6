// What a bench section is: a typed case that measures and answers its figures (the JSON), the
// blocks its text report prints, and its verdicts for the summary line. bench/report.ts prints.
import type { RedisServer } from './redis-server.js';
import type { Settings } from './settings.js';

/** One cell of a table: numbers are printed as they are, so round or format them first. */
export type Cell = string | number;

/**
 * A ratio against its target; `pass: null` is information only, or (with `ratio: null`) a figure
 * that could not be measured here (NOT RUN). `unit` follows the figure: `x` unless given.
 */
export interface Verdict {
  label: string;
  ratio: number | null;
  unit?: string;
  target: string;
  pass: boolean | null;
}

/** A figure that must reach `min` (null: not measured, so neither PASS nor MISS). */
export const atLeast = (label: string, ratio: number | null, min: number): Verdict => ({
  label,
  ratio,
  target: `>= ${min}x`,
  pass: ratio === null ? null : ratio >= min,
});
/** A figure that must stay within `max` (null: not measured, so neither PASS nor MISS). */
export const atMost = (label: string, ratio: number | null, max: number, unit = 'x'): Verdict => ({
  label,
  ratio,
  unit,
  target: `<= ${max}${unit}`,
  pass: ratio === null ? null : ratio <= max,
});
/** The target of a figure shown for information. */
export const NO_TARGET = 'none';
/** A figure shown beside the verdicts, with no target. */
export const info = (label: string, ratio: number | null): Verdict => ({
  label,
  ratio,
  target: NO_TARGET,
  pass: null,
});

export type Block =
  /** A table: title, header, rows, then one line per verdict, then a blank line. */
  | { kind: 'table'; title: string; header: string[]; rows: Cell[][]; verdicts?: Verdict[] }
  /** Lines printed as they are (a blank line is ''). */
  | { kind: 'lines'; lines: string[] }
  /** A section (or part) that could not run: loud in the text, and on stderr under --json. */
  | { kind: 'notRun'; title: string; reason: string }
  /** Said on stderr under --json only (the text report carries it in its own words). */
  | { kind: 'stderrWhenJson'; message: string };

export interface CaseResult<T> {
  /** The section's figures: `--json` prints them under the case's `key`. */
  data: T;
  blocks: Block[];
  /** Verdict words for the JSON summary, by key (`PASS`, `MISS`, `NOT RUN`). */
  summary: Record<string, string>;
  /** What the summary line says after `(id)`, e.g. `PASS` or `Redis MISS file PASS`. */
  summaryText: string;
}

export interface BenchContext {
  settings: Settings;
  quick: boolean;
  /** The bench's scratch folder, removed at the end. */
  scratch: string;
  /** A scratch tree (its own `.git`, so it is the tree root) and an empty store folder. */
  makeTree(name: string): { tree: string; store: string };
  /** The parent's environment without any AGENT_* setting, plus `extra`. */
  cleanEnv(extra?: Record<string, string>): NodeJS.ProcessEnv;
  /** A prefix for this run's Redis keys. */
  benchPrefix: string;
  /** The redis-server binary (BENCH_REDIS_SERVER). */
  redisBinary: string;
  /** The bench's redis-server, started on first use; `server: null` with the reason it is not there. */
  redis(): Promise<{ server: RedisServer | null; reason: string; announce: Block[] }>;
  /** The folder of the bench's bundles (bench/bundle.mjs writes them). */
  outDir: string;
}

export interface BenchCase<T = unknown> {
  /** The section's letter: `--only a,h` picks by it. */
  id: string;
  /** The key of its figures in the `--json` report. */
  key: string;
  title: string;
  target: string;
  run(ctx: BenchContext): Promise<CaseResult<T>>;
}

export const verdict = (ok: boolean): string => (ok ? 'PASS' : 'MISS');

/** The record of a part that could not run: never a PASS. */
export interface NotRun {
  ran: false;
  reason: string;
  pass: null;
}
export const notRun = (reason: string): NotRun => ({ ran: false, reason, pass: null });
export const status = (section: { ran: boolean; pass: boolean | null }): string =>
  section.ran ? verdict(section.pass === true) : 'NOT RUN';
