/**
 * What a command runs with: the io, the global flags, the store (opened on first use) and the
 * caller's identity, and the wording helpers every command's answer is made of.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Answer } from '../answers/answer.js';
import type { CliContext } from '../answers/cli-context.js';
import type { CommandName, DecidedStatus } from '../answers/contract.js';
import { claimRefusal, timeoutMessage } from '../answers/messages.js';
import { answerOf } from '../answers/outcome.js';
import { lockLines, paint, quoteArg, STATUS_WORD, type Style } from '../answers/render.js';
import type { Outcome } from '../core/decide.js';
import { AgentLockError } from '../core/errors.js';
import { type Identity, resolveIdentity } from '../core/identity.js';
import { type Lock, UNKNOWN_HOLDER } from '../core/lock.js';
import { type PathScope, scopeFromPattern } from '../core/scope.js';
import { ancestorChain, hostName } from '../host/process.js';
import { type Locks, openLocks } from '../locks.js';
import type { CliCommand } from './command.js';
import { signalExitCode } from '../answers/interruption.js';

declare const __VERSION__: string;
export const VERSION = typeof __VERSION__ === 'string' ? __VERSION__ : '0.0.0-dev';

export interface CliIo {
  /** Reads all of standard input (hooks get their payload there). */
  readonly stdin?: () => Promise<string>;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Colour and live lines only on a terminal. */
  readonly isTTY?: boolean;
  /** The name the user typed (alock or agent-lock). */
  readonly programName?: string;
  /** The process above the CLI: the holder is chosen from here upward. Default: process.ppid. */
  readonly holderPid?: number;
  /** The live line of a wait is drawn only when stderr is a terminal. */
  readonly stderrIsTTY?: boolean;
  /**
   * Delivers SIGINT, SIGTERM and SIGHUP to a command that can stop cleanly (a wait, `run`) while it
   * is subscribed; without subscribers bin/ exits as before. Returns the unsubscribe function.
   */
  readonly onSignal?: (handler: (signal: NodeJS.Signals) => void) => () => void;
  /**
   * Told the exit code once the answer is written, before the store is closed: from then on bin/
   * ends the process with that code on a signal, so that nothing after the answer can change it.
   */
  readonly answered?: (exitCode: number) => void;
}

export interface GlobalOptions {
  dir?: string;
  json?: boolean;
  backend?: string;
}

export class Cli implements CliContext {
  private locks: Locks | null = null;
  /** `run`: the command and its arguments, everything after `--`. */
  passthrough: string[] | null = null;
  readonly style: Style;
  readonly name: string;
  readonly now = Date.now();

  constructor(
    readonly io: CliIo,
    readonly globals: () => GlobalOptions,
    /** Every command of the program (`alock contract` prints them). */
    readonly commands: readonly CliCommand[] = [],
  ) {
    this.style = { color: io.isTTY === true && !io.env.NO_COLOR };
    this.name = io.programName ?? 'alock';
  }

  async open(
    extra: { redisUrl?: string; redisPrefix?: string; backend?: 'redis'; leaveUnreachableRedis?: true } = {},
  ): Promise<Locks> {
    if (this.locks) return this.locks;
    const g = this.globals();
    if (g.backend !== undefined && g.backend !== 'file' && g.backend !== 'redis') {
      throw new AgentLockError(
        'E_USAGE',
        `--backend must be file or redis (got ${JSON.stringify(g.backend)})`,
        { hint: 'pass --backend file or --backend redis' },
      );
    }
    const env = this.io.env;
    const identity = this.identity();
    // `--dir ''` (an unset variable in a script) is no folder: never quietly the current one.
    if (g.dir !== undefined && g.dir.trim() === '')
      throw new AgentLockError('E_USAGE', '--dir is empty', { hint: 'pass a folder inside the tree' });
    const dir = path.resolve(this.io.cwd, g.dir ?? '.');
    if (g.dir !== undefined && !isDirectory(dir)) {
      throw new AgentLockError('E_USAGE', `--dir ${g.dir} is not an existing folder`, {
        hint: 'pass a folder inside the tree',
      });
    }
    this.locks = await openLocks({
      dir,
      env,
      identity,
      ...(g.backend ? { backend: g.backend as 'file' | 'redis' } : {}),
      ...extra,
    });
    return this.locks;
  }

