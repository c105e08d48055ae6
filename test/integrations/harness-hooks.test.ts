/**
 * The pre-tool-use hooks of Codex, Gemini CLI, Cursor, OpenCode, GitHub Copilot CLI and Cline: each
 * harness's recorded payloads (test/integrations/fixtures/hooks/<harness>.json, each naming its
 * source and version) fed on stdin to `alock hooks <harness>-pre-tool-use`, in-process, against a
 * real file store in a temp tree.
 */
import { execFileSync } from 'node:child_process';
import { holderProcess, processAgentId, sessionAgentId } from '../../src/core/identity.js';
import { ancestorChain, hostName } from '../../src/host/process.js';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/run-cli.js';
import { patchPaths } from '../../src/integrations/patch-paths.js';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';

interface Fixture {
  harness: string;
  source: string;
  version: string;
  paths: 'absolute' | 'relative';
  edits: Record<string, unknown>;
  subagent?: unknown;
  shell: unknown;
}

const HARNESSES = ['codex', 'gemini', 'cursor', 'opencode', 'copilot', 'cline'] as const;
type Harness = (typeof HARNESSES)[number];

function fixture(harness: Harness): Fixture {
  const file = path.join(import.meta.dirname, 'fixtures', 'hooks', `${harness}.json`);
  return JSON.parse(readFileSync(file, 'utf8')) as Fixture;
}

/**
 * The id of an agent named by its harness process (Gemini CLI, Cline CLI): in-process, the hook's
 * harness is the process above this test's, as it is for the hook's own `alock` (cli.identity).
 */
function harnessProcessId(harness: string): string {
  const p = holderProcess(ancestorChain(process.ppid > 0 ? process.ppid : process.pid));
  return processAgentId(harness, { host: hostName(), pid: p.pid, started: p.started });
}

/** The main agent's id each harness's fixture session makes (Copilot's payload names none). */
const MAIN: Record<Harness, string | null> = {
  // The fixture's thread id is a time-ordered UUIDv7: named by a hash, not by its timestamp digits.
  codex: sessionAgentId('codex', '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b')!,
  // Gemini CLI's shell never sees its session: both doors name the gemini process instead.
  gemini: harnessProcessId('gemini'),
  cursor: 'cursor-c0ffee00',
  // OpenCode's `ses_` ids and Cline's millisecond task ids are time-ordered: hashed whole too.
  opencode: sessionAgentId('opencode', 'ses_4f3e2d1c0b9aZyXwVuTs')!,
  copilot: null,
  cline: sessionAgentId('cline', '1764875399123')!,
};

type Output = Record<string, unknown> & {
  hookSpecificOutput?: Record<string, unknown>;
};

/** The refusal's text in each harness's own answer, or null when the answer lets the call go. */
function refusal(harness: Harness, out: Output | null): string | null {
  if (out === null) return null;
  switch (harness) {
    case 'codex':
      return out.hookSpecificOutput?.permissionDecision === 'deny'
        ? String(out.hookSpecificOutput.permissionDecisionReason)
        : null;
    case 'gemini':
    case 'opencode':
      return out.decision === 'deny' ? String(out.reason) : null;
    case 'cursor':
      return out.permission === 'deny' ? String(out.agent_message) : null;
    case 'copilot':
      return out.permissionDecision === 'deny' ? String(out.permissionDecisionReason) : null;
    case 'cline':
      if (out.cancel === false && out.overrideInput === null) return String(out.context);
      return out.cancel === true ? String(out.errorMessage) : null;
  }
}

/** What each harness prints when a call simply goes: nothing, except Cline, which reads an answer. */
const SILENT: Record<Harness, Output | null> = {
  codex: null,
  gemini: null,
  cursor: null,
  opencode: null,
  copilot: null,
  cline: { cancel: false },
};

let sandbox: Sandbox;
beforeEach(() => {
  sandbox = makeSandbox();
});
afterEach(() => sandbox.cleanup());

/** The payload with the tree and the edited file filled in, as the harness names paths. */
function fill(payload: unknown, paths: Fixture['paths'], rel = 'src/a.ts'): string {
  const file = paths === 'absolute' ? path.join(sandbox.tree, rel) : rel;
  return JSON.stringify(payload).replaceAll('{{TREE}}', sandbox.tree).replaceAll('{{FILE}}', file);
}

