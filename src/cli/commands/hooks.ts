import { defineCommand } from '../command.js';

export const hooksCommand = defineCommand({
  name: 'hooks',
  args: '<action>',
  summary:
    'install or uninstall agent or git hooks, or run a hook: <harness>-pre-tool-use, <harness>-post-tool-use, <harness>-turn-end or <harness>-session-end for claude, codex, gemini, cursor, opencode, copilot, cline',
  flags: [
    {
      flags: '--for <agent>',
      description: 'claude, codex, gemini, cursor, opencode, copilot, cline (comma-separated), or all',
    },
    { flags: '--git', description: 'a git pre-commit guard' },
    { flags: '--no-claim', description: "the agents' edits only check, and take no claim" },
  ],
  run: async (cli, action, o) => (await import('../../integrations/hooks.js')).hooksAction(cli, action, o),
});
