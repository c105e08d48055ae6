/**
 * One agent, one id, whichever door it comes through: a lock taken through `alock` in the agent's
 * shell (its environment), or through the MCP server (the same environment), is the agent's own
 * when its hook checks an edit (the payload), and another session's hook is refused it.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';
import { connect } from '../mcp/mcp-harness.js';

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

/** The hook's edit payload for `session` (another fixture session when `other`). */
function editPayload(harness: string, session: string): string {
  if (harness === 'claude') {
    return JSON.stringify({
      session_id: session,
      cwd: sandbox.tree,
      hook_event_name: 'PreToolUse',
      tool_name: 'Write',
      tool_input: { file_path: path.join(sandbox.tree, 'src/a.ts'), content: 'x' },
    });
  }
  const fx = JSON.parse(
    readFileSync(path.join(import.meta.dirname, 'fixtures', 'hooks', `${harness}.json`), 'utf8'),
  ) as { edits: Record<string, unknown>; paths: string };
  const [payload] = Object.values(fx.edits);
  const file = fx.paths === 'absolute' ? path.join(sandbox.tree, 'src/a.ts') : 'src/a.ts';
  const text = JSON.stringify(payload).replaceAll('{{TREE}}', sandbox.tree).replaceAll('{{FILE}}', file);
  const p = JSON.parse(text) as Record<string, unknown>;
  // Each harness names the session in its own field (Copilot: sessionId).
  if (harness === 'copilot') p.sessionId = session;
  else p.session_id = session;
  return JSON.stringify(p);
}

async function hookDenies(
  harness: string,
  session: string,
  env: Record<string, string> = {},
): Promise<boolean> {
  let stdout = '';
  await runCli(['hooks', `${harness}-pre-tool-use`], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: () => {},
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', ...env },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => editPayload(harness, session),
  });
  return /"deny"|"cancel":true/.test(stdout);
}

/** Each harness: the variable its shell and MCP server see, the payload field its hook reads. */
const DOORS = [
  { harness: 'claude', variable: 'CLAUDE_CODE_SESSION_ID' },
  { harness: 'codex', variable: 'CODEX_THREAD_ID' },
  // Copilot CLI exports its session to its shell and MCP servers; its hook payload names it too.
  { harness: 'copilot', variable: 'COPILOT_AGENT_SESSION_ID' },
] as const;

const SESSION = '7e57ab1e-0000-4000-8000-000000000001';
const OTHER = '0beef000-0000-4000-8000-000000000002';

describe.each(DOORS)('$harness: one id through shell, MCP server and hook', ({ harness, variable }) => {
  it("a lock taken with alock in the shell is the hook's own, and not another session's", async () => {
    const env = { AGENT_ID: undefined, [variable]: SESSION };
    const taken = await sandbox.json('unused', ['acquire', 'src/a.ts', '-m', 'shell door'], env);
    expect(taken.body.agent?.id).toBe(`${harness}-7e57ab1e`);
    expect(await hookDenies(harness, SESSION)).toBe(false);
    expect(await hookDenies(harness, OTHER)).toBe(true);
  });

  it("a lock taken through the MCP server is the hook's own, and not another session's", async () => {
    const mcp = await connect('unused', sandbox, { AGENT_ID: undefined, [variable]: SESSION });
    try {
      const r = await mcp.call('acquire', { scopes: ['src/a.ts'], intent: 'mcp door' });
      expect(r.body.status).toBe('acquired');
      expect(r.body.agent?.id).toBe(`${harness}-7e57ab1e`);
    } finally {
      await mcp.close();
    }
    expect(await hookDenies(harness, SESSION)).toBe(false);
    expect(await hookDenies(harness, OTHER)).toBe(true);
  });
});

describe.each(['cursor', 'opencode', 'cline', 'copilot'])(
  '%s: AGENT_ID set where the agent starts',
  (harness) => {
    it('names the agent in shell, MCP server and hook alike', async () => {
      const mcp = await connect('team-a', sandbox);
      try {
        expect((await mcp.call('acquire', { scopes: ['src/a.ts'] })).body.status).toBe('acquired');
      } finally {
        await mcp.close();
      }
      expect(await hookDenies(harness, SESSION, { AGENT_ID: 'team-a' })).toBe(false);
      expect(await hookDenies(harness, SESSION, { AGENT_ID: 'team-b' })).toBe(true);
    });
  },
);

/**
 * A stand-in for a harness process: it runs the agent's shell command (`alock acquire`) and its
 * hook (`alock hooks <harness>-pre-tool-use`) as its children through `sh -c`, each with the
 * environment the real harness gives it, then starts another harness process that runs the hook
 * alone (another session) while this one, whose process holds the lock, still runs.
 */
const FAKE_HARNESS = `
const { spawnSync } = require('node:child_process');
const [alock, harness, payload, shellEnv, hookEnv, mode] = process.argv.slice(2);
const sh = (command, env, input) =>
  spawnSync('sh', ['-c', command], { env: { ...process.env, ...JSON.parse(env) }, input, encoding: 'utf8' });
const hook = () => sh(\`"\${process.execPath}" "\${alock}" hooks \${harness}-pre-tool-use\`, hookEnv, payload).stdout;
if (mode === 'hook') {
  process.stdout.write(JSON.stringify({ hook: hook() }));
} else {
  const run = (args) => sh(\`"\${process.execPath}" "\${alock}" \${args}\`, shellEnv).stdout;
  const acquired = run('acquire src/a.ts -m "shell door" --json');
  const own = hook();
  const other = spawnSync(process.execPath, [__filename, alock, harness, payload, shellEnv, hookEnv, 'hook'], {
    encoding: 'utf8',
  }).stdout;
  const released = run('release src/a.ts --json');
  process.stdout.write(JSON.stringify({ acquired, own, other: JSON.parse(other).hook, released }));
}
`;

