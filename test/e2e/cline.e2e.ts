/**
 * Cline CLI 3.0 in its real binary. Needs: `cline auth -p openai-compatible` at our server (base URL,
 * key, model), `--auto-approve true` (its default in a one-shot run), and the hook script
 * `alock hooks install --for cline` writes to `.clinerules/hooks/PreToolUse`.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { binaryPath, HARNESSES } from '../../scripts/e2e-harnesses.mjs';
import { makeRecorderScript } from './kit.js';
import type { ToolCall } from './model-server.js';
import { harnessSuite } from './suite.js';

const pinned = HARNESSES.find((h) => h.id === 'cline');
if (!pinned) throw new Error('cline is not pinned in scripts/e2e-harnesses.mjs');
const cline = pinned;

harnessSuite({
  ...cline,
  id: 'cline',
  setup(sb, serverUrl) {
    const auth = spawnSync(
      binaryPath(cline),
      ['auth', '-p', 'openai-compatible', '-k', 'e2e-key', '-m', 'e2e-model', '-b', `${serverUrl}/v1`],
      { cwd: sb.repo, env: sb.env, encoding: 'utf8', timeout: 60_000 },
    );
    if (auth.status !== 0) throw new Error(`cline auth failed: ${auth.stderr || auth.stdout}`);
    return {};
  },
  afterInstall(sb) {
    for (const event of ['PostToolUse', 'TaskComplete', 'TaskStart', 'UserPromptSubmit', 'TaskCancel']) {
      makeRecorderScript(path.join(sb.repo, '.clinerules', 'hooks', event), event);
    }
  },
  // Cline CLI 3.0 names its tools `editor`, `run_commands`, `read_files`, `apply_patch`; the hook
  // reads only the extension's `write_to_file`, `replace_in_file`, `execute_command`, so it lets
  // these through (the payload it gets is in recordings/). Written as failing cases: when the hook
  // learns these tools they start passing, `it.fails` then fails, and these lines go.
  knownFailing: {
    'held-edit': 'the hook does not read Cline 3.0 `editor` calls',
    'held-echo': 'the hook does not read Cline 3.0 `run_commands` calls',
    'held-sed': 'the hook does not read Cline 3.0 `run_commands` calls',
  },
  args: (_sb, prompt) => ['--auto-approve', 'true', '--retries', '1', prompt],
  edit: (tools, _wire, file, before, after) => {
    const calls: ToolCall[] = [];
    if (tools.includes('editor')) {
      calls.push({
        name: 'editor',
        args: { path: file, old_text: before, new_text: after },
      });
    } else if (tools.includes('replace_in_file')) {
      calls.push({
        name: 'replace_in_file',
        args: { path: file, diff: `------- SEARCH\n${before}\n=======\n${after}\n+++++++ REPLACE` },
      });
    }
    return calls;
  },
  shell: (tools, _wire, command) => {
    if (tools.includes('run_commands')) return [{ name: 'run_commands', args: { commands: [command] } }];
    if (tools.includes('execute_command')) {
      return [{ name: 'execute_command', args: { command, requires_approval: false } }];
    }
    return [];
  },
});
