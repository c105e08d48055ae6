import { resumeMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { defineCommand } from '../command.js';
import type { Cli } from '../context.js';

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
    return cli.answer('resume', outcome, text, resumeMessage(outcome, asked));
  }
  if (outcome.status === 'held') return cli.held('resume', outcome, [asked]);
  return cli.answer(
    'resume',
    outcome,
    [cli.head('not_found', `${asked}: no interrupted work on exactly this scope`)],
    resumeMessage(outcome, asked),
  );
}

export const resumeCommand = defineCommand({
  name: 'resume',
  args: '<scope>',
  summary: 'take over interrupted work (an orphan) with its notes',
  flags: [],
  run: (cli, scope) => resume(cli, scope),
});
