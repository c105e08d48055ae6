import { defineCommand } from '../command.js';
import { completionScript } from '../completion.js';
import { plainAnswer } from '../context.js';

export const completionCommand = defineCommand({
  name: 'completion',
  args: '<shell>',
  summary: 'shell completion script (bash, zsh or fish)',
  flags: [],
  run: async (cli, shell) =>
    plainAnswer('completion', 'completion', [completionScript(shell, cli.name, cli.commands)], {}, shell),
});
