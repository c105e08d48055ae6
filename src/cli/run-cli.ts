/**
 * The command line: parses arguments, runs one verb through the library, and turns its outcome into
 * words, one JSON object and an exit code. `runCli` takes its whole world as `io` and returns the exit
 * code, so every command is testable in-process; only bin/ calls process.exit.
 */
import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import type { Outcome } from '../core/decide.js';
import { AgentLockError, asAgentLockError, isAgentLockError } from '../core/errors.js';
import { type Identity, resolveIdentity } from '../core/identity.js';
import { parseSeconds } from '../core/config.js';
import { type Lock, UNKNOWN_HOLDER } from '../core/lock.js';
import { type PathScope, scopeFromPattern } from '../core/scope.js';
import { ancestorChain, hostName } from '../host/process.js';
import { type Locks, openLocks } from '../locks.js';
import type { Answer, CliContext } from '../answers/answer.js';
import { completionScript } from './completion.js';
import { conventionalArgv } from './conventions.js';
import { logCommand } from './log.js';
import { envelope, errorAnswer } from '../answers/envelope.js';
import { explainCommand } from './explain.js';
import { COMMANDS, contractDocument, exitCodeFor, GLOBAL_FLAGS } from '../answers/contract.js';
import { lockLines, paint, quoteArg, STATUS_WORD, type Style } from '../answers/render.js';
import { runCommand } from './run-command.js';
import { byWorktree, otherWorktreeAnswer, warningLines } from './worktrees.js';
import { interruption, signalExitCode } from '../answers/interruption.js';
import { LiveLine, rewriteBareWait, type WaitFlags, waitSeconds } from './waiting.js';

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

interface GlobalOptions {
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
  ) {
    this.style = { color: io.isTTY === true && !io.env.NO_COLOR };
    this.name = io.programName ?? 'alock';
  }

  async open(extra: { redisUrl?: string; redisPrefix?: string; backend?: 'redis' } = {}): Promise<Locks> {
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

  answer(command: string, outcome: Outcome<string>, text: string[], message: string): Answer {
    return {
      command,
      status: outcome.status,
      exitCode: exitCodeFor(command, outcome.status),
      locks: outcome.locks,
      conflicts: outcome.conflicts,
      message,
      text,
      ...(outcome.warnings ? { warnings: outcome.warnings } : {}),
    };
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
    ];
    return `${paint(this.style, ok.includes(status) ? 'green' : 'red', word)} ${rest}`;
  }

  lines(locks: Lock[]): string[] {
    return locks.flatMap((lock) => lockLines(lock, this.now, this.style));
  }

  held(command: string, outcome: Outcome<string>, asked: string[]): Answer {
    const holders = [...new Set(outcome.conflicts.map((l) => l.agent_id))].join(', ');
    const message = `${asked.join(' ')} held by ${holders}`;
    const people = [...new Set(outcome.conflicts.map((l) => l.agent_id))].filter(
      (id) => id !== UNKNOWN_HOLDER,
    );
    const unreadable = outcome.conflicts.filter((l) => l.agent_id === UNKNOWN_HOLDER);
    const next =
      unreadable.length > 0
        ? `next: ${this.cmd('repair')} moves the unreadable records aside (kept), or ${this.cmd(`break --id ${unreadable.map((l) => l.id).join(' ')}`)} once you know nobody holds them`
        : `next: work elsewhere, ask ${people.join(', ')}, or check again later (${this.cmd(`check ${asked.join(' ')}`)})`;
    return this.answer(
      command,
      outcome,
      [this.head('held', asked.join(' ')), ...this.lines(outcome.conflicts), next],
      message,
    );
  }
}

