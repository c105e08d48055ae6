import { replyMessage } from '../../answers/messages.js';
import { leaveMailHint } from '../../integrations/mail.js';
import { defineCommand } from '../command.js';
import type { Cli } from '../context.js';

async function reply(cli: Cli, agent: string, words: string[]) {
  const locks = await cli.open();
  const outcome = await locks.reply(agent, words.join(' '));
  if (outcome.status === 'replied') {
    leaveMailHint(cli.io.env, agent, locks.tree.root);
    return cli.answer(
      'reply',
      outcome,
      [cli.head('replied', `to ${agent} about ${cli.scopes(outcome.locks)}: told on their next tool call`)],
      replyMessage(outcome, agent),
    );
  }
  return cli.answer(
    'reply',
    outcome,
    [
      cli.head('not_found', `no request of ${agent} is on your locks`),
      `next: ${cli.cmd('mine')} shows what you hold; a released lock tells its askers by itself`,
    ],
    replyMessage(outcome, agent),
  );
}

export const replyCommand = defineCommand({
  name: 'reply',
  args: '<agent> <text...>',
  summary: 'answer an agent that asked about one of your locks, told on its next tool call',
  flags: [],
  run: (cli, agent: string, words: string[]) => reply(cli, agent, words),
});
