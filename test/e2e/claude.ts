/**
 * Claude Code in its real binary. Needs: ANTHROPIC_BASE_URL at our server with any key, `-p` with
 * `--permission-mode acceptEdits` (the bypass modes refuse to start as root) and Bash allowed, and
 * the project's `.claude/settings.json` hooks (read in `-p` without a trust prompt).
 */
import path from 'node:path';
import { HARNESSES } from '../../scripts/e2e-harnesses.mjs';
import { readJsonFile, writeJson } from './kit.js';
import type { HarnessDef } from './suite.js';

const pinned = HARNESSES.find((h) => h.id === 'claude');
if (!pinned) throw new Error('claude is not pinned in scripts/e2e-harnesses.mjs');

export const claudeDef: HarnessDef = {
  ...pinned,
  id: 'claude',
  oneId: true,
  trespassTold: true,
  setup(sb, serverUrl) {
    // Onboarding done and the project trusted, as a user who has run it once has.
    writeJson(path.join(sb.home, '.claude.json'), {
      hasCompletedOnboarding: true,
      projects: { [sb.repo]: { hasTrustDialogAccepted: true, allowedTools: [] } },
    });
    return {
      ANTHROPIC_BASE_URL: serverUrl,
      ANTHROPIC_API_KEY: 'sk-ant-e2e',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    };
  },
  afterInstall(sb) {
    // Recorders only: the post-tool and turn-end payloads, for the recordings.
    const file = path.join(sb.repo, '.claude', 'settings.json');
    const settings = readJsonFile(file);
    const hooks = (settings.hooks ?? {}) as Record<string, unknown[]>;
    for (const event of ['PostToolUse', 'Stop', 'SubagentStop', 'UserPromptSubmit', 'SessionStart']) {
      if (JSON.stringify(hooks[event] ?? []).includes('e2e-record')) continue;
      hooks[event] = [
        ...(hooks[event] ?? []),
        { matcher: '*', hooks: [{ type: 'command', command: `e2e-record ${event}` }] },
      ];
    }
    writeJson(file, { ...settings, hooks });
  },
  args: (_sb, prompt) => [
    '-p',
    prompt,
    '--permission-mode',
    'acceptEdits',
    '--allowedTools',
    'Bash,Edit,Write,Read',
    '--output-format',
    'text',
  ],
  edit: (_tools, _wire, file, before, after) => [
    { name: 'Read', args: { file_path: file } },
    { name: 'Edit', args: { file_path: file, old_string: before, new_string: after } },
  ],
  shell: (_tools, _wire, command) => [{ name: 'Bash', args: { command, description: 'e2e step' } }],
};
