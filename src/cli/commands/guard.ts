import { AgentLockError } from '../../core/errors.js';
import { defineCommand } from '../command.js';

export const guardCommand = defineCommand({
  name: 'guard',
  args: '<hook>',
  summary: 'git hook runtime: refuse a commit touching paths other agents hold (pre-commit)',
  flags: [],
  run: async (cli, hook) => {
    if (hook !== 'pre-commit') {
      throw new AgentLockError('E_USAGE', `unknown git hook ${JSON.stringify(hook)}`, {
        hint: `${cli.name} guard pre-commit`,
      });
    }
    // The guard's git calls and checks load only when a commit asks for them.
    return (await import('../../integrations/git-guard.js')).guardPreCommit(cli);
  },
});
