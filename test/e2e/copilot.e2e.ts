/**
 * GitHub Copilot CLI in its real binary. Needs: a custom model provider (COPILOT_PROVIDER_BASE_URL at
 * our server, Chat Completions, offline mode so no GitHub sign-in), the repository in `trustedFolders`
 * of $COPILOT_HOME/config.json (repository hooks are skipped outside it in `-p`), and
 * `--allow-all-tools` so the shell tool runs without a prompt.
 */
import path from 'node:path';
import { HARNESSES } from '../../scripts/e2e-harnesses.mjs';
import { readJsonFile, type Sandbox, writeJson } from './kit.js';
import type { ToolCall } from './model-server.js';
import { harnessSuite } from './suite.js';

const pinned = HARNESSES.find((h) => h.id === 'copilot');
if (!pinned) throw new Error('copilot is not pinned in scripts/e2e-harnesses.mjs');

function copilotHome(sb: Sandbox): string {
  return path.join(sb.home, '.copilot');
}

harnessSuite({
  ...pinned,
  id: 'copilot',
  oneId: true,
  setup(sb, serverUrl) {
    writeJson(path.join(copilotHome(sb), 'config.json'), { trustedFolders: [sb.repo], banner: 'never' });
    return {
      COPILOT_HOME: copilotHome(sb),
      COPILOT_PROVIDER_BASE_URL: `${serverUrl}/v1`,
      COPILOT_PROVIDER_TYPE: 'openai',
      COPILOT_PROVIDER_API_KEY: 'e2e-key',
      COPILOT_MODEL: 'gpt-4.1',
      COPILOT_OFFLINE: 'true',
      COPILOT_AUTO_UPDATE: 'false',
    };
  },
  afterInstall(sb) {
    const file = path.join(sb.repo, '.github', 'hooks', 'agent-lock.json');
    const settings = readJsonFile(file);
    const hooks = (settings.hooks ?? {}) as Record<string, unknown[]>;
    for (const event of ['postToolUse', 'sessionEnd', 'agentStop', 'userPromptSubmitted', 'sessionStart']) {
      if (JSON.stringify(hooks[event] ?? []).includes('e2e-record')) continue;
      hooks[event] = [
        ...(hooks[event] ?? []),
        { type: 'command', bash: `e2e-record ${event}`, timeoutSec: 30 },
      ];
    }
    writeJson(file, { ...settings, hooks });
  },
  args: (_sb, prompt) => ['-p', prompt, '--allow-all-tools', '--no-color', '-s'],
  edit: (tools, _wire, file, before, after) => {
    const calls: ToolCall[] = [];
    if (tools.includes('view')) calls.push({ name: 'view', args: { path: file } });
    if (tools.includes('edit'))
      calls.push({ name: 'edit', args: { path: file, old_str: before, new_str: after } });
    else if (tools.includes('str_replace_editor')) {
      calls.push({
        name: 'str_replace_editor',
        args: { command: 'str_replace', path: file, old_str: before, new_str: after },
      });
    }
    return calls;
  },
  shell: (tools, _wire, command) => {
    if (tools.includes('bash')) {
      return [{ name: 'bash', args: { command, description: 'e2e step', sessionId: 'e2e', async: false } }];
    }
    return [];
  },
});