/** Runs the hook as the harness would: the payload on stdin, no AGENT_ID unless given. */
async function hook(harness: Harness, stdin: string, env: Record<string, string | undefined> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(['hooks', `${harness}-pre-tool-use`], {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    env: { AGENT_LOCK_DIR: sandbox.store, AGENT_LOCK_REDIS_PROBE: 'off', ...env },
    cwd: sandbox.tree,
    isTTY: false,
    stdin: async () => stdin,
  });
  const output = stdout.trim() === '' ? null : (JSON.parse(stdout) as Output);
  return { code, stdout, stderr, output };
}

describe.each(HARNESSES)('alock hooks %s-pre-tool-use', (harness) => {
  const fx = fixture(harness);
  const edits = Object.entries(fx.edits);

  it('names its source and version, and covers an edit tool and the shell tool', () => {
    expect(fx.harness).toBe(harness);
    expect(fx.source.length).toBeGreaterThan(20);
    expect(fx.version.length).toBeGreaterThan(5);
    expect(edits.length).toBeGreaterThan(0);
    expect(fx.shell).toBeTruthy();
  });

  it.each(edits)(
    'refuses %s of a file another agent holds, naming the holder and intent',
    async (_tool, payload) => {
      expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(
        0,
      );
      const r = await hook(harness, fill(payload, fx.paths));
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      const reason = refusal(harness, r.output);
      expect(reason).toContain('src/a.ts');
      expect(reason).toContain('other-agent');
      expect(reason).toContain('refactor login');
    },
  );

  it.each(edits)('lets %s of a free file through with no answer of its own', async (_tool, payload) => {
    expect((await sandbox.run('other-agent', ['acquire', 'docs/**'])).code).toBe(0);
    const r = await hook(harness, fill(payload, fx.paths));
    expect(r.code).toBe(0);
    expect(r.output).toEqual(SILENT[harness]);
  });

  it("lets the agent edit inside its own lock, taken through alock under the session's id", async () => {
    const main = MAIN[harness];
    // Copilot's payload names no session: its agent is the one AGENT_ID (or the ancestry) names.
    const env = main === null ? { AGENT_ID: 'copilot-main' } : {};
    expect((await sandbox.run(main ?? 'copilot-main', ['acquire', 'src/**', '-m', 'mine'])).code).toBe(0);
    const [, payload] = edits[0]!;
    const r = await hook(harness, fill(payload, fx.paths), env);
    expect(r.output).toEqual(SILENT[harness]);
    const other = await hook(harness, fill(payload, fx.paths), { AGENT_ID: 'someone-else' });
    expect(refusal(harness, other.output)).toContain(main ?? 'copilot-main');
  });

  it('lets a shell command through untouched', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/**'])).code).toBe(0);
    const r = await hook(harness, fill(fx.shell, fx.paths));
    expect(r.code).toBe(0);
    expect(r.output).toEqual(SILENT[harness]);
  });

  it('refuses by default on an unreadable payload, naming AGENT_LOCK_HOOK_ON_ERROR', async () => {
    for (const stdin of ['{not json', '{"unrelated":true}']) {
      const r = await hook(harness, stdin);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(refusal(harness, r.output)).toContain('AGENT_LOCK_HOOK_ON_ERROR=allow');
    }
  });

  it('lets an unreadable payload through under AGENT_LOCK_HOOK_ON_ERROR=allow', async () => {
    const r = await hook(harness, '{not json', { AGENT_LOCK_HOOK_ON_ERROR: 'allow' });
    expect(r.code).toBe(0);
    expect(refusal(harness, r.output)).toBeNull();
  });

  it('refuses every edit while AGENT_LOCK_HOOK_ON_ERROR has a bad value', async () => {
    const [, payload] = edits[0]!;
    const r = await hook(harness, fill(payload, fx.paths), { AGENT_LOCK_HOOK_ON_ERROR: 'maybe' });
    expect(refusal(harness, r.output)).toContain('AGENT_LOCK_HOOK_ON_ERROR must be allow or deny');
  });
});

describe.each(['codex', 'opencode'] as const)('%s sub-agents', (harness) => {
  const fx = fixture(harness);

  it("lets a sub-agent edit inside its parent's lock, and refuses it another agent's file", async () => {
    const main = MAIN[harness]!;
    expect((await sandbox.run(main, ['acquire', 'src/**', '-m', 'parent work'])).code).toBe(0);
    const inside = await hook(harness, fill(fx.subagent, fx.paths));
    expect(inside.output).toBeNull();
    expect((await sandbox.run('other-agent', ['acquire', 'docs/x.md', '-m', 'docs'])).code).toBe(0);
    const elsewhere = await hook(harness, fill(fx.subagent, fx.paths, 'docs/x.md'));
    const reason = refusal(harness, elsewhere.output);
    expect(reason).toContain('other-agent');
    // The refusal names the sub-agent as itself, a child of the session's agent.
    expect(reason).toMatch(new RegExp(`You are ${main}-[0-9a-f]{8}\\.`));
  });
});

describe('patchPaths', () => {
  it('takes every file a patch adds, updates, deletes or moves to, and nothing from hunks', () => {
    const patch = [
      '*** Begin Patch',
      '*** Add File: src/new.ts',
      '+*** Update File: not/a/header.ts',
      '*** Update File: src/a.ts',
      '*** Move to: src/b.ts',
      '@@',
      '-old',
      '+new',
      '*** Delete File: src/gone.ts',
      '*** Update File: src/a.ts',
      '*** End Patch',
    ].join('\n');
    expect(patchPaths(patch)).toEqual(['src/new.ts', 'src/a.ts', 'src/b.ts', 'src/gone.ts']);
  });

  it('refuses a held file that a patch only renames onto', async () => {
    const fx = fixture('codex');
    expect((await sandbox.run('other-agent', ['acquire', 'src/b.ts', '-m', 'keep b'])).code).toBe(0);
    const payload = structuredClone(fx.edits.apply_patch) as { tool_input: { command: string } };
    payload.tool_input.command =
      '*** Begin Patch\n*** Update File: src/a.ts\n*** Move to: src/b.ts\n@@\n-a\n+b\n*** End Patch\n';
    const r = await hook('codex', fill(payload, fx.paths));
    expect(refusal('codex', r.output)).toContain('keep b');
  });
});

/** The fixture's shell call with another command in it, where each harness carries the command. */
function withCommand(harness: Harness, payload: unknown, command: string): unknown {
  type Obj = Record<string, unknown>;
  const p = structuredClone(payload) as Obj;
  const inner = (key: string) => p[key] as Obj;
  switch (harness) {
    case 'codex':
    case 'gemini':
      inner('tool_input').command = command;
      break;
    case 'cursor':
      p.command = command;
      break;
    case 'opencode':
      inner('args').command = command;
      break;
    case 'copilot':
      p.toolArgs = JSON.stringify({ ...(JSON.parse(p.toolArgs as string) as Obj), command });
      break;
    case 'cline':
      (inner('preToolUse').parameters as Obj).command = command;
      break;
  }
  return p;
}

describe.each(HARNESSES)('%s shell tool: writes to held files', (harness) => {
  const fx = fixture(harness);
  const run = (command: string, env: Record<string, string | undefined> = {}) =>
    hook(harness, fill(withCommand(harness, fx.shell, command), fx.paths), env);

  it('refuses a command that writes a held file, naming the holder and intent', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'refactor login'])).code).toBe(0);
    for (const command of [
      'cd src && echo x > a.ts',
      "sed -i 's/1/2/' src/a.ts",
      'cat <<EOF | tee src/a.ts\nx\nEOF',
    ]) {
      const reason = refusal(harness, (await run(command)).output);
      expect(reason).toContain('other-agent');
      expect(reason).toContain('refactor login');
    }
  });

  it('lets a command through that writes only free files', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts'])).code).toBe(0);
    const r = await run('echo x > src/b.ts && cp src/a.ts docs/copy.ts');
    expect(r.output).toEqual(SILENT[harness]);
  });

  it('lets a command it cannot parse through, or refuses it under AGENT_LOCK_HOOK_SHELL_UNPARSED=deny', async () => {
    const command = 'echo "unterminated > src/a.ts';
    expect(refusal(harness, (await run(command)).output)).toBeNull();
    const denied = await run(command, { AGENT_LOCK_HOOK_SHELL_UNPARSED: 'deny' });
    expect(refusal(harness, denied.output)).toContain('AGENT_LOCK_HOOK_SHELL_UNPARSED=deny');
    const bad = await run(command, { AGENT_LOCK_HOOK_SHELL_UNPARSED: 'sometimes' });
    expect(refusal(harness, bad.output)).toContain('AGENT_LOCK_HOOK_SHELL_UNPARSED must be allow or deny');
  });
});

