import { listMessage } from '../../answers/messages.js';
import { defineCommand, type OptionsOf } from '../command.js';
import { type Cli, storeName, storeOf } from '../context.js';
import { WORKTREES_FLAG } from '../flags.js';
import { byWorktree } from '../worktrees.js';

export async function listLocks(
  cli: Cli,
  command: 'list' | 'mine',
  opts: OptionsOf<readonly [typeof WORKTREES_FLAG]> = {},
) {
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
    ...cli.answer(
      command,
      outcome,
      text,
      listMessage(outcome, command === 'mine' ? locks.agent.id : undefined),
    ),
    extra: {
      waiting: outcome.waiting,
      store: storeOf(locks),
      ...(grouped ? { worktrees: grouped.groups } : {}),
    },
  };
}

export const listCommand = defineCommand({
  name: 'list',
  aliases: ['ls'],
  args: '',
  summary: 'every lock in the store',
  flags: [WORKTREES_FLAG],
  run: (cli, o) => listLocks(cli, 'list', o),
});
