import { askMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { leaveMailHint } from '../../integrations/mail.js';
import { defineCommand } from '../command.js';
import type { Cli } from '../context.js';

async function ask(cli: Cli, scope: string, words: string[]) {
  const locks = await cli.open();
  const outcome = await locks.ask(scope, words.join(' '));
  const asked = quoteArg(scope);
  if (outcome.status === 'asked') {
    // Holders on this host hear of it on their next tool call, whatever the tool; elsewhere, on
    // their next edit (which reads the store anyway).
    for (const holder of new Set(outcome.locks.map((l) => l.agent_id)))
      leaveMailHint(cli.io.env, holder, locks.tree.root);
    return cli.answer(
      'ask',
      outcome,
      [
        cli.head(
          'asked',
          `${asked}: left for ${[...new Set(outcome.locks.map((l) => l.agent_id))].join(', ')}`,
        ),
        ...cli.lines(outcome.locks),
        'next: their answer (alock reply) or the release reaches you on your next tool call',
      ],
      askMessage(outcome, asked),
    );
  }
  const why =
    outcome.status === 'mine'
      ? `${asked}: only you hold it; nobody else to ask`
      : `${asked}: nobody holds it; nobody to ask (${cli.cmd(`acquire ${asked}`)} takes it)`;
  return cli.answer('ask', outcome, [cli.head(outcome.status, why)], askMessage(outcome, asked));
}

export const askCommand = defineCommand({
  name: 'ask',
  args: '<scope> <text...>',
  summary: 'leave a request for the holders of a scope, told on their next tool call',
  flags: [],
  run: (cli, scope: string, words: string[]) => ask(cli, scope, words),
});
