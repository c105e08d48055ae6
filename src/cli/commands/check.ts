import { checkMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import type { Cli } from '../context.js';
import { otherWorktreeAnswer } from '../worktrees.js';

const FLAGS = [
  { flags: '--shared', description: 'check for a shared claim' },
] as const satisfies readonly FlagSpec[];

async function check(cli: Cli, scopes: string[], opts: OptionsOf<typeof FLAGS>) {
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
      checkMessage(outcome, asked.join(' ')),
    );
  }
  return cli.answer(
    'check',
    outcome,
    [cli.head('free', asked.join(' '))],
    checkMessage(outcome, asked.join(' ')),
  );
}

export const checkCommand = defineCommand({
  name: 'check',
  args: '<scope...>',
  summary: 'would these scopes be granted?',
  flags: FLAGS,
  run: (cli, scopes, o) => check(cli, scopes, o),
});
