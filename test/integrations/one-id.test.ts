/**
 * One agent, one id, whichever door it comes through: a lock taken through `alock` in the agent's
 * shell (its environment), or through the MCP server (the same environment), is the agent's own
 * when its hook checks an edit (the payload), and another session's hook is refused it.
 */
import { readFileSync } from 'node:fs';
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
  { harness: 'gemini', variable: 'GEMINI_SESSION_ID' },
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
