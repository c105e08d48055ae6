import { defineCommand } from '../command.js';

export const conflictsCommand = defineCommand({
  name: 'conflicts',
  args: '',
  summary:
    "predict merge conflicts between this worktree's branch and every other worktree's branch and the base (git merge-tree; changes nothing)",
  flags: [
    { flags: '--base <branch>', description: "the base branch (default: the repository's default branch)" },
  ],
  run: async (cli, o) => (await import('../conflicts.js')).conflictsCommand(cli, o),
});
