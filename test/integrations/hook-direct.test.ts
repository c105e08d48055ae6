/**
 * `bin/alock.js hooks <harness>-pre-tool-use` answers without loading the command line; it must
 * answer exactly as the full command line does (`--dir .` forces that path), for a real process.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { plainPayload } from '../../src/integrations/claude-hook.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

const BIN = path.resolve('bin/alock.js');

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

function spawnHook(argv: string[], payload: unknown) {
  const r = spawnSync(process.execPath, [BIN, ...argv], {
    cwd: sandbox.tree,
    input: JSON.stringify(payload),
    env: { ...process.env, AGENT_ID: '', AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off' },
    encoding: 'utf8',
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('the hook runtime called directly by bin/alock.js', () => {
  it.each([
    ['claude', { session_id: 'abc12345-9', cwd: '', hook_event_name: 'PreToolUse', tool_name: 'Write' }],
    ['codex', { session_id: 'abc12345-9', cwd: '', hook_event_name: 'PreToolUse', tool_name: 'apply_patch' }],
  ])('answers a %s edit of a held file as the full command line does', async (harness, base) => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(0);
    const payload = {
      ...base,
      cwd: sandbox.tree,
      tool_input:
        harness === 'claude'
          ? { file_path: path.join(sandbox.tree, 'src/a.ts'), content: 'x' }
          : { command: '*** Begin Patch\n*** Update File: src/a.ts\n@@\n-a\n+b\n*** End Patch\n' },
    };
    const direct = spawnHook(['hooks', `${harness}-pre-tool-use`], payload);
    const full = spawnHook(['--dir', '.', 'hooks', `${harness}-pre-tool-use`], payload);
    expect(direct.code).toBe(0);
    expect(direct.stderr).toBe('');
    expect(direct.stdout).toContain('"permissionDecision":"deny"');
    expect(direct.stdout).toContain('refactor login');
    expect(direct).toEqual(full);
    // A free file: no answer at all, either way.
    const free = { ...payload, tool_input: { file_path: path.join(sandbox.tree, 'src/b.ts'), content: 'x' } };
    if (harness === 'claude') expect(spawnHook(['hooks', 'claude-pre-tool-use'], free).stdout).toBe('');
  });

  it('leaves any other hooks command to the command line', () => {
    const r = spawnHook(['hooks', 'frobnicate'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: unknown hooks action "frobnicate" \(/);
  });
});

describe('the Claude Code payload read without zod', () => {
  const base = { session_id: ' 11112222-3333 ', tool_name: 'Edit', cwd: '/w', extra: [1] };
  const payloads: unknown[] = [
    base,
    { ...base, tool_input: { file_path: 'a.ts', '2': 'x', nested: { a: 1 } } },
    { ...base, agent_id: 'agent_1', agent_type: 'general', hook_event_name: 'PreToolUse' },
    { ...base, session_id: '   ' },
    { ...base, session_id: 7 },
    { ...base, tool_name: '' },
    { ...base, tool_input: [] },
    { ...base, tool_input: null },
    { ...base, cwd: 3 },
    { ...base, agent_id: null },
    JSON.parse('{"session_id":"s","tool_name":"Bash","tool_input":{"__proto__":{"x":1},"command":"ls"}}'),
    JSON.parse('{"__proto__":{},"session_id":"s","tool_name":"Bash"}'),
    [],
    null,
    'text',
  ];
  it('reads a payload exactly as the schema does, and leaves every other one to the schema', async () => {
    const { PayloadSchema } = await import('../../src/integrations/claude-payload.js');
    let plain = 0;
    for (const payload of payloads) {
      const read = plainPayload(payload);
      const parsed = PayloadSchema.safeParse(payload);
      if (read === null) continue;
      plain += 1;
      expect(parsed.success).toBe(true);
      expect(read).toStrictEqual(parsed.data);
      expect(JSON.stringify(read.tool_input)).toBe(JSON.stringify(parsed.data?.tool_input));
    }
    expect(plain).toBe(3);
  });
});