function isDirectory(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
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

export function timeoutAnswer(
  cli: Cli,
  command: string,
  outcome: Outcome<string>,
  asked: string[],
  waited: number,
): Answer {
  const holders = [...new Set(outcome.conflicts.map((l) => l.agent_id))].join(', ');
  return cli.answer(
    command,
    outcome,
    [
      cli.head('timeout', `${asked.join(' ')}: still held by ${holders} after waiting ${waited}s`),
      ...cli.lines(outcome.conflicts),
      `next: wait longer (--wait=SECONDS, or --wait for ever), work elsewhere, or ask ${holders}`,
    ],
    `timeout: ${asked.join(' ')} held by ${holders} after ${waited}s`,
  );
}

async function acquire(
  cli: Cli,
  scopes: string[],
  opts: {
    message?: string;
    ttl?: string;
    shared?: boolean;
    enforce?: boolean;
    force?: boolean;
  } & WaitFlags,
) {
  if (opts.force && !opts.enforce)
    throw new AgentLockError('E_USAGE', '--force goes with --enforce', {
      hint: 'add --enforce, or drop --force',
    });
  const ttl = opts.ttl === undefined ? undefined : parseSeconds(opts.ttl, '--ttl');
  const wait = waitSeconds(opts);
  const locks = await cli.open();
  const asked = scopes.map(quoteArg);
  const stop = wait > 0 ? interruption(cli.io.onSignal) : null;
  // Subscribed until the store is closed, after bin/ has been told the answer (io.answered): a
  // signal from the wait's end on is noted, and no instant falls back to its default action.
  if (stop !== null) cli.afterClose(() => stop.dispose());
  const live = new LiveLine(cli.io.stderr, wait > 0 && cli.io.stderrIsTTY === true, asked.join(' '));
  let outcome: Awaited<ReturnType<Locks['acquire']>>;
  try {
    outcome = await locks.acquire(scopes, {
      ...(opts.message !== undefined ? { intent: opts.message } : {}),
      ...(ttl !== undefined ? { ttl } : {}),
      shared: opts.shared === true,
      enforce: opts.enforce === true,
      force: opts.force === true,
      ...(stop ? { wait, signal: stop.signal, onWait: live.update } : {}),
    });
  } catch (error) {
    if (stop?.received) return abortedAnswer(cli, 'acquire', asked.join(' '), stop.received);
    throw error;
  } finally {
    live.done();
  }
  if (stop !== null) {
    if (stop.received !== null) {
      // The signal came as the wait ended, with the lock already handed over: its taker asked to
      // stop, so what this call was granted goes back (as the library does when an abort races a
      // grant), each lock by its own token, and the answer is ABORTED. Locks the caller held before
      // (covering some scopes) stay. If giving back fails, the truth is that it is held: ACQUIRED.
      const granted = outcome.status === 'acquired' ? outcome.locks : [];
      let back = true;
      for (const lock of granted) {
        const scope = lock.kind === 'resource' ? lock.scope : path.join(locks.tree.root, lock.scope);
        const released = await locks.release(scope, { token: lock.token! }).catch(() => null);
        back &&= released?.status === 'released';
      }
      if (back) return abortedAnswer(cli, 'acquire', asked.join(' '), stop.received);
    }
    // The answer is decided: a signal from now until it is printed is noted and ignored, and once it
    // is printed bin/ ends the process with its code. Dying in between would keep the lock while
    // the caller sees 143 and thinks it has nothing.
  }
  switch (outcome.status) {
    case 'timeout':
      return timeoutAnswer(cli, 'acquire', outcome, asked, wait);
    case 'acquired': {
      const text = [cli.head('acquired', cli.scopes(outcome.locks)), ...cli.lines(outcome.locks)];
      for (const lock of outcome.locks) text.push(`  token ${lock.token} (proves ownership: --token)`);
      const frozen = outcome.locks.reduce((n, l) => n + l.frozen_paths.length, 0);
      if (opts.enforce)
        text.push(`  froze ${frozen} ${frozen === 1 ? 'file' : 'files'} read-only until release`);
      const scopeArgs = outcome.locks.map((l) => cli.scopeArg(l)).join(' ');
      text.push(
        `next: do the work; ${cli.cmd(`note ${cli.scopeArg(outcome.locks[0]!)} "progress"`)} as you go; ${cli.cmd(`release ${scopeArgs}`)} when done`,
      );
      if (outcome.locks.some((l) => l.ttl_seconds !== null)) {
        text.push(`lease: ${cli.cmd(`renew ${scopeArgs}`)} before it expires`);
      }
      return cli.answer('acquire', outcome, text, `acquired ${cli.scopes(outcome.locks)}`);
    }
    case 'already_mine':
      return cli.answer(
        'acquire',
        outcome,
        [
          cli.head('already_mine', asked.join(' ')),
          `  covered by your ${cli.scopes(outcome.locks)}`,
          ...(opts.ttl !== undefined && outcome.locks.every((l) => l.ttl_seconds === Number(opts.ttl))
            ? [`  lease set to ${opts.ttl}s from now, as asked`]
            : []),
          ...cli.lines(outcome.locks),
        ],
        `already yours: covered by ${cli.scopes(outcome.locks)}`,
      );
    case 'held':
      return cli.held('acquire', outcome, asked);
    case 'other_worktree':
      return otherWorktreeAnswer(cli, 'acquire', outcome, asked);
    case 'parent_scope': {
      const parent = outcome.conflicts[0]?.agent_id ?? 'your parent';
      return cli.answer(
        'acquire',
        outcome,
        [
          cli.head('parent_scope', `${asked.join(' ')} is your parent's lock (${parent})`),
          ...cli.lines(outcome.conflicts),
          "next: claim something narrower inside it (a file or sub-folder): your parent's lock does not block you there",
        ],
        `parent_scope: ${parent} holds exactly ${asked.join(' ')}`,
      );
    }
    case 'interrupted': {
      const orphan = outcome.conflicts[0];
      const scope = orphan === undefined ? quoteArg(scopes[0]!) : cli.scopeArg(orphan);
      return cli.answer(
        'acquire',
        outcome,
        [
          cli.head(
            'interrupted',
            `${asked.join(' ')}: its holder is gone (or its lease ran out) and left notes`,
          ),
          ...cli.lines(outcome.conflicts),
          `next: ${cli.cmd(`resume ${scope}`)} to take it over with its notes, or ${cli.cmd(`break ${scope}`)} to discard it`,
        ],
        `interrupted work on ${asked.join(' ')}: resume or break it`,
      );
    }
  }
}

async function release(
  cli: Cli,
  scopes: string[],
  opts: { all?: boolean; token?: string },
  command = 'release',
) {
  if (opts.all && scopes.length > 0)
    throw new AgentLockError('E_USAGE', 'release takes scopes or --all, not both', {
      hint: 'name the scopes, or pass --all alone',
    });
  if (!opts.all && scopes.length === 0) {
    throw new AgentLockError('E_USAGE', 'release needs a scope or --all', {
      hint: `${cli.name} release SCOPE...`,
    });
  }
  const locks = await cli.open();
  const outcome = await locks.release(
    opts.all ? { all: true } : scopes,
    opts.token ? { token: opts.token } : {},
  );
  const asked = opts.all ? 'all' : scopes.map(quoteArg).join(' ');
  if (outcome.status === 'released') {
    const what = outcome.locks.length === 0 ? '(you held nothing)' : cli.scopes(outcome.locks);
    return cli.answer(command, outcome, [cli.head('released', what)], `released ${what}`);
  }
  // Several scopes: say of each what happened, the worst outcome first.
  const missing = (outcome.notFound ?? []).map(quoteArg).join(' ');
  const others = [
    ...(outcome.locks.length ? [`  released: ${cli.scopes(outcome.locks)}`] : []),
    ...(outcome.status === 'refused' && missing ? [`  not locked: ${missing}`] : []),
  ];
  const extra = outcome.notFound ? { extra: { not_found: outcome.notFound } } : {};
  if (outcome.status === 'refused') {
    const holders = [...new Set(outcome.conflicts.map((l) => l.agent_id))].join(', ');
    const refused = [...new Set(outcome.conflicts.map((l) => cli.scopeArg(l)))].join(' ');
    return {
      ...extra,
      ...cli.answer(
        command,
        outcome,
        [
          cli.head('refused', `${refused} is held by ${holders}, not you`),
          ...cli.lines(outcome.conflicts),
          ...others,
          `next: only its holder (or --token) may release it; ${cli.cmd(`break ${cli.scopeArg(outcome.conflicts[0]!)} --reason "..."`)} if it is abandoned`,
        ],
        `refused: held by ${holders}`,
      ),
    };
  }
  return {
    ...extra,
    ...cli.answer(
      command,
      outcome,
      [
        cli.head('not_found', `${missing || asked}: no lock on exactly this scope`),
        ...others,
        `next: ${cli.cmd('mine')} lists what you hold`,
      ],
      `not locked: ${missing || asked}`,
    ),
  };
}

async function renew(cli: Cli, scopes: string[], opts: { ttl?: string; token?: string }) {
  const ttl = opts.ttl === undefined ? undefined : parseSeconds(opts.ttl, '--ttl');
  const locks = await cli.open();
  const outcome = await locks.renew(scopes, {
    ...(ttl !== undefined ? { ttl } : {}),
    ...(opts.token ? { token: opts.token } : {}),
  });
  const asked = scopes.map(quoteArg).join(' ');
  switch (outcome.status) {
    case 'renewed': {
      const left = outcome.locks.map((l) =>
        l.ttl_seconds ? `${l.scope} for ${l.ttl_seconds}s` : `${l.scope} (no TTL)`,
      );
      return cli.answer(
        'renew',
        outcome,
        [cli.head('renewed', left.join(', ')), ...cli.lines(outcome.locks)],
        `renewed ${left.join(', ')}`,
      );
    }
    case 'expired':
      return cli.answer(
        'renew',
        outcome,
        [
          cli.head('expired', `${asked}: the lease lapsed`),
          `next: ${cli.cmd(`acquire ${asked}`)} again (you get a new fence)`,
        ],
        `expired: ${asked}`,
      );
    case 'refused':
      return cli.answer(
        'renew',
        outcome,
        [cli.head('refused', `${asked} is held by someone else`), ...cli.lines(outcome.conflicts)],
        `refused: ${asked}`,
      );
    default:
      return cli.answer(
        'renew',
        outcome,
        [
          cli.head('not_found', `${asked}: you hold no lock on exactly this scope`),
          `next: ${cli.cmd(`acquire ${asked}`)}`,
        ],
        `not locked: ${asked}`,
      );
  }
}

async function check(cli: Cli, scopes: string[], opts: { shared?: boolean }) {
  const locks = await cli.open();
  const outcome = await locks.check(scopes, { shared: opts.shared === true });
  const asked = scopes.map(quoteArg);
  if (outcome.status === 'held') return cli.held('check', outcome, asked);
  if (outcome.status === 'other_worktree') return otherWorktreeAnswer(cli, 'check', outcome, asked);
  if (outcome.status === 'mine') {
    return cli.answer(
      'check',
      outcome,
      [cli.head('mine', `${asked.join(' ')} (covered by ${cli.scopes(outcome.locks)})`)],
      `yours: ${asked.join(' ')}`,
    );
  }
  return cli.answer('check', outcome, [cli.head('free', asked.join(' '))], `free: ${asked.join(' ')}`);
}

async function list(cli: Cli, command: 'list' | 'mine', opts: { worktrees?: boolean } = {}) {
  const locks = await cli.open();
  const outcome = command === 'list' ? await locks.list() : await locks.mine();
  const n = outcome.locks.length;
  const where = storeName(locks);
  const head = cli.head(
    'listed',
    `${n} ${n === 1 ? 'lock' : 'locks'}${command === 'mine' ? ` of ${locks.agent.id}` : ''} (${where})`,
  );
  const stale = outcome.locks.filter((l) => l.stale).length;
  const orphans = outcome.locks.filter((l) => l.status === 'orphaned').length;
  const grouped = opts.worktrees ? byWorktree(cli, outcome.locks) : null;
  const text = [head, ...(grouped ? grouped.text : cli.lines(outcome.locks))];
  if (outcome.waiting.length > 0) {
    text.push(`${outcome.waiting.length} waiting in line (acquire --wait), first come first served:`);
    text.push(...cli.lines(outcome.waiting));
  }
  if (stale > 0)
    text.push(`${stale} stale: their holders still run but have not touched them for a long while`);
  if (orphans > 0) text.push(`${orphans} orphaned: ${cli.cmd('resume SCOPE')} or ${cli.cmd('break SCOPE')}`);
  // The queue is not a list of locks: it goes beside them, in the same lock shape (status waiting).
  return {
    ...cli.answer(command, outcome, text, `${n} locks`),
    extra: {
      waiting: outcome.waiting,
      store: storeOf(locks),
      ...(grouped ? { worktrees: grouped.groups } : {}),
    },
  };
}

async function note(cli: Cli, scope: string, words: string[], opts: { token?: string }) {
  const locks = await cli.open();
  const outcome = await locks.note(scope, words.join(' '), opts.token ? { token: opts.token } : {});
  const asked = quoteArg(scope);
  if (outcome.status === 'noted') {
    const n = outcome.locks[0]?.notes.length ?? 0;
    return cli.answer(
      'note',
      outcome,
      [cli.head('noted', `${asked} (${n} ${n === 1 ? 'note' : 'notes'})`)],
      `noted ${asked}`,
    );
  }
  if (outcome.status === 'refused') {
    return cli.answer(
      'note',
      outcome,
      [cli.head('refused', `${asked} is held by someone else`), ...cli.lines(outcome.conflicts)],
      `refused: ${asked}`,
    );
  }
  return cli.answer(
    'note',
    outcome,
    [
      cli.head('not_found', `${asked}: you hold no lock on exactly this scope`),
      `next: ${cli.cmd(`acquire ${asked}`)} first`,
    ],
    `not locked: ${asked}`,
  );
}

async function resume(cli: Cli, scope: string) {
  const locks = await cli.open();
  const outcome = await locks.resume(scope);
  const asked = quoteArg(scope);
  if (outcome.status === 'resumed') {
    const lock = outcome.locks[0]!;
    const text = [
      cli.head(
        'resumed',
        `${lock.scope} (fence ${lock.fence}, from ${outcome.conflicts[0]?.agent_id ?? '?'})`,
      ),
    ];
    text.push(...cli.lines(outcome.locks), `  token ${lock.token} (proves ownership: --token)`);
    return cli.answer('resume', outcome, text, `resumed ${lock.scope}`);
  }
  if (outcome.status === 'held') return cli.held('resume', outcome, [asked]);
  return cli.answer(
    'resume',
    outcome,
    [cli.head('not_found', `${asked}: no interrupted work on exactly this scope`)],
    `no orphan: ${asked}`,
  );
}

async function breakLocks(cli: Cli, scopes: string[], opts: { reason?: string; id?: string[] }) {
  const locks = await cli.open();
  const outcome = await locks.breakLock(scopes, {
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ids: opts.id ?? [],
  });
  const asked = [...scopes.map(quoteArg), ...(opts.id ?? []).map((id) => `--id ${id}`)].join(' ');
  if (outcome.status === 'broken') {
    const from = [...new Set(outcome.locks.map((l) => l.agent_id))].join(', ');
    return cli.answer(
      'break',
      outcome,
      [cli.head('broken', `${cli.scopes(outcome.locks)} (was held by ${from}; recorded)`)],
      `broken ${cli.scopes(outcome.locks)}`,
    );
  }
  return cli.answer(
    'break',
    outcome,
    [cli.head('not_found', `${asked}: no lock on exactly this scope`)],
    `not locked: ${asked}`,
  );
}

function plain(
  command: string,
  status: string,
  text: string[],
  extra: Record<string, unknown> = {},
  message = '',
): Answer {
  return { command, status, exitCode: 0, locks: [], conflicts: [], message, text, extra };
}

async function whoami(cli: Cli): Promise<Answer> {
  const locks = await cli.open();
  const id = locks.identity;
  const text = [
    `AGENT ${id.agentId} (from ${id.idSource})`,
    parentInferred(id)
      ? `PARENT ${id.parentAgentId} (inferred: the id this process has without AGENT_ID; AGENT_PARENT_ID=none for no parent)`
      : `PARENT ${id.parentAgentId ?? '(none)'}${id.parentAgentId || id.parentSource === 'AGENT_PARENT_ID' ? ` (from ${id.parentSource})` : ''}`,
    `HOLDER pid ${id.holder.pid} (${id.holderName}) on ${id.holder.host}: your locks live as long as it runs`,
    `TREE ${locks.tree.root}${locks.tree.key !== locks.tree.root ? ` (key ${locks.tree.key} from AGENT_LOCK_TREE)` : ''}`,
    `STORE ${locks.backend.kind} ${locks.backend.location}${locks.backend.namespace ? ` namespace ${locks.backend.namespace}` : ''}`,
    ...id.warnings.map((w) => `${paint(cli.style, 'yellow', 'WARNING')} ${w}`),
  ];
  return plain(
    'whoami',
    'identified',
    text,
    {
      identity: {
        agent_id: id.agentId,
        agent_source: id.idSource,
        parent_agent_id: id.parentAgentId,
        parent_source: id.parentSource,
        holder: { ...id.holder, name: id.holderName },
        tree: locks.tree,
        store: storeOf(locks),
        warnings: id.warnings,
      },
    },
    `${id.agentId}`,
  );
}

async function repair(cli: Cli): Promise<Answer> {
  const locks = await cli.open();
  const report = await locks.repair();
  const where = `${locks.backend.kind} store ${locks.backend.location}`;
  if (report.damage.length === 0) {
    return plain(
      'repair',
      'clean',
      [`CLEAN ${where}: nothing to repair (${report.locksKept} locks readable)`],
      { repair: report },
      'nothing to repair',
    );
  }
  return plain(
    'repair',
    'repaired',
    [
      `REPAIRED ${where}: ${report.locksKept} readable locks kept`,
      ...report.damage.map((line) => `  damage: ${line}`),
      ...report.keptAt.map((at) => `  kept aside: ${at}`),
      `next: ${cli.cmd('list')} shows what the store holds now`,
    ],
    { repair: report },
    `repaired: ${report.damage.join('; ')}`,
  );
}

async function init(cli: Cli, o: { redisUrl?: string; shared?: string }): Promise<Answer> {
  // A Redis URL or namespace asks for a Redis store: without --backend, an existing (empty) file
  // store's marker would otherwise win, and the flags be dropped without a word.
  const wantsRedis = o.redisUrl !== undefined || o.shared !== undefined;
  if (wantsRedis && cli.globals().backend === 'file') {
    throw new AgentLockError(
      'E_USAGE',
      '--redis-url and --shared are for a redis store, not --backend file',
      {
        hint: 'drop them, or pass --backend redis',
      },
    );
  }
  const locks = await cli.open({
    ...(wantsRedis && cli.globals().backend === undefined ? { backend: 'redis' as const } : {}),
    ...(o.redisUrl === undefined ? {} : { redisUrl: o.redisUrl }),
    ...(o.shared === undefined ? {} : { redisPrefix: o.shared }),
  });
  // Opening decides nothing; one read makes sure the store (a Redis server, say) really answers.
  await locks.list();
  return plain(
    'init',
    'initialized',
    [`INITIALIZED ${storeName(locks)}`],
    { store: storeOf(locks) },
    `initialized ${locks.backend.location}`,
  );
}

/** Which store an answer speaks of: a file folder, or a Redis server and the namespace on it. */
function storeOf(locks: Locks): { backend: string; location: string; namespace: string | null } {
  return {
    backend: locks.backend.kind,
    location: locks.backend.location,
    namespace: locks.backend.namespace ?? null,
  };
}

function storeName(locks: Locks): string {
  const ns = locks.backend.namespace;
  return `${locks.backend.kind} store ${locks.backend.location}${ns === undefined ? '' : ` namespace ${ns}`}`;
}

/** The command word of argv (skipping global flags and their values), if it names a command. */
function commandWord(argv: readonly string[]): string | null {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--dir' || arg === '--backend') {
      i++;
      continue;
    }
    if (arg.startsWith('-')) continue;
    const spec = COMMANDS.find((c) => c.name === arg || c.aliases?.includes(arg));
    return spec ? spec.name : null;
  }
  return null;
}

