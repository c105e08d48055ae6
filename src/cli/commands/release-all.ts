import { defineCommand } from '../command.js';
import { release } from './release.js';

export const releaseAllCommand = defineCommand({
  name: 'release-all',
  args: '',
  summary: 'same as release --all',
  flags: [],
  run: (cli) => release(cli, [], { all: true }, 'release-all'),
});
