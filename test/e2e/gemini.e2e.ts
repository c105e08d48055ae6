/**
 * Gemini CLI in its real binary. Needs: GOOGLE_GEMINI_BASE_URL at our server with an API-key auth
 * type (GEMINI_API_KEY and `security.auth.selectedType: gemini-api-key`), the repository in
 * `~/.gemini/trustedFolders.json` (an untrusted folder runs without the project's hooks), and
 * `--approval-mode yolo` so the shell tool runs without a prompt in `-p`.
 */
import path from 'node:path';
import { HARNESSES } from '../../scripts/e2e-harnesses.mjs';
import { readJsonFile, writeJson } from './kit.js';
import { harnessSuite } from './suite.js';

const pinned = HARNESSES.find((h) => h.id === 'gemini');
if (!pinned) throw new Error('gemini is not pinned in scripts/e2e-harnesses.mjs');

harnessSuite({
  ...pinned,
  id: 'gemini',
  oneId: true,
  trespassTold: true,
  setup(sb, serverUrl) {
    writeJson(path.join(sb.home, '.gemini', 'settings.json'), {
      security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: true } },
      privacy: { usageStatisticsEnabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      telemetry: { enabled: false },
    });
    writeJson(path.join(sb.home, '.gemini', 'trustedFolders.json'), { [sb.repo]: 'TRUST_FOLDER' });
    // No relaunch in a child with a bigger heap: a few seconds less per session on a busy machine.
    return { GOOGLE_GEMINI_BASE_URL: serverUrl, GEMINI_API_KEY: 'e2e-key', GEMINI_CLI_NO_RELAUNCH: 'true' };
  },
  afterInstall(sb) {
    const file = path.join(sb.repo, '.gemini', 'settings.json');
    const settings = readJsonFile(file);
    const hooks = (settings.hooks ?? {}) as Record<string, unknown[]>;
    for (const event of ['AfterTool', 'AfterAgent', 'BeforeAgent', 'SessionStart', 'SessionEnd']) {
      if (JSON.stringify(hooks[event] ?? []).includes('e2e-record')) continue;
      hooks[event] = [
        ...(hooks[event] ?? []),
        { matcher: '*', hooks: [{ type: 'command', command: `e2e-record ${event}` }] },
      ];
    }
    writeJson(file, { ...settings, hooks });
  },
  args: (_sb, prompt) => ['-p', prompt, '--approval-mode', 'yolo', '-m', 'gemini-2.5-pro', '-o', 'text'],
  edit: (_tools, _wire, file, before, after) => [
    { name: 'replace', args: { file_path: file, old_string: before, new_string: after, instruction: 'e2e' } },
  ],
  shell: (_tools, _wire, command) => [
    { name: 'run_shell_command', args: { command, description: 'e2e step' } },
  ],
});
