/**
 * Waiting on the command line: the `--wait[=S]` / `-w S` / `-n` flags, the terminal's live line,
 * and the signals that interrupt a wait (or that `run` forwards to its command).
 */
import { AgentLockError } from '../core/errors.js';
import type { Lock } from '../core/lock.js';
import { age } from '../answers/render.js';

export interface WaitFlags {
  wait?: string | boolean;
  w?: string;
}

/** Seconds to wait: `-n` (or nothing) 0, bare `--wait` for ever, else a number (decimals allowed). */
export function waitSeconds(flags: WaitFlags): number {
  if (flags.wait === false) return 0;
  const raw = flags.w ?? (typeof flags.wait === 'string' ? flags.wait : undefined);
  if (raw === undefined) return flags.wait === true ? Number.POSITIVE_INFINITY : 0;
  if (raw === FOREVER) return Number.POSITIVE_INFINITY;
  const text = raw.trim();
  if (!/^\d+(\.\d+)?$/.test(text) || Number(text) > 366 * 24 * 3600) {
    throw new AgentLockError(
      'E_USAGE',
      `--wait must be seconds, 0 or more, or nothing to wait for ever (got ${JSON.stringify(raw)})`,
      { hint: 'for example --wait=30 or -w 30' },
    );
  }
  return Number(text);
}

/** The spelling a bare `--wait` is rewritten to, so that the next word stays a scope. */
export const FOREVER = 'forever';

/**
 * A bare `--wait` must not swallow the scope after it, but agents write `--wait 30`: a number after
 * `--wait` is its value (a file named `3` is spelled `./3`), any other word stays a scope.
 */
export function rewriteBareWait(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg !== '--wait') out.push(arg);
    else if (SECONDS.test(argv[i + 1] ?? '')) out.push(`--wait=${argv[++i]}`);
    else out.push(`--wait=${FOREVER}`);
  }
  return out;
}

const SECONDS = /^\d+(\.\d+)?$/;

/**
 * On a terminal, one line on stderr that says who holds the scope, why, and how long we have
 * waited, redrawn every second and erased when the wait ends. Elsewhere it prints nothing.
 */
export class LiveLine {
  private conflicts: Lock[] = [];
  private readonly started = Date.now();
  private timer: NodeJS.Timeout | null = null;
  private drawn = false;

  constructor(
    private readonly write: (text: string) => void,
    private readonly enabled: boolean,
    private readonly asked: string,
  ) {}

  update = (conflicts: Lock[]): void => {
    if (!this.enabled) return;
    this.conflicts = conflicts;
    this.draw();
    if (this.timer === null) {
      this.timer = setInterval(() => this.draw(), 1000);
      this.timer.unref();
    }
  };

  private draw(): void {
    const now = Date.now();
    const first = this.conflicts[0];
    const who = first
      ? `${first.status === 'waiting' ? 'queued ahead: ' : 'held by '}${first.agent_id}${first.intent ? ` ("${first.intent}")` : ''}${this.conflicts.length > 1 ? ` and ${this.conflicts.length - 1} more` : ''}`
      : 'held';
    const line = `waiting ${age(now - this.started)} for ${this.asked}: ${who}`;
    const width = process.stderr.columns ?? 100;
    this.write(`\r\u001b[2K${line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line}`);
    this.drawn = true;
  }

  done(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.drawn) this.write('\r\u001b[2K');
    this.drawn = false;
  }
}
