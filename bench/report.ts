// The bench's report: every case's blocks as text tables, or (--json) one JSON object of every
// case's figures under its key, with the machine, the settings, the targets and the summary.
import type { Block, Cell, Verdict } from './case.js';
import { verdict } from './case.js';

/** One verdict as a line of the text report: the figure, its target, and PASS, MISS, (info) or NOT RUN. */
export function verdictLine({ label, ratio, unit = 'x', target, pass }: Verdict): string {
  const figure = ratio === null ? '-' : `${ratio.toFixed(2)}${unit}`;
  const word = ratio === null ? 'NOT RUN' : pass === null ? '(info)' : verdict(pass);
  return `  ${label}: ${figure}   target ${target}   ${word}`;
}

export class Report {
  constructor(readonly asJson: boolean) {}

  /** One line of the text report (nothing under --json). */
  log(line = ''): void {
    if (!this.asJson) process.stdout.write(`${line}\n`);
  }

  table(title: string, header: string[], rows: Cell[][], verdicts: Verdict[] = []): void {
    const all = [header, ...rows].map((row) => row.map(String));
    const widths = header.map((_, i) => Math.max(...all.map((row) => row[i]!.length)));
    const line = (row: string[]) =>
      row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
    this.log(title);
    this.log(`  ${line(all[0]!)}`);
    this.log(`  ${widths.map((w) => '-'.repeat(w)).join('  ')}`);
    for (const row of all.slice(1)) this.log(`  ${line(row)}`);
    for (const v of verdicts) this.log(verdictLine(v));
    this.log();
  }

  notRun(title: string, reason: string): void {
    if (this.asJson) process.stderr.write(`bench: ${title.split(' ')[0]} NOT RUN: ${reason}\n`);
    this.log(title);
    this.log('  !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!');
    this.log(`  !!! NOT RUN: ${reason}`);
    this.log('  !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!');
    this.log();
  }

  blocks(blocks: readonly Block[]): void {
    for (const block of blocks) {
      if (block.kind === 'table') this.table(block.title, block.header, block.rows, block.verdicts);
      else if (block.kind === 'lines') for (const line of block.lines) this.log(line);
      else if (block.kind === 'notRun') this.notRun(block.title, block.reason);
      else if (this.asJson) process.stderr.write(`${block.message}\n`);
    }
  }

  /** The --json report: one object, printed at the end. */
  json(report: Record<string, unknown>): void {
    if (this.asJson) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  }
}
