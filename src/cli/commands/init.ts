import type { Answer } from '../../answers/answer.js';
import { AgentLockError } from '../../core/errors.js';
import { defineCommand, type FlagSpec, type OptionsOf } from '../command.js';
import { type Cli, plainAnswer, storeName, storeOf } from '../context.js';

const FLAGS = [
  {
    flags: '--redis-url <url>',
    description: 'the Redis server of a redis store (redis:// or rediss://)',
  },
  {
    flags: '--force',
    description:
      'with --backend file: leave a Redis store whose server no longer answers (its marker is kept aside); refused while it answers and holds locks',
  },
  {
    flags: '--shared <name>',
    description: "a Redis namespace shared with other repositories (default: the repository's own)",
  },
] as const satisfies readonly FlagSpec[];

async function init(cli: Cli, o: OptionsOf<typeof FLAGS>): Promise<Answer> {
  if (o.force === true && cli.globals().backend !== 'file') {
    throw new AgentLockError(
      'E_USAGE',
      '--force is for --backend file: it leaves a Redis store that is gone',
      {
        hint: 'run alock --backend file init --force',
      },
    );
  }
  // A Redis URL or namespace asks for a Redis store: without --backend, an existing (empty) file
  // store's marker would otherwise win, and the flags be dropped without a word.
  const wantsRedis = o.redisUrl !== undefined || o.shared !== undefined;
  if (wantsRedis && cli.globals().backend === 'file') {
    throw new AgentLockError(
      'E_USAGE',
      '--redis-url and --shared are for a redis store, not --backend file',
      {
        hint: 'drop them, or pass --backend redis',
      },
    );
  }
  const locks = await cli.open({
    ...(wantsRedis && cli.globals().backend === undefined ? { backend: 'redis' as const } : {}),
    ...(o.redisUrl === undefined ? {} : { redisUrl: o.redisUrl }),
    ...(o.shared === undefined ? {} : { redisPrefix: o.shared }),
    ...(o.force === true ? { leaveUnreachableRedis: true } : {}),
  });
  // Opening decides nothing; one read makes sure the store (a Redis server, say) really answers.
  await locks.list();
  return plainAnswer(
    'init',
    'initialized',
    [`INITIALIZED ${storeName(locks)}`],
    { store: storeOf(locks) },
    `initialized ${locks.store.location}`,
  );
}

export const initCommand = defineCommand({
  name: 'init',
  args: '',
  summary: 'create the store and record its backend (and Redis server)',
  flags: FLAGS,
  run: (cli, o) => init(cli, o),
});