/** What Gemini CLI 0.61 puts in its shell commands' and hooks' environments. */
const BY_PROCESS = [
  {
    harness: 'gemini',
    shell: { GEMINI_CLI: '1' },
    hook: { GEMINI_SESSION_ID: SESSION },
  },
] as const;

/** Variables that would name the agent before the harness process does, left out of the run. */
const SESSION_VARIABLES = [
  'AGENT_ID',
  'AGENT_PARENT_ID',
  'CLAUDE_CODE_SESSION_ID',
  'CLAUDE_SESSION_ID',
  'CODEX_THREAD_ID',
  'COPILOT_AGENT_SESSION_ID',
  'OPENCODE_SESSION_ID',
  'GEMINI_CLI',
  'GEMINI_SESSION_ID',
  'CLINE_CONNECTOR_CLI_LAUNCH',
];

describe.each(BY_PROCESS)('$harness: its shell gets no session id', ({ harness, shell, hook }) => {
  it('names the agent by the harness process in shell and hook alike, and another process apart', () => {
    const script = path.join(sandbox.outside, 'fake-harness.cjs');
    writeFileSync(script, FAKE_HARNESS);
    const env: Record<string, string | undefined> = { ...process.env };
    for (const k of SESSION_VARIABLES) delete env[k];
    env.AGENT_LOCK_DIR = sandbox.store;
    env.AGENT_LOCK_REDIS_PROBE = 'off';
    const alockJs = path.join(import.meta.dirname, '..', '..', 'bin', 'alock.js');
    const out = JSON.parse(
      execFileSync(
        process.execPath,
        [
          script,
          alockJs,
          harness,
          editPayload(harness, SESSION),
          JSON.stringify(shell),
          JSON.stringify(hook),
        ],
        { cwd: sandbox.tree, env, encoding: 'utf8' },
      ),
    ) as Record<string, string>;
    const acquired = JSON.parse(out.acquired ?? '{}') as { status: string; agent?: { id: string } };
    expect(acquired.status).toBe('acquired');
    expect(acquired.agent?.id).toMatch(new RegExp(`^${harness}-[0-9a-f]{8}$`));
    // Its own hook lets it edit inside its lock; the hook of another harness process is refused.
    expect(out.own).not.toMatch(/"deny"|"cancel":true|"errorMessage"/);
    expect(out.other).toMatch(new RegExp(`${acquired.agent?.id}`));
    const released = JSON.parse(out.released ?? '{}') as { status: string };
    expect(released.status).toBe('released');
  });
});

/** A Cline CLI 3.0 pre-tool payload (hookName tool_call) of task `task`. */
function clinePayload(task: string, tool: string, input: Record<string, unknown>): string {
  return JSON.stringify({
    taskId: `conv_${task}`,
    sessionContext: { rootSessionId: task },
    workspaceRoots: [sandbox.tree],
    agent_id: 'agent_1796464433347_fonp4h',
    parent_agent_id: null,
    hookName: 'tool_call',
    tool_call: { id: 'call_1', name: tool, input },
    preToolUse: { toolName: tool, parameters: {} },
  });
}

async function clineHook(stdin: string): Promise<Record<string, unknown>> {
  let stdout = '';
  await runCli(['hooks', 'cline-pre-tool-use'], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: () => {},
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off' },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('cline: its shell gets no task id, and one hub daemon runs every task', () => {
  it("exports the hook's id into the commands, so the shell's alock is the agent its hook names", async () => {
    const task = '1796464431654_l2j4i';
    const answer = await clineHook(
      clinePayload(task, 'run_commands', { commands: ['alock acquire src/a.ts --json', 'ls'] }),
    );
    expect(answer.cancel).toBe(false);
    const commands = (answer.overrideInput as { commands: string[] }).commands;
    // Only a command that can take or check a lock is rewritten.
    expect(commands[1]).toBe('ls');
    expect(commands[0]).toMatch(/^export AGENT_ID=cline-[0-9a-f]{8} AGENT_PARENT_ID=none; alock acquire/);
    // The rewritten command run by a shell, as the hub daemon runs it.
    const bin = path.join(sandbox.outside, 'bin');
    mkdirSync(bin, { recursive: true });
    symlinkSync(path.join(import.meta.dirname, '..', '..', 'bin', 'alock.js'), path.join(bin, 'alock'));
    const env: Record<string, string | undefined> = { ...process.env };
    for (const k of SESSION_VARIABLES) delete env[k];
    Object.assign(env, {
      PATH: `${bin}:${process.env.PATH}`,
      AGENT_LOCK_DIR: sandbox.store,
      AGENT_LOCK_REDIS_PROBE: 'off',
    });
    const out = JSON.parse(
      execFileSync('sh', ['-c', commands[0]!], { cwd: sandbox.tree, env, encoding: 'utf8' }),
    ) as { status: string; agent: { id: string; parent_id: string | null } };
    expect(out.status).toBe('acquired');
    expect(out.agent.parent_id).toBeNull();
    // The same task's edit of its own lock goes; another task's is refused, naming the agent.
    const edit = (t: string) =>
      clineHook(
        clinePayload(t, 'editor', {
          path: path.join(sandbox.tree, 'src/a.ts'),
          old_text: 'a',
          new_text: 'b',
        }),
      );
    expect((await edit(task)).overrideInput).toBeUndefined();
    const other = await edit('1796464431655_zz9q0');
    expect(other.overrideInput).toBeNull();
    expect(String(other.context)).toContain(out.agent.id);
  });
});
