/**
 * Claims on edit through every harness's hooks, in-process against a real file store: the first
 * edit claims the file, another agent's edit of it is refused, the harness's turn-end event (as it
 * sends it) ends the claim, and the other agent's edit then goes through. The pre-tool payloads are
 * the recorded ones of test/integrations/fixtures/hooks/; the stop payloads follow each harness's
 * documented shape (Claude Code's was recorded from Claude Code 2.1.332 by the end-to-end suite).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

type Json = Record<string, unknown>;
const HARNESSES = ['claude', 'codex', 'gemini', 'cursor', 'opencode', 'copilot', 'cline'] as const;
type Harness = (typeof HARNESSES)[number];

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

function fill(payload: unknown, absolute: boolean, rel = 'src/a.ts'): string {
  const file = absolute ? path.join(sandbox.tree, rel) : rel;
  return JSON.stringify(payload).replaceAll('{{TREE}}', sandbox.tree).replaceAll('{{FILE}}', file);
}

const CLAUDE_SESSION = 'ef37d7df-dc0f-4e7b-833d-d13fda7bd275';
const CLAUDE_AGENT = `claude-${CLAUDE_SESSION.slice(0, 8)}`;

/** An edit of `rel` as each harness sends it. */
function editPayload(harness: Harness, rel = 'src/a.ts', extra: Json = {}): string {
  if (harness === 'claude') {
    return JSON.stringify({
      session_id: CLAUDE_SESSION,
      cwd: sandbox.tree,
      permission_mode: 'acceptEdits',
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_input: { file_path: path.join(sandbox.tree, rel), old_string: 'a', new_string: 'b' },
      tool_use_id: 'toolu_mxa6lruq4',
      ...extra,
    });
  }
  const fx = JSON.parse(
    readFileSync(path.join(import.meta.dirname, 'fixtures', 'hooks', `${harness}.json`), 'utf8'),
  ) as { paths: string; edits: Record<string, Json> };
  const first = Object.values(fx.edits)[0]!;
  return fill({ ...first, ...extra }, fx.paths === 'absolute', rel);
}

/** The turn's end as each harness sends it (Cline: its task's end). */
function stopPayload(harness: Harness, extra: Json = {}): string {
  const tree = sandbox.tree;
  const payloads: Record<Harness, Json> = {
    claude: {
      session_id: CLAUDE_SESSION,
      cwd: tree,
      permission_mode: 'acceptEdits',
      hook_event_name: 'Stop',
      stop_hook_active: false,
      last_assistant_message: 'Done.',
    },
    codex: {
      session_id: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      cwd: tree,
      hook_event_name: 'Stop',
      stop_hook_active: false,
    },
    gemini: {
      session_id: '5f1c2d3e-4a5b-4c6d-8e7f-9a0b1c2d3e4f',
      cwd: tree,
      hook_event_name: 'AfterAgent',
      prompt: 'fix it',
      prompt_response: 'Done.',
      stop_hook_active: false,
    },
    cursor: {
      conversation_id: 'c0ffee00-1234-4abc-9def-0123456789ab',
      generation_id: 'gen-1',
      hook_event_name: 'stop',
      status: 'completed',
      loop_count: 0,
      workspace_roots: [tree],
    },
    opencode: { sessionID: 'ses_4f3e2d1c0b9aZyXwVuTs', directory: tree, event: 'session.idle' },
    copilot: { timestamp: 1764875399123, cwd: tree },
    cline: {
      clineVersion: '3.36.0',
      hookName: 'TaskComplete',
      timestamp: '1764875399123',
      taskId: '1764875399123',
      workspaceRoots: [tree],
      userId: 'u1',
    },
  };
  return JSON.stringify({ ...payloads[harness], ...extra });
}