function buildProgram(cli: Cli, setAnswer: (a: Answer) => void, only: string | null): Command {
  const program = new Command(cli.name);
  program
    .description('advisory locks and leases for AI coding agents sharing a checkout or a fleet of machines')
    .helpOption('-h, --help', 'show help')
    .helpCommand('help [command]', "show a command's help (same as COMMAND --help)")
    .showSuggestionAfterError(true)
    .allowExcessArguments(false);
  for (const flag of GLOBAL_FLAGS) program.option(flag.flags, flag.description);

  const spec = (name: string) => COMMANDS.find((c) => c.name === name)!;
  // Building every subcommand costs milliseconds of cold start; a call that names one needs only it.
  const wanted = (name: string) => only === null || only === name;
  const sub = (name: string) => {
    const s = spec(name);
    if (!wanted(name)) return new Command(name);
    const command = program.command(`${name}${s.args ? ` ${s.args}` : ''}`).description(s.summary);
    for (const alias of s.aliases ?? []) command.alias(alias);
    for (const flag of s.flags) {
      command.addOption(
        flag.flags.startsWith('--id')
          ? new Option(flag.flags, flag.description).argParser(collect)
          : new Option(flag.flags, flag.description),
      );
    }
    command.allowExcessArguments(false);
    return command;
  };
  const act =
    <A extends unknown[]>(fn: (...args: A) => Promise<Answer>) =>
    async (...args: A) => {
      setAnswer(await fn(...args));
    };

  sub('acquire').action(act((scopes: string[], o) => acquire(cli, scopes, o)));
  sub('run').action(act((scopes: string[], o) => runCommand(cli, scopes, o)));
  sub('release').action(act((scopes: string[], o) => release(cli, scopes, o)));
  sub('release-all').action(act(() => release(cli, [], { all: true }, 'release-all')));
  sub('renew').action(act((scopes: string[], o) => renew(cli, scopes, o)));
  sub('check').action(act((scopes: string[], o) => check(cli, scopes, o)));
  sub('list').action(act((o) => list(cli, 'list', o)));
  sub('mine').action(act((o) => list(cli, 'mine', o)));
  sub('note').action(act((scope: string, words: string[], o) => note(cli, scope, words, o)));
  sub('resume').action(act((scope: string) => resume(cli, scope)));
  sub('break').action(act((scopes: string[], o) => breakLocks(cli, scopes, o)));
  sub('log').action(act((o) => logCommand(cli, o)));
  sub('explain').action(act(async (a: string, b: string) => explainCommand(cli, a, b)));
  // Its terminal libraries load only when the board is asked for.
  sub('watch').action(act(async () => (await import('./watch.js')).watchCommand(cli)));
  sub('ui').action(act(async (o) => (await import('../ui/ui-command.js')).uiCommand(cli, o)));
  sub('whoami').action(act(() => whoami(cli)));
  sub('version').action(
    act(async () => plain('version', 'version', [VERSION], { version: VERSION }, VERSION)),
  );
  sub('contract').action(
    act(async () => {
      const doc = contractDocument(VERSION);
      return plain('contract', 'contract', [JSON.stringify(doc, null, 2)], { contract: doc }, 'contract');
    }),
  );
  sub('completion').action(
    act(async (shell: string) =>
      plain('completion', 'completion', [completionScript(shell, cli.name)], {}, shell),
    ),
  );
  sub('init').action(act((o) => init(cli, o)));
  sub('repair').action(act(() => repair(cli)));
  // Integrations load only when used: the MCP SDK and friends stay out of every other command's start-up.
  sub('mcp').action(act(async () => (await import('../mcp/server.js')).mcpCommand(cli)));
  sub('skill').action(
    act(async (action: string, o) => (await import('../integrations/skill.js')).skillCommand(cli, action, o)),
  );
  sub('hooks').action(
    act(async (action: string, o) => (await import('../integrations/hooks.js')).hooksCommand(cli, action, o)),
  );
  sub('conflicts').action(act(async (o) => (await import('./conflicts.js')).conflictsCommand(cli, o)));
  sub('doctor').action(act(async () => (await import('../doctor/doctor.js')).doctorCommand(cli)));
  sub('guard').action(
    act(async (hook: string) => (await import('../integrations/git-guard.js')).guardCommand(cli, hook)),
  );
  return program;
}