describe('gemini run_shell_command with a relative dir_path', () => {
  it("reads the command in that folder below the session, not in the hook's own", async () => {
    // In git, as agents work: outside it each folder would be a tree of its own.
    execFileSync('git', ['init', '-q'], { cwd: sandbox.tree });
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'busy'])).code).toBe(0);
    const fx = fixture('gemini');
    const payload = JSON.parse(fill(withCommand('gemini', fx.shell, 'rm a.ts'), fx.paths));
    payload.tool_input.dir_path = 'src';
    const r = await hook('gemini', JSON.stringify(payload));
    expect(refusal('gemini', r.output)).toContain('other-agent');
  });
});

describe('AGENT_LOCK_HOOK_WAIT', () => {
  const fx = fixture('gemini');
  const [, payload] = Object.entries(fx.edits)[0]!;
  const edit = () => fill(payload, fx.paths);

  it('pauses the edit in line until the holder lets go, then lets it through and holds nothing', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'busy'])).code).toBe(0);
    const pending = hook('gemini', edit(), { AGENT_LOCK_HOOK_WAIT: '20', AGENT_LOCK_CLAIM: 'off' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await sandbox.run('other-agent', ['release', 'src/a.ts'])).code).toBe(0);
    const r = await pending;
    expect(refusal('gemini', r.output)).toBeNull();
    expect((await sandbox.json('observer', ['list'])).body.locks).toEqual([]);
  });

  it('with claims on, keeps what it waited for as its claim', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'busy'])).code).toBe(0);
    const pending = hook('gemini', edit(), { AGENT_LOCK_HOOK_WAIT: '20' });
    // Released only once the hook waits in line (its ticket shows), so the wait is what is tested.
    for (;;) {
      if (((await sandbox.json('observer', ['list'])).body.waiting as unknown[]).length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await sandbox.run('other-agent', ['release', 'src/a.ts'])).code).toBe(0);
    const r = await pending;
    expect(refusal('gemini', r.output)).toBeNull();
    const locks = (await sandbox.json('observer', ['list'])).body.locks as {
      scope: string;
      agent_id: string;
      claim: { tool: string } | null;
    }[];
    expect(locks.map((l) => [l.scope, l.agent_id, l.claim?.tool])).toEqual([
      ['src/a.ts', MAIN.gemini, 'write_file'],
    ]);
    const log = (await sandbox.run('observer', ['log'])).stdout;
    expect(log).toMatch(/HANDED OVER|ACQUIRED/);
    expect(log).toContain(`CLAIMED src/a.ts ${MAIN.gemini}`);
  });

  it('refuses once the wait runs out, and refuses on a bad value naming the variable', async () => {
    expect((await sandbox.run('other-agent', ['acquire', 'src/a.ts', '-m', 'busy'])).code).toBe(0);
    const late = await hook('gemini', edit(), { AGENT_LOCK_HOOK_WAIT: '0.5' });
    expect(refusal('gemini', late.output)).toContain('after waiting 0.5s');
    expect((await sandbox.json('observer', ['list'])).body.waiting).toEqual([]);
    const bad = await hook('gemini', edit(), { AGENT_LOCK_HOOK_WAIT: 'soon' });
    expect(refusal('gemini', bad.output)).toContain('AGENT_LOCK_HOOK_WAIT must be a number of seconds');
  });
});