async function hook(action: string, stdin: string, env: Json = {}) {
  let stdout = '';
  const code = await runCli(['hooks', action], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: () => {},
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', ...(env as Record<string, string>) },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  expect(code).toBe(0);
  return stdout;
}

const refused = (out: string) => /"deny"|"cancel":true|permission":"deny/.test(out);

async function claims(): Promise<string[]> {
  const listed = await sandbox.json('watcher', ['list']);
  const locks = (listed.body.locks ?? []) as { scope: string; agent_id: string; claim: unknown }[];
  return locks.filter((l) => l.claim !== null).map((l) => `${l.scope} ${l.agent_id}`);
}

describe.each(HARNESSES)('claims through the %s hooks', (harness) => {
  const end = harness === 'cline' ? `${harness}-session-end` : `${harness}-turn-end`;

  it("claims on the first edit, refuses another agent's, and ends at the turn's end", async () => {
    const first = await hook(`${harness}-pre-tool-use`, editPayload(harness));
    expect(refused(first)).toBe(false);
    const held = await claims();
    expect(held).toHaveLength(1);
    expect(held[0]).toMatch(/^src\/a\.ts /);
    // Another agent (another session, here named by AGENT_ID) is refused, naming the claim.
    const other = await hook(`${harness}-pre-tool-use`, editPayload(harness), { AGENT_ID: 'other-agent' });
    expect(refused(other)).toBe(true);
    expect(other).toContain('claims src/a.ts');
    // Another agent's turn end leaves it; the holder's ends it.
    await hook(end, stopPayload(harness), { AGENT_ID: 'other-agent' });
    expect(await claims()).toHaveLength(1);
    await hook(end, stopPayload(harness));
    expect(await claims()).toEqual([]);
    const after = await hook(`${harness}-pre-tool-use`, editPayload(harness), { AGENT_ID: 'other-agent' });
    expect(refused(after)).toBe(false);
    expect(await claims()).toEqual(['src/a.ts other-agent']);
    const log = await sandbox.run('watcher', ['log']);
    expect(log.stdout).toMatch(/RELEASED src\/a\.ts \S+ fence \d+ "editing \([^)]+\)": (turn|session) ended/);
  });

  it('claims nothing with AGENT_LOCK_CLAIM=off, and refuses on a bad value naming it', async () => {
    expect(
      refused(await hook(`${harness}-pre-tool-use`, editPayload(harness), { AGENT_LOCK_CLAIM: 'off' })),
    ).toBe(false);
    expect(await claims()).toEqual([]);
    const bad = await hook(`${harness}-pre-tool-use`, editPayload(harness), { AGENT_LOCK_CLAIM: 'maybe' });
    expect(refused(bad)).toBe(true);
    expect(bad).toContain('AGENT_LOCK_CLAIM');
    expect(await claims()).toEqual([]);
  });
});

describe('claims of Claude Code sub-agents', () => {
  it("a sub-agent's claim does not block its parent, blocks its sibling, and SubagentStop ends only its own", async () => {
    const sub = (id: string) => ({ agent_id: id, agent_type: 'general-purpose' });
    expect(
      refused(await hook('claude-pre-tool-use', editPayload('claude', 'src/a.ts', sub('aaaa1111')))),
    ).toBe(false);
    expect(
      refused(await hook('claude-pre-tool-use', editPayload('claude', 'src/b.ts', sub('bbbb2222')))),
    ).toBe(false);
    // The sibling is refused; the parent edits on without a claim of its own.
    expect(
      refused(await hook('claude-pre-tool-use', editPayload('claude', 'src/a.ts', sub('bbbb2222')))),
    ).toBe(true);
    expect(refused(await hook('claude-pre-tool-use', editPayload('claude', 'src/a.ts')))).toBe(false);
    expect((await claims()).sort()).toEqual([
      'src/a.ts claude-ef37d7df-aaaa1111',
      'src/b.ts claude-ef37d7df-bbbb2222',
    ]);
    await hook(
      'claude-turn-end',
      stopPayload('claude', { hook_event_name: 'SubagentStop', ...sub('aaaa1111') }),
    );
    expect(await claims()).toEqual(['src/b.ts claude-ef37d7df-bbbb2222']);
    // The main agent's Stop ends its sub-agents' claims too.
    await hook('claude-turn-end', stopPayload('claude'));
    expect(await claims()).toEqual([]);
  });

  it('keeps claims over a turn end with AGENT_LOCK_CLAIM_UNTIL=session, until the session ends', async () => {
    const env = { AGENT_LOCK_CLAIM_UNTIL: 'session' };
    await hook('claude-pre-tool-use', editPayload('claude'), env);
    await hook('claude-turn-end', stopPayload('claude'), env);
    expect(await claims()).toHaveLength(1);
    await hook(
      'claude-session-end',
      stopPayload('claude', { hook_event_name: 'SessionEnd', reason: 'exit' }),
      env,
    );
    expect(await claims()).toEqual([]);
  });
});

describe('claims of shell writes', () => {
  it('a shell command that writes a file claims it for the agent, as an edit does', async () => {
    const bash = (command: string, env: Json = {}) =>
      hook(
        'claude-pre-tool-use',
        JSON.stringify({
          session_id: CLAUDE_SESSION,
          cwd: sandbox.tree,
          hook_event_name: 'PreToolUse',
          tool_name: 'Bash',
          tool_input: { command },
        }),
        env,
      );
    expect(refused(await bash('echo x > src/sh.ts'))).toBe(false);
    const listed = await sandbox.json('watcher', ['list']);
    expect(listed.body.locks.map((l) => [l.scope, l.claim])).toEqual([
      ['src/sh.ts', expect.objectContaining({ tool: 'Bash' })],
    ]);
    const other = await bash('echo y >> src/sh.ts', { AGENT_ID: 'other-agent' });
    expect(refused(other)).toBe(true);
    // A command that writes nothing claims nothing.
    expect(refused(await bash('ls src', { AGENT_ID: 'other-agent' }))).toBe(false);
    expect((await sandbox.json('watcher', ['list'])).body.locks).toHaveLength(1);
  });

  it('a command only the full shell grammar reads claims what it writes, though nobody holds anything', async () => {
    const bash = (command: string, env: Json = {}) =>
      hook(
        'claude-pre-tool-use',
        JSON.stringify({
          session_id: CLAUDE_SESSION,
          cwd: sandbox.tree,
          hook_event_name: 'PreToolUse',
          tool_name: 'Bash',
          tool_input: { command },
        }),
        env,
      );
    // With claims on, the shortcut that lets a command go unread when nothing held could be among
    // its targets is off: every target is read, and claimed.
    expect(refused(await bash('for n in 1 2; do printf "$n" > src/loop.ts; done'))).toBe(false);
    expect(await claims()).toEqual([`src/loop.ts ${CLAUDE_AGENT}`]);
    // With claims off, the same kind of command claims nothing.
    const off = { AGENT_LOCK_CLAIM: 'off' };
    expect(refused(await bash('for n in 1; do printf x > src/off.ts; done', off))).toBe(false);
    expect(refused(await bash('echo x > src/off2.ts', off))).toBe(false);
    expect(await claims()).toEqual([`src/loop.ts ${CLAUDE_AGENT}`]);
  });
});

describe('waiting for a claim', () => {
  it('refuses at once, naming the cycle, a wait for an agent that waits for this one', async () => {
    const as = (session: string, rel: string) =>
      JSON.stringify({
        session_id: session,
        cwd: sandbox.tree,
        hook_event_name: 'PreToolUse',
        tool_name: 'Edit',
        tool_input: { file_path: path.join(sandbox.tree, rel) },
      });
    const wait = { AGENT_LOCK_HOOK_WAIT: '60' };
    // Random UUIDs, as Claude Code's session ids are: each named by its first 8 digits.
    const A = 'aaaa0001-0000-4000-8000-00000000000a';
    const B = 'bbbb0002-0000-4000-8000-00000000000b';
    expect(refused(await hook('claude-pre-tool-use', as(A, 'src/a.ts')))).toBe(false);
    expect(refused(await hook('claude-pre-tool-use', as(B, 'src/b.ts')))).toBe(false);
    // A waits for B's file...
    const aWaits = hook('claude-pre-tool-use', as(A, 'src/b.ts'), wait);
    for (;;) {
      if (((await sandbox.json('watcher', ['list'])).body.waiting as unknown[]).length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // ...so B's wait for A's file could never end: refused at once, not after 60 s.
    const bOut = await hook('claude-pre-tool-use', as(B, 'src/a.ts'), wait);
    expect(refused(bOut)).toBe(true);
    expect(bOut).toContain('claude-aaaa0001 waits for src/b.ts, which claude-bbbb0002 holds');
    // B's turn ends: A's wait is granted and becomes A's claim.
    await hook(
      'claude-turn-end',
      JSON.stringify({ session_id: B, cwd: sandbox.tree, hook_event_name: 'Stop' }),
    );
    expect(refused(await aWaits)).toBe(false);
    expect((await claims()).sort()).toEqual(['src/a.ts claude-aaaa0001', 'src/b.ts claude-aaaa0001']);
  });
});
