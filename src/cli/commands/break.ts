import { AgentLockError } from '../../core/errors.js';
import { breakMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { hintAskers } from '../../integrations/mail.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import type { Cli } from '../context.js';

const FLAGS = [
  { flags: '--reason <text>', description: 'why, for the record' },
  { flags: '--id <id...>', description: 'break by lock id (for unreadable records)' },
] as const satisfies readonly FlagSpec[];

async function breakLocks(cli: Cli, scopes: string[], opts: OptionsOf<typeof FLAGS>) {
  if (scopes.length === 0 && (opts.id ?? []).length === 0)
    // The library's refusal names its options; a person at the command line reads the flags.
    throw new AgentLockError('E_USAGE', 'nothing to break: name a scope or --id', {
      hint: `for example ${cli.name} break src/a.ts, or ${cli.name} break --id ID as list shows it`,
    });
  const locks = await cli.open();
  const outcome = await locks.breakLock(scopes, {
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ids: opts.id ?? [],
  });
  // Whoever asked the holder about a broken lock hears on its next tool call that the scope is free.
  hintAskers(cli.io.env, outcome.locks, locks.tree.root);
  const asked = [...scopes.map(quoteArg), ...(opts.id ?? []).map((id) => `--id ${id}`)].join(' ');
  if (outcome.status === 'broken') {
    const from = [...new Set(outcome.locks.map((l) => l.agent_id))].join(', ');
    return cli.answer(
      'break',
      outcome,
      [cli.head('broken', `${cli.scopes(outcome.locks)} (was held by ${from}; recorded)`)],
      breakMessage(outcome, asked),
    );
  }
  return cli.answer(
    'break',
    outcome,
    [
      cli.head(
        'not_found',
        scopes.length === 0 ? `${asked}: no lock with this id` : `${asked}: no lock on exactly this scope`,
      ),
    ],
    breakMessage(outcome, asked),
  );
}

export const breakCommand = defineCommand({
  name: 'break',
  args: '[scope...]',
  summary: 'remove any lock, whoever holds it (recorded)',
  flags: FLAGS,
  run: (cli, scopes, o) => breakLocks(cli, scopes, o),
});
