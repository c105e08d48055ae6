import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Locks, openLocks } from '../../src/index.js';
import { enforceHolder, killHolder } from './enforce-holder.js';

let tmp = '';
let tree = '';
let store = '';
const handles: Locks[] = [];

const mode = (file: string) => statSync(file).mode & 0o777;
const open = async (agentId: string) => {
  const locks = await openLocks({ dir: tree, storeDir: store, identity: { agentId }, env: {} });
  handles.push(locks);
  return locks;
};

beforeEach(() => {
  tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-enforce-')));
  tree = path.join(tmp, 'repo');
  store = path.join(tmp, 'store');
  mkdirSync(path.join(tree, 'src/lib'), { recursive: true });
  mkdirSync(path.join(tree, '.git/objects'), { recursive: true });
  writeFileSync(path.join(tree, 'src/a.ts'), 'a');
  writeFileSync(path.join(tree, 'src/lib/b.ts'), 'b', { mode: 0o600 });
  writeFileSync(path.join(tree, 'src/run.sh'), 'echo', { mode: 0o755 });
  writeFileSync(path.join(tree, '.git/objects/x'), 'git', { mode: 0o644 });
  writeFileSync(path.join(tree, 'outside.txt'), 'o', { mode: 0o644 });
  symlinkSync(path.join(tree, 'outside.txt'), path.join(tree, 'src/link.txt'));
});

afterEach(async () => {
  for (const locks of handles.splice(0)) await locks.close();
  rmSync(tmp, { recursive: true, force: true });
});

describe('acquire with enforce', () => {
  it('makes the matched regular files read-only while held and restores each exact mode on release', async () => {
    const a = await open('a');
    const before = { a: mode(path.join(tree, 'src/a.ts')), b: mode(path.join(tree, 'src/lib/b.ts')) };
    const won = await a.acquire('src/**', { enforce: true });
    expect(won.status).toBe('acquired');
    expect(won.locks[0]?.frozen_paths.sort()).toEqual(
      ['src/a.ts', 'src/lib/b.ts', 'src/run.sh'].map((f) => path.join(tree, f)).sort(),
    );
    expect(mode(path.join(tree, 'src/a.ts'))).toBe(before.a & ~0o222);
    expect(mode(path.join(tree, 'src/lib/b.ts'))).toBe(0o400);
    expect(mode(path.join(tree, 'src/run.sh'))).toBe(0o555);
    // The symlink and its target are not frozen.
    expect(mode(path.join(tree, 'outside.txt'))).toBe(0o644);

    expect((await a.release('src/**')).status).toBe('released');
    expect(mode(path.join(tree, 'src/a.ts'))).toBe(before.a);
    expect(mode(path.join(tree, 'src/lib/b.ts'))).toBe(0o600);
    expect(mode(path.join(tree, 'src/run.sh'))).toBe(0o755);
  });

  it('never touches anything under .git/', async () => {
    const a = await open('a');
    const won = await a.acquire('**', { enforce: true });
    expect(won.locks[0]?.frozen_paths).not.toContain(path.join(tree, '.git/objects/x'));
    expect(mode(path.join(tree, '.git/objects/x'))).toBe(0o644);
    expect(mode(path.join(tree, 'outside.txt'))).toBe(0o444);
  });

  it('thaws the files when another agent breaks the lock', async () => {
    const a = await open('a');
    await a.acquire('src/a.ts', { enforce: true });
    expect(mode(path.join(tree, 'src/a.ts')) & 0o222).toBe(0);
    const b = await open('b');
    expect((await b.breakLock('src/a.ts', { reason: 'test' })).status).toBe('broken');
    expect(mode(path.join(tree, 'src/a.ts')) & 0o200).toBe(0o200);
  });

  it('refuses more than 500 files without force and keeps no lock; with force it freezes them all', async () => {
    mkdirSync(path.join(tree, 'many'));
    for (let i = 0; i < 501; i++) writeFileSync(path.join(tree, `many/f${i}.txt`), '');
    const a = await open('a');
    await expect(a.acquire('many/**', { enforce: true })).rejects.toMatchObject({ code: 'E_USAGE' });
    expect((await a.list()).locks).toEqual([]);
    expect(mode(path.join(tree, 'many/f0.txt')) & 0o200).toBe(0o200);
    const won = await a.acquire('many/**', { enforce: true, force: true });
    expect(won.locks[0]?.frozen_paths).toHaveLength(501);
    expect(mode(path.join(tree, 'many/f500.txt')) & 0o222).toBe(0);
  });

  it.each([
    ['reaped', false],
    ['orphaned', true],
  ])('thaws the files of a holder killed while holding when its lock is %s', async (_how, withNote) => {
    // The holder is a real process that takes the lock itself, then is SIGKILLed.
    const { child, said } = await enforceHolder(tree, store, withNote);
    expect(said).toBe('acquired');
    expect(mode(path.join(tree, 'src/a.ts')) & 0o222).toBe(0);
    await killHolder(child);

    const b = await open('b');
    const listed = await b.list();
    expect(mode(path.join(tree, 'src/a.ts')) & 0o200).toBe(0o200);
    expect(mode(path.join(tree, 'src/lib/b.ts'))).toBe(0o600);
    if (withNote) {
      expect(listed.locks.map((l) => [l.status, l.frozen_paths])).toEqual([['orphaned', []]]);
    } else {
      expect(listed.locks).toEqual([]);
    }
  });
});

describe('enforce with overlapping locks', () => {
  it('restores the real mode only when the last of two shared locks on a file lets go', async () => {
    const a = await open('a');
    const b = await open('b');
    const file = path.join(tree, 'src/a.ts');
    const before = mode(file);
    expect((await a.acquire('src/a.ts', { shared: true, enforce: true })).status).toBe('acquired');
    expect((await b.acquire('src/a.ts', { shared: true, enforce: true })).status).toBe('acquired');
    expect((await a.release('src/a.ts')).status).toBe('released');
    expect(mode(file) & 0o222).toBe(0);
    expect((await b.release('src/a.ts')).status).toBe('released');
    expect(mode(file)).toBe(before);
  });

  it('keeps a child-frozen file read-only after the parent releases, and restores it after the child', async () => {
    const parent = await open('p');
    const child = await openLocks({
      dir: tree,
      storeDir: store,
      identity: { agentId: 'c', parentAgentId: 'p' },
      env: {},
    });
    handles.push(child);
    const file = path.join(tree, 'src/lib/b.ts');
    expect((await parent.acquire('src/**', { enforce: true })).status).toBe('acquired');
    expect((await child.acquire('src/lib/b.ts', { enforce: true })).status).toBe('acquired');
    expect((await parent.release('src/**')).status).toBe('released');
    expect(mode(file)).toBe(0o400);
    expect(mode(path.join(tree, 'src/a.ts')) & 0o200).toBe(0o200);
    expect((await child.release('src/lib/b.ts')).status).toBe('released');
    expect(mode(file)).toBe(0o600);
  });

  it('never freezes the .git file of a linked worktree', async () => {
    writeFileSync(path.join(tree, 'src/.git'), 'gitdir: /elsewhere\n', { mode: 0o644 });
    const a = await open('a');
    const won = await a.acquire('src/**', { enforce: true });
    expect(won.locks[0]?.frozen_paths).not.toContain(path.join(tree, 'src/.git'));
    expect(mode(path.join(tree, 'src/.git'))).toBe(0o644);
  });
});
