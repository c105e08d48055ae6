import { defineCommand } from '../command.js';

export const watchCommand = defineCommand({
  name: 'watch',
  args: '',
  summary: 'live board of locks, waiting lines and events (q quits); one snapshot when not a terminal',
  flags: [],
  // Its terminal libraries load only when the board is asked for.
  run: async (cli) => (await import('../board.js')).showBoard(cli),
});
