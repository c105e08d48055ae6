/**
 * Issue 22: agents in separate worktrees of one repository. Path locks there never block each
 * other (different copies of the files), but an overlap is told: W_OTHER_WORKTREE on acquire and
 * check (text, JSON, the library, the Claude Code hook), a refusal of its own under
 * AGENT_LOCK_WORKTREES=block, nothing under off. Real repositories, real `git worktree add`.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { warningsForAgent } from '../../src/core/worktrees.js';
import { openLocks } from '../../src/locks.js';
import { STACK_FRAME, type Sandbox } from '../cli/cli-harness.js';
import { connect } from '../mcp/mcp-harness.js';
import { git, gitEnv, makeRepo, type Repo } from './repo.js';

let repo: Repo;
let featA: string;
let featB: string;
beforeEach(() => {
  repo = makeRepo();
  featA = repo.addWorktree('feat-a');
  featB = repo.addWorktree('feat-b');
});
afterEach(() => repo.cleanup());

interface WarningBody {
  code: string;
  message: string;
  worktree: string;
  branch: string | null;
  agent_id: string;
  intent: string | null;
  scope: string;
}

describe('acquire across worktrees', () => {
  it('grants an overlapping lock in another worktree, warning with its worktree, branch, holder and intent', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**', '-m', 'rework login'])).code).toBe(0);

    const text = await repo.run(featB, 'bob', ['acquire', 'src/auth/login.ts']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ACQUIRED src\/auth\/login\.ts/);
    const warning = text.stdout.split('\n').find((line) => line.startsWith('WARNING'));
    expect(warning).toContain('W_OTHER_WORKTREE');
    expect(warning).toContain(featA);
    expect(warning).toContain('feat-a');
    expect(warning).toContain('alice');
    expect(warning).toContain('"rework login"');
    expect(warning).toContain('a merge conflict is likely');

    const json = await repo.json(featB, 'carol', ['acquire', 'src/auth/session.ts']);
    expect(json.code).toBe(0);
    expect(json.body.status).toBe('acquired');
    expect(json.body.exit_code).toBe(0);
    const warnings = json.body.warnings as WarningBody[];
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      code: 'W_OTHER_WORKTREE',
      worktree: featA,
      branch: 'feat-a',
      agent_id: 'alice',
      intent: 'rework login',
      scope: 'src/auth/session.ts',
    });
    // The new lock says where it was taken.
    expect(json.body.locks[0]).toMatchObject({ worktree: featB, branch: 'feat-b', tree: featB });
  });

  it('stays silent where the scopes do not overlap, and within one worktree the ordinary rules apply', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**'])).code).toBe(0);
    const apart = await repo.json(featB, 'bob', ['acquire', 'docs/**']);
    expect(apart.body.status).toBe('acquired');
    expect(apart.body.warnings).toEqual([]);
    const same = await repo.json(featA, 'bob', ['acquire', 'src/auth/login.ts']);
    expect(same.body.status).toBe('held');
    expect(same.body.warnings).toEqual([]);
  });

  it('does not warn about the caller’s own lock in another worktree, nor shared against shared', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/**', '--shared'])).code).toBe(0);
    expect((await repo.json(featB, 'alice', ['acquire', 'src/auth/login.ts'])).body.warnings).toEqual([]);
    expect((await repo.json(featB, 'bob', ['acquire', 'src/**', '--shared'])).body.warnings).toEqual([]);
    const exclusive = await repo.json(featB, 'carol', ['acquire', 'src/auth/x.ts']);
    expect((exclusive.body.warnings as WarningBody[]).map((w) => w.agent_id)).toEqual(['alice']);
  });

  it('block refuses with other_worktree (exit 1) and takes nothing', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**', '-m', 'rework login'])).code).toBe(0);
    const env = { AGENT_LOCK_WORKTREES: 'block' };
    const refused = await repo.json(featB, 'bob', ['acquire', 'src/auth/login.ts'], env);
    expect(refused.code).toBe(1);
    expect(refused.body).toMatchObject({ status: 'other_worktree', ok: false, exit_code: 1, locks: [] });
    expect(refused.body.conflicts).toMatchObject([
      { agent_id: 'alice', scope: 'src/auth/**', worktree: featA },
    ]);
    const text = await repo.run(featB, 'bob', ['acquire', 'src/auth/login.ts'], env);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^OTHER WORKTREE src\/auth\/login\.ts/);
    expect(text.stdout).toContain('feat-a');
    const listed = await repo.json(featB, 'bob', ['list']);
    expect(listed.body.locks.map((l) => l.agent_id)).toEqual(['alice']);
    // What does not overlap is still granted under block.
    expect((await repo.json(featB, 'bob', ['acquire', 'docs/**'], env)).body.status).toBe('acquired');
    // check answers the same refusal.
    const checked = await repo.json(featB, 'bob', ['check', 'src/auth/login.ts'], env);
    expect(checked.code).toBe(1);
    expect(checked.body.status).toBe('other_worktree');
  });

  it('block keeps run from starting its command, with the refusal on stderr', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**'])).code).toBe(0);
    const marker = path.join(featB, 'ran');
    const r = await repo.run(featB, 'bob', ['run', 'src/auth/login.ts', '--', 'touch', marker], {
      AGENT_LOCK_WORKTREES: 'block',
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^OTHER WORKTREE src\/auth\/login\.ts/);
    expect(existsSync(marker)).toBe(false);
  });

  it('off says nothing and grants', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**'])).code).toBe(0);
    const env = { AGENT_LOCK_WORKTREES: 'off' };
    const json = await repo.json(featB, 'bob', ['acquire', 'src/auth/login.ts'], env);
    expect(json.body.status).toBe('acquired');
    expect(json.body.warnings).toEqual([]);
    const text = await repo.run(featB, 'carol', ['check', 'src/auth/x.ts'], env);
    expect(text.stdout).not.toContain('WARNING');
  });

  it('refuses a bad AGENT_LOCK_WORKTREES with one line naming it, exit 2, nothing taken', async () => {
    const r = await repo.run(featB, 'bob', ['acquire', 'src/auth/login.ts'], {
      AGENT_LOCK_WORKTREES: 'loud',
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      'ERROR: alock: AGENT_LOCK_WORKTREES must be warn, block or off (got "loud") (fix or unset AGENT_LOCK_WORKTREES)\n',
    );
    expect(r.stderr).not.toMatch(STACK_FRAME);
    expect((await repo.json(featB, 'bob', ['list'])).body.locks).toEqual([]);
  });
});

describe('check across worktrees', () => {
  it('answers free with the same warning, and a warning never changes the exit code', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/login.ts', '-m', 'fix'])).code).toBe(0);
    const json = await repo.json(featB, 'bob', ['check', 'src/auth/**']);
    expect(json.code).toBe(0);
    expect(json.body).toMatchObject({ status: 'free', ok: true, exit_code: 0 });
    expect((json.body.warnings as WarningBody[])[0]).toMatchObject({
      code: 'W_OTHER_WORKTREE',
      agent_id: 'alice',
      branch: 'feat-a',
    });
    const text = await repo.run(featB, 'bob', ['check', 'src/auth/**']);
    expect(text.stdout).toMatch(/^FREE /);
    expect(text.stdout).toContain('WARNING W_OTHER_WORKTREE');
  });

  it('names a detached HEAD instead of a branch', async () => {
    git(featA, 'switch', '-q', '--detach');
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/login.ts'])).code).toBe(0);
    const json = await repo.json(featB, 'bob', ['check', 'src/auth/login.ts']);
    expect((json.body.warnings as WarningBody[])[0]).toMatchObject({ branch: null, worktree: featA });
    expect((json.body.warnings as WarningBody[])[0]?.message).toContain('detached HEAD');
  });
});

describe('the library across worktrees', () => {
  it('carries the warning on acquire and check results', async () => {
    const env = { ...process.env, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_LOCK_DIR: '' };
    const a = await openLocks({ dir: featA, env, identity: { agentId: 'alice' } });
    const b = await openLocks({ dir: featB, env, identity: { agentId: 'bob' } });
    try {
      expect((await a.acquire('src/auth/**', { intent: 'rework' })).warnings).toBeUndefined();
      const got = await b.acquire('src/auth/login.ts');
      expect(got.status).toBe('acquired');
      expect(got.warnings?.map((w) => w.code)).toEqual(['W_OTHER_WORKTREE']);
      const checked = await b.check('src/auth/other.ts');
      expect(checked.warnings?.[0]).toMatchObject({ agent_id: 'alice', worktree: featA });
      const told = warningsForAgent(checked.warnings);
      expect(told).toContain('alice');
      expect(told).toContain('merge conflict');
      expect(warningsForAgent([])).toBeNull();
      const held = await b.hold('src/auth/lease.ts', { ttl: 30 });
      expect(held.warnings?.[0]?.code).toBe('W_OTHER_WORKTREE');
      await held.lease?.release();
      const done = await b.withLock('src/auth/work.ts', { ttl: 30 }, async () => 'done');
      expect(done).toMatchObject({ status: 'acquired', value: 'done' });
      expect(done.warnings?.[0]?.agent_id).toBe('alice');
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe('the MCP server across worktrees', () => {
  it('answers acquire and check with the warning in the envelope, not as an error', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**', '-m', 'rework login'])).code).toBe(0);
    // The server runs in feat-b, on the repository's own store (no AGENT_LOCK_DIR).
    const inFeatB = {
      tree: featB,
      envFor: (agent: string) => ({ ...gitEnv, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_ID: agent }),
      cleanup: () => {},
    } as unknown as Sandbox;
    const mcp = await connect('server', inFeatB);
    try {
      const got = await mcp.call('acquire', { scopes: ['src/auth/login.ts'] });
      expect(got.isError).toBe(false);
      expect(got.body.status).toBe('acquired');
      expect(got.body.warnings).toMatchObject([
        { code: 'W_OTHER_WORKTREE', agent_id: 'alice', branch: 'feat-a' },
      ]);
      const checked = await mcp.call('check', { scopes: ['src/auth/x.ts'] });
      expect(checked.body.status).toBe('free');
      expect((checked.body.warnings as unknown[]).length).toBe(1);
      const apart = await mcp.call('check', { scopes: ['docs/readme.md'] });
      expect(apart.body.warnings).toEqual([]);
    } finally {
      await mcp.close();
    }
  });
});

describe('list --worktrees', () => {
  it('groups the locks by worktree and branch', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**'])).code).toBe(0);
    expect((await repo.run(featB, 'bob', ['acquire', 'docs/**', 'src/auth/login.ts'])).code).toBe(0);
    expect((await repo.run(repo.main, 'carol', ['acquire', '@merge'])).code).toBe(0);
    const json = await repo.json(repo.main, 'carol', ['list', '--worktrees']);
    const groups = json.body.worktrees as {
      worktree: string | null;
      branch: string | null;
      locks: { scope: string }[];
    }[];
    expect(groups.map((g) => [g.worktree, g.branch, g.locks.map((l) => l.scope)])).toEqual([
      [featA, 'feat-a', ['src/auth/**']],
      [featB, 'feat-b', ['docs/**', 'src/auth/login.ts']],
      [null, null, ['@merge']],
    ]);
    const text = await repo.run(repo.main, 'carol', ['list', '--worktrees']);
    const lines = text.stdout.split('\n');
    const at = (prefix: string) => lines.findIndex((l) => l.startsWith(prefix));
    expect(at(`WORKTREE ${featA} (branch feat-a)`)).toBeGreaterThan(0);
    expect(at(`WORKTREE ${featB} (branch feat-b)`)).toBeGreaterThan(at(`WORKTREE ${featA}`));
    expect(lines[at(`WORKTREE ${featB}`) + 1]).toContain('docs/**');
    expect(at('RESOURCES')).toBeGreaterThan(at(`WORKTREE ${featB}`));
  });
});

describe('the Claude Code hook across worktrees', () => {
  const SESSION = '11112222-3333-4444-5555-666677778888';
  const edit = (cwd: string, file: string) =>
    JSON.stringify({
      session_id: SESSION,
      cwd,
      hook_event_name: 'PreToolUse',
      tool_name: 'Edit',
      tool_input: { file_path: file, old_string: 'a', new_string: 'b' },
    });
  const hook = async (cwd: string, file: string, env: Record<string, string> = {}) => {
    const r = await repo.run(
      cwd,
      '',
      ['hooks', 'claude-pre-tool-use'],
      { AGENT_ID: undefined, ...env },
      edit(cwd, file),
    );
    expect(r.code).toBe(0);
    return r.stdout.trim() === ''
      ? null
      : (JSON.parse(r.stdout) as { hookSpecificOutput?: Record<string, string> });
  };

  it('lets the edit through and tells the agent as added context, not a refusal', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**', '-m', 'rework login'])).code).toBe(0);
    const out = await hook(featB, path.join(featB, 'src/auth/login.ts'));
    expect(out?.hookSpecificOutput?.permissionDecision).toBeUndefined();
    expect(out?.hookSpecificOutput?.hookEventName).toBe('PreToolUse');
    const context = out?.hookSpecificOutput?.additionalContext ?? '';
    expect(context).toContain('alice');
    expect(context).toContain('feat-a');
    expect(context).toContain('rework login');
    expect(context).toContain('merge conflict is likely');
    // Nothing overlapping: no output at all (the normal permission flow).
    expect(await hook(featB, path.join(featB, 'docs/readme.md'))).toBeNull();
  });

  it('denies the edit under block, and says nothing under off', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**'])).code).toBe(0);
    const file = path.join(featB, 'src/auth/login.ts');
    const blocked = await hook(featB, file, { AGENT_LOCK_WORKTREES: 'block' });
    expect(blocked?.hookSpecificOutput?.permissionDecision).toBe('deny');
    expect(blocked?.hookSpecificOutput?.permissionDecisionReason).toContain('alice');
    expect(await hook(featB, file, { AGENT_LOCK_WORKTREES: 'off' })).toBeNull();
  });
});

describe('the contract', () => {
  it('names the warnings field, its rule, W_OTHER_WORKTREE, the variable and the block answer', async () => {
    const r = await repo.run(repo.main, 'alice', ['contract']);
    const doc = JSON.parse(r.stdout) as {
      json_envelope: string[];
      warnings: { rule: string; codes: Record<string, string> };
      environment: string[];
      lock_fields: string[];
      commands: { name: string; flags: { flags: string }[]; answers: { exit_1: string[] } }[];
    };
    expect(doc.json_envelope).toContain('warnings');
    expect(doc.warnings.rule).toContain('never changes');
    expect(Object.keys(doc.warnings.codes).sort()).toEqual(
      ['W_ENFORCE_AS_ROOT', 'W_OTHER_WORKTREE', 'W_REDIS_PROBED'].sort(),
    );
    expect(doc.environment).toContain('AGENT_LOCK_WORKTREES');
    expect(doc.lock_fields).toEqual(expect.arrayContaining(['worktree', 'branch']));
    const command = (name: string) => doc.commands.find((c) => c.name === name);
    expect(command('acquire')?.answers.exit_1).toContain('other_worktree');
    expect(command('list')?.flags.map((f) => f.flags)).toContain('--worktrees');
    expect(command('conflicts')?.flags.map((f) => f.flags)).toContain('--base <branch>');
  });
});
