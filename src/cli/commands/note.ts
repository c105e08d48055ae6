import { noteMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import type { Cli } from '../context.js';
import { TOKEN } from '../flags.js';

const FLAGS = [TOKEN] as const satisfies readonly FlagSpec[];

async function note(cli: Cli, scope: string, words: string[], opts: OptionsOf<typeof FLAGS>) {
  const locks = await cli.open();
  const outcome = await locks.note(scope, words.join(' '), opts.token ? { token: opts.token } : {});
  const asked = quoteArg(scope);
  if (outcome.status === 'noted') {
    const n = outcome.locks[0]?.notes.length ?? 0;
    return cli.answer(
      'note',
      outcome,
      [cli.head('noted', `${asked} (${n} ${n === 1 ? 'note' : 'notes'})`)],
      noteMessage(outcome, asked),
    );
  }
  if (outcome.status === 'refused') {
    return cli.answer(
      'note',
      outcome,
      [cli.head('refused', `${asked} is held by someone else`), ...cli.lines(outcome.conflicts)],
      noteMessage(outcome, asked),
    );
  }
  return cli.answer(
    'note',
    outcome,
    [
      cli.head('not_found', `${asked}: you hold no lock on exactly this scope`),
      `next: ${cli.cmd(`acquire ${asked}`)} first`,
    ],
    noteMessage(outcome, asked),
  );
}

export const noteCommand = defineCommand({
  name: 'note',
  args: '<scope> <text...>',
  summary: 'write a progress note into your lock',
  flags: FLAGS,
  run: (cli, scope, words, o) => note(cli, scope, words, o),
});
