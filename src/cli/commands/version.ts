import { defineCommand } from '../command.js';
import { plainAnswer, VERSION } from '../context.js';

export const versionCommand = defineCommand({
  name: 'version',
  args: '',
  summary: 'print the version (also --version, -V)',
  flags: [],
  run: async () => plainAnswer('version', 'version', [VERSION], { version: VERSION }, VERSION),
});
