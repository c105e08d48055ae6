import { defineCommand } from '../command.js';

export const uiCommand = defineCommand({
  name: 'ui',
  args: '',
  summary: 'serve a live web dashboard of the store on 127.0.0.1 (read-only unless --allow-break)',
  flags: [
    { flags: '--port <n>', description: 'port to listen on (default: any free one)' },
    { flags: '--host <address>', description: 'address to bind (default 127.0.0.1)' },
    { flags: '--allow-remote', description: 'allow a --host other machines can reach' },
    {
      flags: '--allow-break',
      description: 'offer a break button, guarded by the secret in the printed URL',
    },
    { flags: '--open', description: 'open the page in the default browser' },
  ],
  run: async (cli, o) => (await import('../../ui/ui-command.js')).openDashboard(cli, o),
});
