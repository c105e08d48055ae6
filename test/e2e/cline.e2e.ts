/**
 * Cline CLI 3.0 in its real binary. Needs: `cline auth -p openai-compatible` at our server (base URL,
 * key, model), `--auto-approve true` (its default in a one-shot run), and the hook script
 * `alock hooks install --for cline` writes to `.clinerules/hooks/PreToolUse`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
  oneId: true,
  trespassTold: true,
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
    // Record only the events alock does not install itself (it writes PreToolUse and PostToolUse,
    // and may write more): a recorder in their place would make the next install refuse the file.
    for (const event of ['PostToolUse', 'TaskComplete', 'TaskStart', 'UserPromptSubmit', 'TaskCancel']) {
      const file = path.join(sb.repo, '.clinerules', 'hooks', event);
      if (!existsSync(file)) makeRecorderScript(file, event);
    }
  },
  // Cline CLI 3.0 reads a PreToolUse `cancel: true` as "stop the run" (the model never hears why),
  // so the hook answers it with the call's input replaced by null, which the tool rejects, and the
  // refusal as hook context: the model reads it in a <hook_context> message after the tool error.
  // --retries is Cline's limit of consecutive mistakes, and a refused call is one (a tool error):
  // at 1 the run ends before the model is asked again and reads the refusal (the default is 6).
  args: (_sb, prompt) => ['--auto-approve', 'true', '--retries', '2', prompt],
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