function toAgentLockError(error: unknown): AgentLockError {
  if (isAgentLockError(error)) return error;
  if (error instanceof CommanderError && error.code === 'commander.help') {
    // Only global flags, no command: commander's "(outputHelp)" is no message for a person.
    return new AgentLockError('E_USAGE', 'no command given', { hint: 'see --help' });
  }
  if (error instanceof CommanderError) {
    const text = error.message.replace(/^error:\s*/i, '').split('\n')[0] ?? error.message;
    return new AgentLockError('E_USAGE', text, { hint: 'see --help' });
  }
  return asAgentLockError(error);
}

export async function runCli(fullArgv: readonly string[], io: CliIo): Promise<number> {
  let argv = fullArgv;
  let passthrough: string[] | null = null;
  // `run SCOPE... -- COMMAND ARGS`: everything after `--` is the command's, never ours to parse.
  if (commandWord(fullArgv) === 'run') {
    const split = fullArgv.indexOf('--');
    if (split >= 0) {
      passthrough = fullArgv.slice(split + 1);
      argv = fullArgv.slice(0, split);
    }
  }
  argv = rewriteBareWait(conventionalArgv(argv));
  const wantsJson = argv.includes('--json');
  let program: Command | null = null;
  const cli = new Cli(io, () => (program?.opts() ?? {}) as GlobalOptions);
  cli.passthrough = passthrough;
  let answer: Answer | null = null;
  let helpText = '';
  const asksHelp = argv.includes('-h') || argv.includes('--help');
  program = buildProgram(
    cli,
    (a) => {
      answer = a;
    },
    asksHelp ? null : commandWord(argv),
  );
  program.exitOverride();
  program.configureOutput({
    writeOut: (text) => {
      helpText += text;
    },
    writeErr: () => {
      // Commander's own error text is replaced by our one-line ERROR below.
    },
  });
  for (const command of program.commands) {
    command.exitOverride();
    command.configureOutput({ writeOut: (t) => (helpText += t), writeErr: () => {} });
  }
  const command = commandWord(argv) ?? argv.find((a) => !a.startsWith('-')) ?? '';
  let exitCode = 2;
  try {
    if (argv.length === 0) {
      io.stdout(program.helpInformation());
      exitCode = 0;
      return exitCode;
    }
    await program.parseAsync([...argv], { from: 'user' });
    const done = answer as Answer | null;
    if (done === null) {
      io.stdout(helpText);
      exitCode = 0;
      return exitCode;
    }
    if (program.opts().json && !done.raw)
      io.stdout(`${JSON.stringify(envelope(done, agentOf(cli), null))}\n`);
    else if (done.raw) {
      io.stdout(done.raw.stdout);
      if (done.raw.stderr) io.stderr(done.raw.stderr);
    } else
      io.stdout(
        `${[...done.text, ...warningLines(cli.style, done.warnings), ...inferenceNote(cli, done)].join('\n')}\n`,
      );
    exitCode = done.exitCode;
    return exitCode;
  } catch (error) {
    if (
      error instanceof CommanderError &&
      (error.code === 'commander.helpDisplayed' || error.code === 'commander.version')
    ) {
      io.stdout(helpText);
      exitCode = 0;
      return exitCode;
    }
    const failure = toAgentLockError(error);
    const line = `ERROR: ${cli.name}: ${failure.message}${failure.hint ? ` (${failure.hint})` : ''}`;
    if (wantsJson) {
      io.stdout(
        `${JSON.stringify(envelope(errorAnswer(command, failure.message), agentOf(cli), failure))}\n`,
      );
    } else {
      io.stderr(`${line}\n`);
    }
    if (io.env.AGENT_LOCK_DEBUG && error instanceof Error) io.stderr(`${error.stack}\n`);
    exitCode = 2;
    return exitCode;
  } finally {
    io.answered?.(exitCode);
    await cli.close().catch(() => {});
  }
}

