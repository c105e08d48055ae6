/**
 * Issue 22 on Redis: the worktrees of one clone share one store folder (in the common git dir),
 * so they share its Redis store; a path lock overlapping another worktree's warns there too, block
 * refuses, and `conflicts` reads the holders from Redis. A real redis-server on a free port.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { uniquePrefix } from '../../race/helpers.js';
import { makeRepo, type Repo } from '../../worktrees/repo.js';
import { describeRedis, redisForSuite } from './server.js';

describeRedis('worktrees of one clone on a Redis store', () => {
  const server = redisForSuite();
  let repo: Repo;
  let env: Record<string, string>;
  beforeEach(() => {
    repo = makeRepo({ 'src/auth/login.ts': 'line 1\nline 2\nline 3\n' });
    env = { AGENT_LOCK_REDIS_URL: server().url, AGENT_LOCK_REDIS_PREFIX: uniquePrefix('worktrees') };
  });
  afterEach(() => repo.cleanup());

  it('warns about an overlap with another worktree, and block refuses it', async () => {
    const featA = repo.addWorktree('feat-a');
    const featB = repo.addWorktree('feat-b');
    const a = await repo.json(featA, 'alice', ['acquire', 'src/auth/**', '-m', 'rework login'], env);
    expect(a.body.status).toBe('acquired');
    const b = await repo.json(featB, 'bob', ['acquire', 'src/auth/login.ts'], env);
    expect(b.body).toMatchObject({ status: 'acquired', exit_code: 0 });
    expect(b.body.warnings).toMatchObject([
      {
        code: 'W_OTHER_WORKTREE',
        agent_id: 'alice',
        worktree: featA,
        branch: 'feat-a',
        intent: 'rework login',
      },
    ]);
    const listed = await repo.json(repo.main, 'carol', ['list', '--worktrees'], env);
    expect(listed.body.message).toBe('2 locks');
    expect(String((await repo.run(repo.main, 'carol', ['list'], env)).stdout)).toContain('redis store');
    expect((listed.body.worktrees as { branch: string }[]).map((g) => g.branch)).toEqual([
      'feat-a',
      'feat-b',
    ]);
    const blocked = await repo.json(featB, 'carol', ['acquire', 'src/auth/session.ts'], {
      ...env,
      AGENT_LOCK_WORKTREES: 'block',
    });
    expect(blocked.body).toMatchObject({ status: 'other_worktree', exit_code: 1, locks: [] });
    expect((await repo.json(featB, 'carol', ['list'], env)).body.locks).toHaveLength(2);
  });

  it('conflicts names the holders kept in Redis', async () => {
    const featA = repo.addWorktree('feat-a');
    const featB = repo.addWorktree('feat-b');
    repo.commit(featA, 'src/auth/login.ts', 'line 1\nline 2 by a\nline 3\n');
    repo.commit(featB, 'src/auth/login.ts', 'line 1\nline 2 by b\nline 3\n');
    expect((await repo.json(featA, 'alice', ['acquire', 'src/auth/login.ts'], env)).body.status).toBe(
      'acquired',
    );
    expect((await repo.json(featB, 'bob', ['acquire', 'src/**'], env)).body.status).toBe('acquired');
    const r = await repo.json(featB, 'bob', ['conflicts'], env);
    expect(r.body.status).toBe('conflicting');
    const withA = (
      r.body.pairs as {
        branch: string;
        conflicts: { file: string; ours: { agent_id: string }[]; theirs: { agent_id: string }[] }[];
      }[]
    ).find((p) => p.branch === 'feat-a');
    expect(withA?.conflicts).toMatchObject([
      { file: 'src/auth/login.ts', ours: [{ agent_id: 'bob' }], theirs: [{ agent_id: 'alice' }] },
    ]);
  });
});