  private who: Identity | null = null;
  identity(): Identity {
    this.who ??= resolveIdentity(
      this.io.env,
      ancestorChain(this.io.holderPid ?? (process.ppid > 0 ? process.ppid : process.pid)),
      hostName(),
    );
    return this.who;
  }

  private readonly atClose: (() => void)[] = [];
  /** Runs `step` once the answer is out and the store closed (the last thing runCli does). */
  afterClose(step: () => void): void {
    this.atClose.push(step);
  }

  async close(): Promise<void> {
    try {
      await this.locks?.close();
    } finally {
      for (const step of this.atClose.splice(0)) step();
    }
  }

  /** A command to suggest: with the --dir it was run with, as that decides the tree and the store. */
  cmd(words: string): string {
    const dir = this.globals().dir;
    return `${this.name} ${dir === undefined ? '' : `--dir ${quoteArg(dir)} `}${words}`;
  }

  /**
   * A lock's scope as an argument for a suggested command. Scopes are stored relative to the tree's
   * root but read relative to the current folder (or --dir): from `src/`, the lock `src/a.ts` is
   * `a.ts` and `docs/**` is `../docs/**`.
   */
  scopeArg(lock: Lock): string {
    const locks = this.locks;
    if (lock.kind === 'resource' || locks === null) return quoteArg(lock.scope);
    let here: string;
    try {
      here = realpathSync(path.resolve(this.io.cwd, this.globals().dir ?? '.'));
    } catch {
      return quoteArg(lock.scope);
    }
    if (here === locks.tree.root) return quoteArg(lock.scope);
    // Only the fixed part is a path to move; the wildcard segments after it stay as they are.
    const { fixed } = scopeFromPattern(lock.scope, 'path') as PathScope;
    const local = path
      .relative(here, path.join(locks.tree.root, ...fixed))
      .split(path.sep)
      .join('/');
    const rest = lock.scope.split('/').slice(fixed.length);
    return quoteArg([local, ...rest].filter(Boolean).join('/') || '.');
  }

  scopes(locks: Lock[]): string {
    return locks.map((l) => l.scope).join(' ');
  }

  answer<C extends CommandName>(
    command: C,
    outcome: Outcome<DecidedStatus<C>>,
    text: string[],
    message: string,
  ): Answer {
    return answerOf(command, outcome, message, text);
  }

  head(status: string, rest: string): string {
    const word = STATUS_WORD[status] ?? status.toUpperCase();
    const ok = [
      'acquired',
      'already_mine',
      'released',
      'renewed',
      'free',
      'mine',
      'noted',
      'resumed',
      'broken',
      'listed',
      'clear',
      'asked',
      'replied',
    ];
    return `${paint(this.style, ok.includes(status) ? 'green' : 'red', word)} ${rest}`;
  }

  lines(locks: Lock[]): string[] {
    return locks.flatMap((lock) => lockLines(lock, this.now, this.style));
  }

  /**
   * The first conflicts of a refusal and how many more: `acquire 'f/**'` over 10,000 locks printed
   * 8,002 lines that no person or agent reads. `--json` carries them all.
   */
  conflictLines(conflicts: Lock[]): string[] {
    const shown = this.lines(conflicts.slice(0, SHOWN_CONFLICTS));
    const more = conflicts.length - SHOWN_CONFLICTS;
    if (more <= 0) return shown;
    return [...shown, `  ... and ${more} more ${more === 1 ? 'lock' : 'locks'} (--json lists them all)`];
  }

  /** The holders a refusal names: the first few, then how many more. */
  holders(conflicts: Lock[]): string[] {
    const everyone = [...new Set(conflicts.map((l) => l.agent_id))].filter((id) => id !== UNKNOWN_HOLDER);
    return everyone.length > SHOWN_PEOPLE
      ? [...everyone.slice(0, SHOWN_PEOPLE), `${everyone.length - SHOWN_PEOPLE} more agents`]
      : everyone;
  }

