/**
 * `alock conflicts`: merge conflicts predicted with `git merge-tree --write-tree` between this
 * worktree's branch and every other worktree's branch and the base, with the lock holders on both
 * sides; read-only (worktrees, indexes, refs and objects byte-for-byte unchanged); cached by heads.
 * Real repositories and real `git worktree add` worktrees; a fake old git on PATH.
 */
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STACK_FRAME } from '../cli/cli-harness.js';
import { git, makeRepo, type Repo } from './repo.js';

interface Pair {
  branch: string;
  worktree: string | null;
  base: boolean;
  cached: boolean;
  conflicts: { file: string; ours: { agent_id: string }[]; theirs: { agent_id: string }[] }[];
}

let repo: Repo;
let featA: string;
let featB: string;
let featC: string;
beforeEach(() => {
  repo = makeRepo({ 'src/auth/login.ts': 'line 1\nline 2\nline 3\n' });
  featA = repo.addWorktree('feat-a');
  featB = repo.addWorktree('feat-b');
  featC = repo.addWorktree('feat-c');
  // feat-a and feat-b change the same line of login.ts; feat-c only the docs.
  repo.commit(featA, 'src/auth/login.ts', 'line 1\nline 2 by a\nline 3\n');
  repo.commit(featB, 'src/auth/login.ts', 'line 1\nline 2 by b\nline 3\n');
  repo.commit(featC, 'docs/readme.md', '# docs, rewritten\n');
});
afterEach(() => repo.cleanup());

const pairs = (body: Record<string, unknown>) => body.pairs as Pair[];
const pair = (body: Record<string, unknown>, branch: string) => pairs(body).find((p) => p.branch === branch);

/** Everything a read-only command must leave alone: status, refs, HEADs, index bytes, objects. */
function snapshot(): string {
  const common = path.join(repo.main, '.git');
  const indexes = [path.join(common, 'index')];
  for (const name of readdirSync(path.join(common, 'worktrees')))
    indexes.push(path.join(common, 'worktrees', name, 'index'));
  const parts = [
    git(repo.main, 'for-each-ref', '--format=%(refname) %(objectname)'),
    git(repo.main, 'count-objects', '-v'),
    ...indexes.map((file) => `${file} ${createHash('sha256').update(readFileSync(file)).digest('hex')}`),
  ];
  for (const worktree of [repo.main, featA, featB, featC]) {
    parts.push(worktree, git(worktree, 'status', '--porcelain=v1', '--untracked-files=all', '--ignored'));
    parts.push(git(worktree, 'rev-parse', 'HEAD'), git(worktree, 'symbolic-ref', '-q', 'HEAD'));
  }
  return parts.join('\n');
}

