/**
 * OpenCode in its real binary (`opencode run`). Needs: an `@ai-sdk/openai-compatible` provider at our
 * server in its config (OpenCode installs that package from npm on first use), tools allowed without
 * a prompt (`permission`), and the plugin `alock hooks install --for opencode` writes to
 * `.opencode/plugins/` (loaded from the project without any trust step).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { HARNESSES } from '../../scripts/e2e-harnesses.mjs';
import { writeJson } from './kit.js';
import type { ToolCall } from './model-server.js';
import { harnessSuite } from './suite.js';

const pinned = HARNESSES.find((h) => h.id === 'opencode');
if (!pinned) throw new Error('opencode is not pinned in scripts/e2e-harnesses.mjs');

// Records what OpenCode hands a plugin after a tool and at the end of a turn (for the recordings).
const RECORDER = `import { writeFileSync } from 'node:fs';
const dir = process.env.AGENT_LOCK_E2E_PAYLOADS;
let n = 0;
const keep = (name, value) => {
  if (!dir) return;
  n++;
  writeFileSync(dir + '/' + process.hrtime.bigint() + n + '-' + name + '.json', JSON.stringify(value));
};
export const E2eRecord = async () => ({
  'tool.execute.before': async (input, output) => keep('tool.execute.before', { ...input, args: output.args }),
  'tool.execute.after': async (input, output) => keep('tool.execute.after', { ...input, output }),
  event: async ({ event }) => {
    if (event.type === 'session.idle' || event.type === 'session.error') keep(event.type, event);
  },
});
`;

harnessSuite({
  ...pinned,
  id: 'opencode',
  oneId: true,
  trespassTold: true,
  setup(sb, serverUrl) {
    writeJson(path.join(sb.home, '.config', 'opencode', 'opencode.json'), {
      $schema: 'https://opencode.ai/config.json',
      autoupdate: false,
      share: 'disabled',
      model: 'e2e/e2e-model',
      small_model: 'e2e/e2e-model',
      provider: {
        e2e: {
          npm: '@ai-sdk/openai-compatible',
          name: 'e2e',
          options: { baseURL: `${serverUrl}/v1`, apiKey: 'e2e-key' },
          models: { 'e2e-model': { name: 'e2e model', tool_call: true } },
        },
      },
      permission: { edit: 'allow', bash: 'allow', external_directory: 'allow' },
    });
    // Nothing fetched from the internet (there is none here): models list, default plugins, updates.
    return {
      OPENCODE_DISABLE_AUTOUPDATE: 'true',
      OPENCODE_DISABLE_LSP_DOWNLOAD: 'true',
      OPENCODE_DISABLE_MODELS_FETCH: 'true',
      OPENCODE_DISABLE_DEFAULT_PLUGINS: 'true',
      OPENCODE_DISABLE_SHARE: 'true',
    };
  },
  afterInstall(sb) {
    writeFileSync(path.join(sb.repo, '.opencode', 'plugins', 'e2e-record.js'), RECORDER);
  },
  args: (_sb, prompt) => ['run', prompt],
  edit: (tools, _wire, file, before, after) => {
    const calls: ToolCall[] = [];
    if (tools.includes('read')) calls.push({ name: 'read', args: { filePath: file } });
    if (tools.includes('edit'))
      calls.push({ name: 'edit', args: { filePath: file, oldString: before, newString: after } });
    return calls;
  },
  shell: (tools, _wire, command) =>
    tools.includes('bash') ? [{ name: 'bash', args: { command, description: 'e2e step' } }] : [],
});
