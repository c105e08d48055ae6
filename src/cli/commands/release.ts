import { releaseMessage } from '../../answers/messages.js';
import { quoteArg } from '../../answers/render.js';
import { AgentLockError } from '../../core/errors.js';
import { hintAskers } from '../../integrations/mail.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import type { Cli } from '../context.js';
import { TOKEN } from '../flags.js';

const FLAGS = [
  { flags: '--all', description: 'release every lock of yours and your children' },
  TOKEN,
] as const satisfies readonly FlagSpec[];

export async function release(
  cli: Cli,
  scopes: string[],
  opts: OptionsOf<typeof FLAGS>,
  command: 'release' | 'release-all' = 'release',
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
  hintAskers(cli.io.env, outcome.locks, locks.tree.root);
  if (outcome.status === 'released') {
    const what = outcome.locks.length === 0 ? '(you held nothing)' : cli.scopes(outcome.locks);
    return cli.answer(command, outcome, [cli.head('released', what)], releaseMessage(outcome, asked));
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
        releaseMessage(outcome, asked),
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
      releaseMessage(outcome, missing || asked),
    ),
  };
}

export const releaseCommand = defineCommand({
  name: 'release',
  args: '[scope...]',
  summary: "release your (or your sub-agents') locks",
  flags: FLAGS,
  run: (cli, scopes, o) => release(cli, scopes, o),
});
