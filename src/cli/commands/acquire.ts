import path from 'node:path';
import { interruption } from '../../answers/interruption.js';
import { acquireMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { parseSeconds } from '../../core/config.js';
import { AgentLockError, isAgentLockError } from '../../core/errors.js';
import { isLongLived } from '../../core/identity.js';
import type { Lock } from '../../core/lock.js';
import { withEnforceAsRoot } from '../../host/freeze.js';
import type { Locks } from '../../locks.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import { abortedAnswer, type Cli, timeoutAnswer } from '../context.js';
import { WAIT_FLAGS } from '../flags.js';
import { LiveLine, waitSeconds } from '../waiting.js';
import { otherWorktreeAnswer } from '../worktrees.js';

const FLAGS = [
  { flags: '-m, --message <intent>', description: 'what you are about to do (shown to others)' },
  { flags: '--ttl <seconds>', description: 'lease: expires unless renewed' },
  { flags: '--shared', description: 'shared lock: conflicts only with exclusive ones' },
  { flags: '--enforce', description: 'make the matched files read-only until release' },
  { flags: '--force', description: 'with --enforce: allow more than 500 files' },
  ...WAIT_FLAGS,
] as const satisfies readonly FlagSpec[];

async function acquire(cli: Cli, scopes: string[], opts: OptionsOf<typeof FLAGS>) {
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
    if (isAgentLockError(error) && error.code === 'E_USAGE' && /^enforce would make/.test(error.message))
      // The library's hint names its option; at the command line it is a flag.
      throw new AgentLockError('E_USAGE', error.message, { hint: 'claim a narrower scope, or pass --force' });
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
  outcome = withEnforceAsRoot(outcome, opts.enforce === true);
  switch (outcome.status) {
    case 'timeout':
      return timeoutAnswer(cli, 'acquire', outcome, asked, wait);
    case 'acquired': {
      const text = [cli.head('acquired', cli.scopes(outcome.locks)), ...cli.lines(outcome.locks)];
      for (const lock of outcome.locks) text.push(`  token ${lock.token} (proves ownership: --token)`);
      const lives = holderLine(cli, outcome.locks);
      if (lives !== null) text.push(lives);
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
      return cli.answer('acquire', outcome, text, acquireMessage(outcome, asked.join(' ')));
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
        acquireMessage(outcome, asked.join(' ')),
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
        acquireMessage(outcome, asked.join(' ')),
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
        acquireMessage(outcome, asked.join(' ')),
      );
    }
  }
}

/**
 * A lock without a TTL lives as long as its holder process. Under a wrapper (make, a script) that
 * process may exit right after this answer and the lock with it: the answer names it, unless it is
 * an agent, a terminal or the like that outlives the command.
 */
function holderLine(cli: Cli, locks: readonly Lock[]): string | null {
  if (!locks.some((l) => l.ttl_seconds === null)) return null;
  const who = cli.identity();
  if (isLongLived(who.holderName)) return null;
  return `  lives while ${who.holderName} (pid ${who.holder.pid}) runs: released when it exits (--ttl SECONDS keeps it for a set time instead)`;
}

export const acquireCommand = defineCommand({
  name: 'acquire',
  args: '<scope...>',
  summary: 'claim files, folders, globs or @resources, all or nothing',
  flags: FLAGS,
  run: (cli, scopes, o) => acquire(cli, scopes, o),
});