  held<C extends CommandName>(command: C, outcome: Outcome<DecidedStatus<C>>, asked: string[]): Answer {
    const message = claimRefusal(outcome, asked.join(' ')) ?? '';
    const people = this.holders(outcome.conflicts);
    const unreadable = outcome.conflicts.filter((l) => l.agent_id === UNKNOWN_HOLDER);
    const next =
      unreadable.length > 0
        ? `next: ${this.cmd('repair')} moves the unreadable records aside (kept), or ${this.cmd(`break --id ${unreadable.map((l) => l.id).join(' ')}`)} once you know nobody holds them`
        : `next: work elsewhere, check again later (${this.cmd(`check ${asked.join(' ')}`)}), or ask ${people.join(', ')} with: ${this.cmd(`ask ${asked[0] ?? ''} "..."`)}`;
    return this.answer(
      command,
      outcome,
      [this.head('held', asked.join(' ')), ...this.conflictLines(outcome.conflicts), next],
      message,
    );
  }
}

/** Conflicts a text refusal lists before counting the rest, and holders its next line names. */
const SHOWN_CONFLICTS = 10;
const SHOWN_PEOPLE = 5;

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** The answer to a wait that a signal ended: nothing was taken, and the exit code says which signal. */
export function abortedAnswer(cli: Cli, command: string, asked: string, signal: NodeJS.Signals): Answer {
  return {
    command,
    status: 'aborted',
    exitCode: signalExitCode(signal),
    locks: [],
    conflicts: [],
    message: `stopped waiting for ${asked} (${signal}): nothing was taken`,
    text: [
      cli.head('aborted', `${asked}: stopped waiting (${signal}); nothing was taken, no place in line left`),
    ],
  };
}

export function timeoutAnswer<C extends CommandName>(
  cli: Cli,
  command: C,
  outcome: Outcome<DecidedStatus<C>>,
  asked: string[],
  waited: number,
): Answer {
  const holders = cli.holders(outcome.conflicts).join(', ');
  return cli.answer(
    command,
    outcome,
    [
      cli.head('timeout', `${asked.join(' ')}: still held by ${holders} after waiting ${waited}s`),
      ...cli.conflictLines(outcome.conflicts),
      `next: wait longer (--wait=SECONDS, or --wait for ever), work elsewhere, or ask ${holders} with: ${cli.cmd(`ask ${asked[0] ?? ''} "..."`)}`,
    ],
    timeoutMessage(outcome, asked.join(' '), waited),
  );
}

/** An answer that is no decision (whoami, version, ...): exit 0, no locks. */
export function plainAnswer<C extends CommandName>(
  command: C,
  status: DecidedStatus<C>,
  text: string[],
  extra: Record<string, unknown> = {},
  message = '',
): Answer {
  return { command, status, exitCode: 0, locks: [], conflicts: [], message, text, extra };
}

/** Which store an answer speaks of: a file folder, or a Redis server and the namespace on it. */
export function storeOf(locks: Locks): { backend: string; location: string; namespace: string | null } {
  return {
    backend: locks.store.kind,
    location: locks.store.location,
    namespace: locks.store.namespace ?? null,
  };
}

export function storeName(locks: Locks): string {
  const ns = locks.store.namespace;
  return `${locks.store.kind} store ${locks.store.location}${ns === undefined ? '' : ` namespace ${ns}`}`;
}

/** The parent came from the calling process, not from AGENT_PARENT_ID. */
export function parentInferred(who: Identity): boolean {
  return who.parentSource === 'without AGENT_ID' && who.parentAgentId !== null;
}

/** The caller as the envelope names it, or null when the identity itself is what failed. */
export function agentOf(cli: Cli): { id: string; parentId: string | null; parentInferred: boolean } | null {
  try {
    const who = cli.identity();
    return { id: who.agentId, parentId: who.parentAgentId, parentInferred: parentInferred(who) };
  } catch {
    return null;
  }
}
