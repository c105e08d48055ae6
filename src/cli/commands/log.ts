import { defineCommand } from '../command.js';
import { logCommand as showLog } from '../log.js';

export const logCommand = defineCommand({
  name: 'log',
  args: '',
  summary: "the store's history of events, newest last (--json: JSON lines)",
  flags: [
    { flags: '--follow', description: 'then print each new event as it is committed, until Ctrl-C' },
    {
      flags: '--since <when>',
      description: 'only since a duration ago (15m, 2h, 1d) or a time (ISO 8601)',
    },
    { flags: '--agent <id>', description: 'only events of this agent (or its children), or done by it' },
    { flags: '--scope <scope...>', description: 'only events of locks overlapping this scope' },
    { flags: '--limit <n>', description: 'at most the last N events (50)' },
  ],
  run: (cli, o) => showLog(cli, o),
});
