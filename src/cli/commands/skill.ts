import { defineCommand } from '../command.js';

export const skillCommand = defineCommand({
  name: 'skill',
  args: '<action>',
  summary: 'install (or show the path of) the agent skill that teaches the protocol',
  flags: [
    {
      flags: '--for <agent>',
      description:
        'claude (default) or codex: SKILL.md; agents-md or gemini: a section of AGENTS.md or GEMINI.md',
    },
    { flags: '--into <dir>', description: 'install into this skills folder' },
    { flags: '--force', description: 'replace a different SKILL.md' },
  ],
  run: async (cli, action, o) => (await import('../../integrations/skill.js')).skillAction(cli, action, o),
});
