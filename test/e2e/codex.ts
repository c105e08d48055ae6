/**
 * Codex in its real binary (`codex exec`). Needs: a custom model provider in $CODEX_HOME/config.toml
 * (`wire_api = "responses"`) with a model slug from Codex's own catalog (else it offers no
 * apply_patch), the project trusted (`[projects."<repo>"] trust_level = "trusted"`), and each project
 * hook trusted: Codex keeps a hash of every hook entry (`[hooks.state."<key>"] trusted_hash`) and runs
 * an untrusted one never. The hashes are read the way Codex's own /hooks screen reads them, from
 * `codex app-server` (`hooks/list`). The sandbox is Codex's `workspace-write`, where `.git` is
 * read-only.
 */
import { spawn } from 'node:child_process';
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { binaryPath, HARNESSES } from '../../scripts/e2e-harnesses.mjs';
import { readJsonFile, type Sandbox, writeJson } from './kit.js';
import type { ToolCall } from './model-server.js';
import type { HarnessDef } from './suite.js';

const pinned = HARNESSES.find((h) => h.id === 'codex');
if (!pinned) throw new Error('codex is not pinned in scripts/e2e-harnesses.mjs');
const codex = pinned;

function codexHome(sb: Sandbox): string {
  return path.join(sb.home, '.codex');
}

interface ListedHook {
  readonly key: string;
  readonly currentHash: string;
  readonly trustStatus: string;
}

/** Asks `codex app-server` for the project's hooks and their hashes (JSON-RPC over stdio). */
function listHooks(sb: Sandbox): Promise<ListedHook[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(binaryPath(codex), ['app-server'], {
      cwd: sb.repo,
      env: { ...sb.env, CODEX_HOME: codexHome(sb) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let buffer = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`codex app-server gave no hooks/list answer: ${buffer}`));
    }, 60_000);
    child.stdout.on('data', (d: Buffer) => {
      buffer += d.toString('utf8');
      for (const line of buffer.split('\n')) {
        if (!line.startsWith('{"id":2')) continue;
        clearTimeout(timer);
        child.kill('SIGTERM');
        const answer = JSON.parse(line) as { result?: { data?: Array<{ hooks?: ListedHook[] }> } };
        resolve(answer.result?.data?.flatMap((d) => d.hooks ?? []) ?? []);
        return;
      }
    });
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { clientInfo: { name: 'alock-e2e', version: '1' } } })}\n`,
    );
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'initialized' })}\n`);
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'hooks/list', params: { cwds: [sb.repo] } })}\n`,
    );
  });
}

export const codexDef: HarnessDef = {
  ...codex,
  id: 'codex',
  oneId: true,
  trespassTold: true,
  setup(sb, serverUrl) {
    mkdirSync(codexHome(sb), { recursive: true });
    writeFileSync(
      path.join(codexHome(sb), 'config.toml'),
      `model = "gpt-5.5"
model_provider = "e2e"
approval_policy = "never"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

[model_providers.e2e]
name = "e2e"
base_url = "${serverUrl}/v1"
wire_api = "responses"
env_key = "E2E_OPENAI_KEY"

[projects."${sb.repo}"]
trust_level = "trusted"
`,
    );
    return { CODEX_HOME: codexHome(sb), E2E_OPENAI_KEY: 'e2e-key' };
  },
  async afterInstall(sb) {
    const file = path.join(sb.repo, '.codex', 'hooks.json');
    const settings = readJsonFile(file);
    const hooks = (settings.hooks ?? {}) as Record<string, unknown[]>;
    for (const event of ['PostToolUse', 'Stop', 'UserPromptSubmit', 'SessionStart']) {
      if (JSON.stringify(hooks[event] ?? []).includes('e2e-record')) continue;
      hooks[event] = [
        ...(hooks[event] ?? []),
        { hooks: [{ type: 'command', command: `e2e-record ${event}` }] },
      ];
    }
    writeJson(file, { ...settings, hooks });
    // Trust each hook as a user does in Codex's /hooks screen: its current hash recorded in config.toml.
    const listed = await listHooks(sb);
    const lines = listed
      .filter((h) => h.trustStatus !== 'trusted')
      .map(
        (h) => `\n[hooks.state.${JSON.stringify(h.key)}]\ntrusted_hash = ${JSON.stringify(h.currentHash)}\n`,
      );
    appendFileSync(path.join(codexHome(sb), 'config.toml'), lines.join(''));
  },
  // Codex turns a shell `apply_patch <<'EOF'` into its own patch tool, after the hook has seen it
  // as a Bash command (recordings/codex-0.171.0/codex-pre-tool-use--Bash-apply_patch-heredoc.json):
  // the shell check reads the heredoc's patch and refuses it.
  extraHeldShell: {
    'held-bash-apply_patch':
      "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.ts\n@@\n-export const a = 1;\n+export const a = 9;\n*** End Patch\nEOF",
  },
  args: (_sb, prompt) => ['exec', '--color', 'never', prompt],
  edit: (tools, _wire, file, before, after) => {
    const name = tools.includes('apply_patch') ? 'apply_patch' : null;
    if (!name) return [];
    const patch = `*** Begin Patch\n*** Update File: ${file}\n@@\n-${before}\n+${after}\n*** End Patch\n`;
    return [{ name, args: patch }];
  },
  shell: (tools, _wire, command) => {
    const calls: ToolCall[] = [];
    if (tools.includes('exec_command')) calls.push({ name: 'exec_command', args: { cmd: command } });
    else if (tools.includes('shell_command')) calls.push({ name: 'shell_command', args: { command } });
    else if (tools.includes('shell'))
      calls.push({ name: 'shell', args: { command: ['bash', '-lc', command] } });
    return calls;
  },
};
