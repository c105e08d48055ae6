import { defineCommand } from '../command.js';

export const helpCommand = defineCommand({
  name: 'help',
  args: '[command]',
  summary: "show the program's help, or a command's (same as COMMAND --help)",
  flags: [],
});
