/**
 * Every writing tool of every harness line the hooks follow (fixtures/hooks/tools.json, each naming
 * its version and the place in the harness's source its shape was read from): a call that writes a
 * held file is refused, the same call on a free file goes, and a shell call whose command is not a
 * string is refused saying so. In-process, against a real file store in a temp tree.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

interface Case {
  name: string;
  harness: string;
  version?: string;
  place?: string;
  payload: unknown;
}

const TOOLS = JSON.parse(
  readFileSync(path.join(import.meta.dirname, 'fixtures', 'hooks', 'tools.json'), 'utf8'),
) as { writes: Case[]; notStrings: Case[] };

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

function fill(payload: unknown, rel: string): string {
  return JSON.stringify(payload)
    .replaceAll('{{TREE}}', sandbox.tree)
    .replaceAll('{{ABS}}', path.join(sandbox.tree, rel))
    .replaceAll('{{REL}}', rel);
}

async function hook(harness: string, stdin: string, env: Record<string, string> = {}) {
  let stdout = '';
  const code = await runCli(['hooks', `${harness}-pre-tool-use`], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: () => {},
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', ...env },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  expect(code).toBe(0);
  return stdout;
}

/** The refusal in any harness's words, or null. */
function refusal(stdout: string): string | null {
  if (stdout.trim() === '') return null;
  const out = JSON.parse(stdout) as Record<string, unknown> & {
    hookSpecificOutput?: Record<string, unknown>;
  };
  if (out.hookSpecificOutput?.permissionDecision === 'deny')
    return String(out.hookSpecificOutput.permissionDecisionReason);
  if (out.permissionDecision === 'deny') return String(out.permissionDecisionReason);
  if (out.decision === 'deny') return String(out.reason);
  if (out.permission === 'deny') return String(out.agent_message);
  if (out.cancel === true) return String(out.errorMessage);
  return null;
}

describe.each(TOOLS.writes)('$name', (c) => {
  it('names its version and where its shape was read', () => {
    expect(c.version?.length).toBeGreaterThan(5);
    expect(c.place?.length).toBeGreaterThan(20);
  });

  it('is refused on a file another agent holds, naming the holder', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor'])).code).toBe(0);
    const reason = refusal(await hook(c.harness, fill(c.payload, 'src/a.ts')));
    expect(reason).toContain('other-agent');
    expect(reason).toContain('refactor');
  });

  it('goes through on a free file', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts'])).code).toBe(0);
    // The same call aimed at src/b.ts (Set-Location src; ... a.ts names its file itself).
    const text = fill(c.payload, 'src/b.ts').replaceAll('>> a.ts', '>> b.ts');
    expect(refusal(await hook(c.harness, text))).toBeNull();
  });
});

describe.each(TOOLS.notStrings)('$name', (c) => {
  it('is refused, saying the command is not a string', async () => {
    const reason = refusal(await hook(c.harness, fill(c.payload, 'src/a.ts')));
    expect(reason).toMatch(/command is .*not a string/);
  });
});

describe('Codex exec_command with workdir', () => {
  /** A rollout line as Codex records the model's function call, before it runs the tool. */
  function transcript(workdir: string | undefined): string {
    const file = path.join(sandbox.outside, 'rollout.jsonl');
    mkdirSync(sandbox.outside, { recursive: true });
    const args = { cmd: 'echo 2 > a.ts', ...(workdir === undefined ? {} : { workdir }) };
    const lines = [
      { timestamp: '2026-12-05T09:00:00Z', type: 'session_meta', payload: { id: 'x' } },
      {
        timestamp: '2026-12-05T09:00:01Z',
        type: 'response_item',
        payload: {
          type: 'function_call',
          name: 'exec_command',
          arguments: JSON.stringify(args),
          call_id: 'call_w1',
        },
      },
    ];
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    return file;
  }

  const payload = (transcriptPath: string | null) =>
    JSON.stringify({
      session_id: '7e57ab1e-0000-4000-8000-000000000001',
      transcript_path: transcriptPath,
      cwd: sandbox.tree,
      hook_event_name: 'PreToolUse',
      model: 'gpt-5-codex',
      permission_mode: 'default',
      tool_name: 'Bash',
      tool_input: { command: 'echo 2 > a.ts' },
      tool_use_id: 'call_w1',
    });

  it('checks a command run in src/ in src/, reading the workdir from the transcript', async () => {
    // In git, as agents work: outside it each folder would be a tree of its own.
    execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'busy'])).code).toBe(0);
    expect(refusal(await hook('codex', payload(transcript('src'))))).toContain('other-agent');
    // No workdir in the call: the session's folder, where a.ts is free.
    expect(refusal(await hook('codex', payload(transcript(undefined))))).toBeNull();
    // No transcript: the session's folder too.
    expect(refusal(await hook('codex', payload(null)))).toBeNull();
  });
});
