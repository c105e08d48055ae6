import { defineCommand } from '../command.js';
import { WAIT_FLAGS } from '../flags.js';
import { runCommand as runUnderLock } from '../run-command.js';

export const runCommand = defineCommand({
  name: 'run',
  args: '<scope...>',
  summary:
    "run a command under a lock (flock-style): alock run SCOPE... -- COMMAND [ARGS...]; exits with the command's code",
  flags: [
    ...WAIT_FLAGS,
    {
      flags: '-E, --conflict-exit-code <code>',
      description: 'exit code when the lock cannot be had (default 1)',
    },
    { flags: '--ttl <seconds>', description: 'lease length, renewed every third of it (default 30)' },
    { flags: '-m, --message <intent>', description: 'what the command does (shown to others)' },
    { flags: '--shared', description: 'shared lock: conflicts only with exclusive ones' },
  ],
  run: (cli, scopes: string[], o) => runUnderLock(cli, scopes, o),
});
