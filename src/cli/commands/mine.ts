import { defineCommand } from '../command.js';
import { WORKTREES_FLAG } from '../flags.js';
import { listLocks } from './list.js';

export const mineCommand = defineCommand({
  name: 'mine',
  args: '',
  summary: "your locks and your sub-agents'",
  flags: [WORKTREES_FLAG],
  run: (cli, o) => listLocks(cli, 'mine', o),
});
