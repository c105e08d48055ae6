import { defineCommand } from '../command.js';

/** Listed for --help, completion and the contract; commander answers it itself (no `run`). */
export const helpCommand = defineCommand({
  name: 'help',
  args: '[command]',
  summary: "show the program's help, or a command's (same as COMMAND --help)",
  flags: [],
});