function agentOf(cli: Cli): { id: string; parentId: string | null; parentInferred: boolean } | null {
  try {
    const who = cli.identity();
    return { id: who.agentId, parentId: who.parentAgentId, parentInferred: parentInferred(who) };
  } catch {
    return null;
  }
}

function parentInferred(who: Identity): boolean {
  return who.parentSource === 'without AGENT_ID' && who.parentAgentId !== null;
}

/** Decisions whose answer depends on who the caller's parent is (family rules). */
const FAMILY_DECISIONS = new Set(['acquire', 'check', 'resume', 'release', 'renew', 'note']);

/**
 * The line that says an answer relied on a parent inferred from the calling process: setting
 * AGENT_ID alone silently makes you a sub-agent of whoever runs you, which may grant what a
 * stranger would be refused.
 */
function inferenceNote(cli: Cli, done: Answer): string[] {
  if (!FAMILY_DECISIONS.has(done.command)) return [];
  let who: Identity;
  try {
    who = cli.identity();
  } catch {
    return [];
  }
  if (!parentInferred(who)) return [];
  return [
    `note: acting as a sub-agent of ${who.parentAgentId} (inferred, since AGENT_ID is set and AGENT_PARENT_ID is not); AGENT_PARENT_ID=none acts with no parent`,
  ];
}
