import { defineCommand } from '../command.js';

export const doctorCommand = defineCommand({
  name: 'doctor',
  args: '',
  summary: 'check the settings, store, backend, identity, hooks and frozen files, and say how to fix each',
  flags: [],
  run: async (cli) => (await import('../../doctor/doctor.js')).doctorCommand(cli),
});
