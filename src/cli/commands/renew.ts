import { renewMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { parseSeconds } from '../../core/config.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import type { Cli } from '../context.js';
import { TOKEN } from '../flags.js';

const FLAGS = [
  { flags: '--ttl <seconds>', description: "new lease length (default: the lease's own)" },
  TOKEN,
] as const satisfies readonly FlagSpec[];

async function renew(cli: Cli, scopes: string[], opts: OptionsOf<typeof FLAGS>) {
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
        renewMessage(outcome, asked),
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
        renewMessage(outcome, asked),
      );
    case 'refused':
      return cli.answer(
        'renew',
        outcome,
        [cli.head('refused', `${asked} is held by someone else`), ...cli.lines(outcome.conflicts)],
        renewMessage(outcome, asked),
      );
    default:
      return cli.answer(
        'renew',
        outcome,
        [
          cli.head('not_found', `${asked}: you hold no lock on exactly this scope`),
          `next: ${cli.cmd(`acquire ${asked}`)}`,
        ],
        renewMessage(outcome, asked),
      );
  }
}

export const renewCommand = defineCommand({
  name: 'renew',
  args: '<scope...>',
  summary: 'extend a lease (or touch a lock)',
  flags: FLAGS,
  run: (cli, scopes, o) => renew(cli, scopes, o),
});
