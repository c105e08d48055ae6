import { defineCommand } from '../command.js';

export const guardCommand = defineCommand({
  name: 'guard',
  args: '<hook>',
  summary: 'git hook runtime: refuse a commit touching paths other agents hold (pre-commit)',
  flags: [],
  run: async (cli, hook: string) => (await import('../../integrations/git-guard.js')).guardCommand(cli, hook),
});
