import { defineCommand } from '../command.js';
import { explainCommand as explainScopes } from '../explain.js';

export const explainCommand = defineCommand({
  name: 'explain',
  args: '<scope-a> <scope-b>',
  summary: 'whether two scopes conflict and why: a path both match, or why none can',
  flags: [],
  run: async (cli, a: string, b: string) => explainScopes(cli, a, b),
});