describe('alock conflicts', () => {
  it('finds a real textual conflict and names the lock holders on both sides', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**', '-m', 'rework login'])).code).toBe(0);
    expect((await repo.run(featB, 'bob', ['acquire', 'src/auth/login.ts', '-m', 'fix typo'])).code).toBe(0);

    const json = await repo.json(featA, 'alice', ['conflicts']);
    expect(json.code).toBe(1);
    expect(json.body).toMatchObject({
      status: 'conflicting',
      ok: false,
      exit_code: 1,
      branch: 'feat-a',
      base: 'main',
    });
    const withB = pair(json.body, 'feat-b');
    expect(withB).toMatchObject({ worktree: featB, base: false });
    expect(withB?.conflicts.map((c) => c.file)).toEqual(['src/auth/login.ts']);
    expect(withB?.conflicts[0]?.ours.map((l) => l.agent_id)).toEqual(['alice']);
    expect(withB?.conflicts[0]?.theirs.map((l) => l.agent_id)).toEqual(['bob']);
    // The docs-only branch and the base (main, unchanged since) merge cleanly.
    expect(pair(json.body, 'feat-c')?.conflicts).toEqual([]);
    expect(pair(json.body, 'main')).toMatchObject({ base: true, worktree: repo.main, conflicts: [] });

    const text = await repo.run(featA, 'alice', ['conflicts']);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^CONFLICTING feat-a: 1 file would conflict with 1 of 3 branches/);
    const line = text.stdout.split('\n').find((l) => l.includes('src/auth/login.ts'));
    expect(line).toContain('alice "rework login" (src/auth/**)');
    expect(line).toContain('bob "fix typo" (src/auth/login.ts)');
  });

  it('finds none where the changes do not overlap', async () => {
    const json = await repo.json(featC, 'carol', ['conflicts']);
    expect(json.code).toBe(0);
    expect(json.body.status).toBe('clear');
    expect(
      pairs(json.body)
        .map((p) => p.branch)
        .sort(),
    ).toEqual(['feat-a', 'feat-b', 'main']);
    expect(pairs(json.body).every((p) => p.conflicts.length === 0)).toBe(true);
    const text = await repo.run(featC, 'carol', ['conflicts']);
    expect(text.stdout).toMatch(/^CLEAR feat-c: no merge conflict predicted with /);
  });

  it('answers clear with nothing to compare with on the only branch', async () => {
    const solo = makeRepo();
    try {
      const json = await solo.json(solo.main, 'alice', ['conflicts']);
      expect(json.code).toBe(0);
      expect(json.body).toMatchObject({ status: 'clear', branch: 'main', base: 'main', pairs: [] });
      const text = await solo.run(solo.main, 'alice', ['conflicts']);
      expect(text.stdout).toBe(
        'CLEAR main: nothing to compare with (no other worktree on a branch; the base is main itself)\n',
      );
    } finally {
      solo.cleanup();
    }
  });

  it('compares with --base, also a branch no worktree has checked out', async () => {
    git(repo.main, 'branch', 'release', 'feat-b');
    const json = await repo.json(featA, 'alice', ['conflicts', '--base', 'release']);
    expect(json.body.base).toBe('release');
    expect(pair(json.body, 'release')).toMatchObject({ base: true, worktree: null });
    expect(pair(json.body, 'release')?.conflicts.map((c) => c.file)).toEqual(['src/auth/login.ts']);
  });

  it('leaves every worktree, index, ref and the object store byte-for-byte unchanged', async () => {
    expect((await repo.run(featA, 'alice', ['acquire', 'src/auth/**'])).code).toBe(0);
    // An untracked and a staged change, to be sure neither is touched.
    writeFileSync(path.join(featB, 'scratch.txt'), 'untracked\n');
    writeFileSync(path.join(featC, 'docs/readme.md'), 'staged\n');
    git(featC, 'add', 'docs/readme.md');
    const before = snapshot();
    for (const worktree of [featA, featB, featC, repo.main])
      expect((await repo.run(worktree, 'alice', ['conflicts'])).code).toBeLessThan(2);
    expect(snapshot()).toBe(before);
  });

  it('reuses results while no branch head moves, and merges again for the one that moved', async () => {
    const first = await repo.json(featA, 'alice', ['conflicts']);
    expect(pairs(first.body).every((p) => !p.cached)).toBe(true);
    expect(existsSync(path.join(repo.main, '.git', 'agent-locks', 'conflicts-cache.json'))).toBe(true);
    const again = await repo.json(featA, 'alice', ['conflicts']);
    expect(pairs(again.body).every((p) => p.cached)).toBe(true);
    expect(pairs(again.body)).toEqual(pairs(first.body).map((p) => ({ ...p, cached: true })));
    // feat-b resolves its side: only that pair is merged again, and the answer follows.
    repo.commit(featB, 'src/auth/login.ts', 'line 1\nline 2 by a\nline 3\n');
    const moved = await repo.json(featA, 'alice', ['conflicts']);
    expect(pair(moved.body, 'feat-b')).toMatchObject({ cached: false, conflicts: [] });
    expect(pair(moved.body, 'feat-c')?.cached).toBe(true);
    expect(moved.body.status).toBe('clear');
  });
});

describe('alock conflicts: bad input, one line each, exit 2', () => {
  const expectOneLine = (r: { code: number; stdout: string; stderr: string }, pattern: RegExp) => {
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(r.stderr).toMatch(/^ERROR: alock: .+ \(.+\)\n$/);
    expect(r.stderr).toMatch(pattern);
    expect(r.stderr).not.toMatch(STACK_FRAME);
  };

  it('outside a git repository', async () => {
    const plain = mkdtempSync(path.join(os.tmpdir(), 'alock-nogit-'));
    expectOneLine(
      await repo.run(plain, 'alice', ['conflicts'], { AGENT_LOCK_DIR: path.join(plain, 'store') }),
      /is not inside a git repository/,
    );
    const json = await repo.json(plain, 'alice', ['conflicts'], {
      AGENT_LOCK_DIR: path.join(plain, 'store'),
    });
    expect(json.body).toMatchObject({ status: 'error', exit_code: 2, error: { code: 'E_USAGE' } });
  });

  it('on a detached HEAD', async () => {
    git(featA, 'switch', '-q', '--detach');
    expectOneLine(await repo.run(featA, 'alice', ['conflicts']), /detached HEAD.*\(check out a branch/);
  });

  it('with a base branch that does not exist', async () => {
    expectOneLine(
      await repo.run(featA, 'alice', ['conflicts', '--base', 'nope']),
      /base branch nope was not found/,
    );
    expectOneLine(await repo.run(featA, 'alice', ['conflicts', '--base', '--all']), /is not a branch name/);
  });

  it('with a git older than 2.38', async () => {
    const bin = mkdtempSync(path.join(os.tmpdir(), 'alock-oldgit-'));
    mkdirSync(bin, { recursive: true });
    const fake = path.join(bin, 'git');
    // Answers --version like git 2.37 would; anything else must not be reached.
    writeFileSync(
      fake,
      '#!/bin/sh\nif [ "$1" = "--version" ]; then echo "git version 2.37.1"; exit 0; fi\nexit 99\n',
    );
    chmodSync(fake, 0o755);
    const before = snapshot();
    const r = await repo.run(featA, 'alice', ['conflicts'], { PATH: `${bin}:${process.env.PATH ?? ''}` });
    expectOneLine(r, /needs git 2\.38 or newer .*found git version 2\.37\.1.*\(upgrade git\)/);
    expect(snapshot()).toBe(before);
  });
});
