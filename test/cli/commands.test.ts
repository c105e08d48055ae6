import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openLocks } from '../../src/locks.js';
import {
  ENVELOPE_FIELDS,
  LOCK_FIELDS,
  makeSandbox,
  openAsDeadHolder,
  type Sandbox,
  STACK_FRAME,
} from './cli-harness.js';

let box: Sandbox;
beforeEach(() => {
  box = makeSandbox();
});
afterEach(() => {
  box.cleanup();
});

const firstLine = (text: string) => text.split('\n')[0] ?? '';

/** Plants an orphan on `scope` (a dead holder's lock with a note) and returns its id. */
async function plantOrphan(scope: string, agent = 'ghost'): Promise<string> {
  const dead = await openAsDeadHolder(box, agent);
  const got = await dead.locks.acquire(scope, { intent: 'half done work' });
  expect(got.status).toBe('acquired');
  expect((await dead.locks.note(scope, 'step 1 of 3 done')).status).toBe('noted');
  await dead.close();
  return got.locks[0]!.id;
}

describe('acquire', () => {
  it('answers ACQUIRED with the scope, the intent and the token, exit 0', async () => {
    const r = await box.run('A', ['acquire', 'src/a.ts', '-m', 'refactor login']);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(firstLine(r.stdout)).toBe('ACQUIRED src/a.ts');
    expect(r.stdout).toContain('"refactor login"');
    expect(r.stdout).toMatch(/token \S{20,}/);
    expect(r.stdout).toContain('alock release src/a.ts');
  });

  it('turns an existing folder into folder/** and the tree root into **', async () => {
    const folder = await box.run('A', ['acquire', 'src/lib']);
    expect(firstLine(folder.stdout)).toBe('ACQUIRED src/lib/**');
    expect((await box.run('A', ['release', 'src/lib'])).code).toBe(0);
    const root = await box.run('A', ['acquire', '.']);
    expect(root.code).toBe(0);
    expect(firstLine(root.stdout)).toBe('ACQUIRED **');
  });

  it('answers ALREADY YOURS, exit 0, when an own lock covers the scope', async () => {
    expect((await box.run('A', ['acquire', 'src/**'])).code).toBe(0);
    const r = await box.run('A', ['acquire', 'src/a.ts']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('ALREADY YOURS src/a.ts');
    expect(r.stdout).toContain('covered by your src/**');
  });

  it('answers HELD naming the holder and the intent, exit 1', async () => {
    await box.run('A', ['acquire', 'src/**', '-m', 'refactor login']);
    const r = await box.run('B', ['acquire', 'src/a.ts']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('');
    expect(firstLine(r.stdout)).toBe('HELD src/a.ts');
    expect(r.stdout).toContain('src/**');
    expect(r.stdout).toMatch(/by A\b/);
    expect(r.stdout).toContain('"refactor login"');
    expect(r.stdout).toContain('alock check src/a.ts');
  });

  it('suggests next commands that work from where they were typed, --dir included', async () => {
    // In a git worktree --dir acts as the current folder: the locks are src/a.ts and docs/**.
    expect(spawnSync('git', ['init', '-q'], { cwd: box.tree }).status).toBe(0);
    const claimed = await box.run('A', ['--dir', 'src', 'acquire', 'a.ts', '../docs/**']);
    expect(claimed.code).toBe(0);
    expect(claimed.stdout).toContain(
      `next: do the work; alock --dir src note a.ts "progress" as you go; alock --dir src release a.ts '../docs/**' when done`,
    );
    // A glob is quoted once, as the user would type it.
    const held = await box.run('B', ['acquire', 'src/*.ts']);
    expect(held.code).toBe(1);
    expect(held.stdout).toContain(`(alock check 'src/*.ts')`);
    // Run as suggested, the release finds both locks.
    const released = await box.run('A', ['--dir', 'src', 'release', 'a.ts', '../docs/**']);
    expect(firstLine(released.stdout)).toBe('RELEASED src/a.ts docs/**');
  });

  it('is all or nothing: one held scope grants none of the others', async () => {
    await box.run('A', ['acquire', '@merge']);
    const r = await box.json('B', ['acquire', 'docs/x.md', '@merge']);
    expect(r.code).toBe(1);
    expect(r.body.status).toBe('held');
    const after = await box.json('B', ['check', 'docs/x.md']);
    expect(after.body.status).toBe('free');
  });

  it('lets shared locks coexist but not with an exclusive one', async () => {
    expect((await box.run('A', ['acquire', 'docs/**', '--shared'])).code).toBe(0);
    expect((await box.run('B', ['acquire', 'docs/**', '--shared'])).code).toBe(0);
    const exclusive = await box.run('C', ['acquire', 'docs/a.md']);
    expect(exclusive.code).toBe(1);
    expect(firstLine(exclusive.stdout)).toBe('HELD docs/a.md');
  });

  it("answers REFUSED (parent_scope), exit 1, when a child asks for its parent's exact scope", async () => {
    await box.run('P', ['acquire', 'src/**']);
    const child = { AGENT_PARENT_ID: 'P' };
    const r = await box.run('C', ['acquire', 'src/**'], child);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toBe("REFUSED 'src/**' is your parent's lock (P)");
    const json = await box.json('C', ['acquire', 'src/**'], child);
    expect(json.body.status).toBe('parent_scope');
    expect(json.body.exit_code).toBe(1);
    const inside = await box.run('C', ['acquire', 'src/a.ts'], child);
    expect(inside.code).toBe(0);
    expect(firstLine(inside.stdout)).toBe('ACQUIRED src/a.ts');
  });

  it('answers INTERRUPTED WORK, exit 1, on an orphan and names resume and break', async () => {
    await plantOrphan('src/a.ts');
    const r = await box.run('A', ['acquire', 'src/a.ts']);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toMatch(/^INTERRUPTED WORK src\/a\.ts/);
    expect(r.stdout).toContain('step 1 of 3 done');
    expect(r.stdout).toContain('alock resume src/a.ts');
    expect(r.stdout).toContain('alock break src/a.ts');
    const json = await box.json('A', ['acquire', 'src/a.ts']);
    expect(json.body.status).toBe('interrupted');
    expect(json.body.conflicts[0]?.status).toBe('orphaned');
  });

  it('reaps a dead holder without notes so the scope is free again', async () => {
    const dead = await openAsDeadHolder(box, 'ghost');
    expect((await dead.locks.acquire('src/b.ts')).status).toBe('acquired');
    await dead.close();
    const r = await box.run('A', ['acquire', 'src/b.ts']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('ACQUIRED src/b.ts');
  });
  it('takes a scope named twice as one lock', async () => {
    const r = await box.json('A', ['acquire', '@d', '@d', 'src/a.ts', './src/a.ts']);
    expect(r.code).toBe(0);
    expect(r.body.locks.map((lock) => lock.scope)).toEqual(['@d', 'src/a.ts']);
    expect((await box.json('A', ['list'])).body.locks).toHaveLength(2);
  });
});

describe('release', () => {
  it('answers RELEASED, exit 0, and frees the scope', async () => {
    await box.run('A', ['acquire', 'src/a.ts']);
    const r = await box.run('A', ['release', 'src/a.ts']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('RELEASED src/a.ts');
    expect((await box.run('B', ['acquire', 'src/a.ts'])).code).toBe(0);
  });

  it('answers NOT LOCKED, exit 1, for a scope nobody holds', async () => {
    const r = await box.run('A', ['release', 'src/a.ts']);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toMatch(/^NOT LOCKED src\/a\.ts/);
  });

  it("answers REFUSED, exit 1, for another agent's lock and keeps it", async () => {
    await box.run('A', ['acquire', 'src/a.ts']);
    const r = await box.run('B', ['release', 'src/a.ts']);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toMatch(/^REFUSED src\/a\.ts is held by A/);
    expect((await box.json('B', ['check', 'src/a.ts'])).body.status).toBe('held');
  });

  it('releases with --token from a different AGENT_ID', async () => {
    const got = await box.json('A', ['acquire', '@review/pr-123', '--ttl', '600']);
    const token = got.body.locks[0]?.token;
    expect(typeof token).toBe('string');
    const r = await box.run('B', ['release', '@review/pr-123', '--token', String(token)]);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('RELEASED @review/pr-123');
    expect((await box.json('C', ['list'])).body.locks).toEqual([]);
  });

  it('refuses a wrong --token from a different AGENT_ID', async () => {
    await box.run('A', ['acquire', '@merge']);
    const r = await box.run('B', ['release', '@merge', '--token', 'not-the-token']);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toMatch(/^REFUSED /);
  });

  it('release --all and release-all release every own lock and a child lock, but not others', async () => {
    await box.run('A', ['acquire', 'src/a.ts', '@merge']);
    await box.run('K', ['acquire', 'docs/k.md'], { AGENT_PARENT_ID: 'A' });
    await box.run('B', ['acquire', 'src/b.ts']);
    const all = await box.json('A', ['release', '--all']);
    expect(all.code).toBe(0);
    expect(all.body.status).toBe('released');
    expect(all.body.locks.map((l) => l.scope).sort()).toEqual(['@merge', 'docs/k.md', 'src/a.ts']);
    const left = await box.json('A', ['list']);
    expect(left.body.locks.map((l) => l.scope)).toEqual(['src/b.ts']);

    const again = await box.run('B', ['release-all']);
    expect(again.code).toBe(0);
    expect(firstLine(again.stdout)).toBe('RELEASED src/b.ts');
    const nothing = await box.run('B', ['release-all']);
    expect(nothing.code).toBe(0);
    expect(firstLine(nothing.stdout)).toBe('RELEASED (you held nothing)');
    expect((await box.json('B', ['release-all'])).body.command).toBe('release-all');
  });
});

describe('renew', () => {
  it('answers RENEWED, exit 0, with the new lease', async () => {
    await box.run('A', ['acquire', '@review/pr-1', '--ttl', '30']);
    const r = await box.run('A', ['renew', '@review/pr-1', '--ttl', '120']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('RENEWED @review/pr-1 for 120s');
    const json = await box.json('A', ['renew', '@review/pr-1']);
    expect(json.body.locks[0]?.ttl_seconds).toBe(120);
    expect(typeof json.body.locks[0]?.expires_at).toBe('string');
  });

  it('renews with --token from a different AGENT_ID', async () => {
    const got = await box.json('A', ['acquire', '@lease', '--ttl', '30']);
    const token = String(got.body.locks[0]?.token);
    const r = await box.run('B', ['renew', '@lease', '--token', token]);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toMatch(/^RENEWED @lease/);
  });

  it('answers EXPIRED, exit 1, once the lease has lapsed, and never revives it', async () => {
    // Planted with a clock ten minutes back, so the 60 s lease lapsed long ago.
    const past = await openLocks({
      dir: box.tree,
      env: { AGENT_LOCK_DIR: box.store, AGENT_LOCK_REDIS_PROBE: 'off' },
      identity: { agentId: 'A' },
      clock: () => Date.now() - 600_000,
    });
    const got = await past.acquire('@review/pr-9', { ttl: 60 });
    await past.close();
    expect(got.status).toBe('acquired');
    const r = await box.run('A', ['renew', '@review/pr-9']);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toMatch(/^EXPIRED @review\/pr-9/);
    expect(r.stdout).toContain('alock acquire @review/pr-9');
    expect((await box.json('A', ['list'])).body.locks).toEqual([]);
    const byToken = await box.json('B', ['renew', '@review/pr-9', '--token', String(got.locks[0]?.token)]);
    expect(byToken.body.status).toBe('expired');
    expect(byToken.code).toBe(1);
  });

  it('answers NOT LOCKED, exit 1, without a lock, and REFUSED, exit 1, on another agent lock', async () => {
    const none = await box.run('A', ['renew', '@nothing']);
    expect(none.code).toBe(1);
    expect(firstLine(none.stdout)).toMatch(/^NOT LOCKED @nothing/);
    await box.run('A', ['acquire', '@mine', '--ttl', '30']);
    const other = await box.run('B', ['renew', '@mine']);
    expect(other.code).toBe(1);
    expect(firstLine(other.stdout)).toMatch(/^REFUSED @mine/);
  });
});

describe('check', () => {
  it('answers FREE, YOURS and HELD with exit 0, 0 and 1', async () => {
    const free = await box.run('A', ['check', 'src/a.ts']);
    expect(free.code).toBe(0);
    expect(firstLine(free.stdout)).toBe('FREE src/a.ts');

    await box.run('A', ['acquire', 'src/**', '-m', 'big refactor']);
    const mine = await box.run('A', ['check', 'src/a.ts']);
    expect(mine.code).toBe(0);
    expect(firstLine(mine.stdout)).toBe('YOURS src/a.ts (covered by src/**)');

    const held = await box.run('B', ['check', 'src/lib/x.ts']);
    expect(held.code).toBe(1);
    expect(firstLine(held.stdout)).toBe('HELD src/lib/x.ts');
    expect(held.stdout).toMatch(/by A\b/);
    expect(held.stdout).toContain('"big refactor"');
  });

  it('check --shared is free against a shared lock', async () => {
    await box.run('A', ['acquire', 'docs/**', '--shared']);
    expect((await box.run('B', ['check', 'docs/a.md', '--shared'])).code).toBe(0);
    expect((await box.run('B', ['check', 'docs/a.md'])).code).toBe(1);
  });
});

describe('list, ls and mine', () => {
  it('answer LISTED, exit 0, with every lock or only the caller and its children', async () => {
    await box.run('A', ['acquire', 'src/a.ts', '-m', 'one']);
    await box.run('K', ['acquire', 'src/k.ts'], { AGENT_PARENT_ID: 'A' });
    await box.run('B', ['acquire', '@merge']);
    const list = await box.run('C', ['list']);
    expect(list.code).toBe(0);
    expect(firstLine(list.stdout)).toMatch(/^LISTED 3 locks \(file store /);
    expect(list.stdout).toContain('src/a.ts');
    expect(list.stdout).toContain('@merge');
    const ls = await box.run('C', ['ls']);
    expect(ls.code).toBe(0);
    expect(firstLine(ls.stdout)).toMatch(/^LISTED 3 locks/);
    const mine = await box.json('A', ['mine']);
    expect(mine.code).toBe(0);
    expect(mine.body.status).toBe('listed');
    expect(mine.body.locks.map((l) => l.scope).sort()).toEqual(['src/a.ts', 'src/k.ts']);
    const mineText = await box.run('B', ['mine']);
    expect(firstLine(mineText.stdout)).toMatch(/^LISTED 1 lock of B /);
  });

  it('lists an orphan with its notes and says how to resume or break it', async () => {
    await plantOrphan('docs/guide.md');
    const r = await box.run('A', ['list']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('orphaned (holder gone or lease ran out)');
    expect(r.stdout).toContain('step 1 of 3 done');
    expect(r.stdout).toContain('alock resume SCOPE');
  });

  it('reports a live lock untouched beyond the stale window as stale, and keeps it', async () => {
    const past = await openLocks({
      dir: box.tree,
      env: { AGENT_LOCK_DIR: box.store, AGENT_LOCK_REDIS_PROBE: 'off' },
      identity: { agentId: 'old' },
      clock: () => Date.now() - 3 * 60 * 60 * 1000,
    });
    await past.acquire('src/old.ts');
    await past.close();
    const json = await box.json('A', ['list']);
    expect(json.body.locks).toHaveLength(1);
    expect(json.body.locks[0]?.stale).toBe(true);
    const text = await box.run('A', ['list']);
    expect(text.stdout).toContain('STALE');
    expect((await box.run('A', ['acquire', 'src/old.ts'])).code).toBe(1);
  });
});

describe('note', () => {
  it('answers NOTED, exit 0, and the note shows in the lock', async () => {
    await box.run('A', ['acquire', 'src/a.ts']);
    const r = await box.run('A', ['note', 'src/a.ts', 'parsed', 'the', 'config']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('NOTED src/a.ts (1 note)');
    const json = await box.json('B', ['list']);
    const notes = json.body.locks[0]?.notes as { at: string; text: string }[];
    expect(notes.map((n) => n.text)).toEqual(['parsed the config']);
    expect(Number.isNaN(Date.parse(notes[0]!.at))).toBe(false);
  });

  it('answers NOT LOCKED, exit 1, without a lock and REFUSED, exit 1, on another agent lock', async () => {
    const none = await box.run('A', ['note', 'src/a.ts', 'hello']);
    expect(none.code).toBe(1);
    expect(firstLine(none.stdout)).toMatch(/^NOT LOCKED src\/a\.ts/);
    await box.run('A', ['acquire', 'src/a.ts']);
    const other = await box.run('B', ['note', 'src/a.ts', 'hello']);
    expect(other.code).toBe(1);
    expect(firstLine(other.stdout)).toMatch(/^REFUSED src\/a\.ts/);
  });
  it('shows a note on one line, whatever control characters it holds', async () => {
    await box.run('A', ['acquire', '@n']);
    expect((await box.run('A', ['note', '@n', 'done\nHELD src/** by root'])).code).toBe(0);
    // LINE SEPARATOR, a line break to some readers, is no control character (those are refused).
    expect((await box.run('A', ['note', '@n', 'a\u2028HELD b'])).code).toBe(0);
    const listed = await box.run('B', ['list']);
    expect(listed.stdout).toContain('done\\nHELD src/** by root');
    expect(listed.stdout).toContain('a\\u2028HELD b');
    expect(listed.stdout.split(/[\n\r\u0085\u2028\u2029]/).filter((line) => line.startsWith('HELD'))).toEqual(
      [],
    );
    // --json keeps the text as written.
    const notes = (await box.json('B', ['list'])).body.locks[0]!.notes as { text: string }[];
    expect(notes.map((note) => note.text)).toEqual(['done\nHELD src/** by root', 'a\u2028HELD b']);
  });
});

describe('resume', () => {
  it('answers RESUMED, exit 0, taking the orphan with its notes and a new fence and token', async () => {
    const orphanId = await plantOrphan('src/a.ts');
    const before = await box.json('A', ['list']);
    const oldFence = before.body.locks[0]?.fence as number;
    const r = await box.json('A', ['resume', 'src/a.ts']);
    expect(r.code).toBe(0);
    expect(r.body.status).toBe('resumed');
    const lock = r.body.locks[0]!;
    expect(lock.agent_id).toBe('A');
    expect(lock.status).toBe('active');
    expect(lock.id).not.toBe(orphanId);
    expect(lock.fence as number).toBeGreaterThan(oldFence);
    expect(typeof lock.token).toBe('string');
    expect((lock.notes as { text: string }[]).map((n) => n.text)).toEqual(['step 1 of 3 done']);
    const blocked = await box.run('B', ['acquire', 'src/a.ts']);
    expect(blocked.code).toBe(1);
    expect(blocked.stdout).toMatch(/by A\b/);
  });

  it('text answer starts with RESUMED and names the former holder', async () => {
    await plantOrphan('src/a.ts', 'ghost-7');
    const r = await box.run('A', ['resume', 'src/a.ts']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toMatch(/^RESUMED src\/a\.ts \(fence \d+, from ghost-7\)/);
  });

  it('answers NOT LOCKED, exit 1, without an orphan, and HELD, exit 1, when another lock conflicts', async () => {
    const none = await box.run('A', ['resume', 'src/a.ts']);
    expect(none.code).toBe(1);
    expect(firstLine(none.stdout)).toMatch(/^NOT LOCKED src\/a\.ts/);

    await plantOrphan('src/a.ts');
    expect((await box.run('B', ['acquire', 'src/**'])).code).toBe(0);
    const held = await box.run('A', ['resume', 'src/a.ts']);
    expect(held.code).toBe(1);
    expect(firstLine(held.stdout)).toBe('HELD src/a.ts');
    expect(held.stdout).toMatch(/by B\b/);
  });
});

describe('break and log', () => {
  it('answers BROKEN, exit 0, for any holder, and log records who broke what and why', async () => {
    await box.run('A', ['acquire', '@merge']);
    const r = await box.run('B', ['break', '@merge', '--reason', 'stuck since yesterday']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe('BROKEN @merge (was held by A; recorded)');
    expect((await box.json('C', ['list'])).body.locks).toEqual([]);
    const log = await box.run('C', ['log']);
    expect(log.code).toBe(0);
    expect(firstLine(log.stdout)).toBe('LISTED 2 events, newest last');
    expect(log.stdout).toMatch(/ BROKEN @merge A \(child of \S+\) by B fence \d+: stuck since yesterday\n$/);
  });

  it('breaks an orphan by scope and by --id', async () => {
    await plantOrphan('src/a.ts');
    expect((await box.run('A', ['break', 'src/a.ts'])).code).toBe(0);
    expect((await box.run('A', ['acquire', 'src/a.ts'])).code).toBe(0);
    const id = await plantOrphan('docs/b.md');
    const byId = await box.json('A', ['break', '--id', id]);
    expect(byId.code).toBe(0);
    expect(byId.body.status).toBe('broken');
    expect(byId.body.locks.map((l) => l.id)).toEqual([id]);
  });

  it('answers NOT LOCKED, exit 1, when nothing matches', async () => {
    const r = await box.run('A', ['break', '@nothing']);
    expect(r.code).toBe(1);
    expect(firstLine(r.stdout)).toMatch(/^NOT LOCKED @nothing/);
  });
});

describe('the --json envelope', () => {
  it('prints exactly one object with every envelope field, and every lock field', async () => {
    const r = await box.json('A', ['acquire', 'src/a.ts', '-m', 'refactor login', '--ttl', '300'], {
      AGENT_PARENT_ID: 'boss',
    });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    for (const field of ENVELOPE_FIELDS) expect(r.body).toHaveProperty(field);
    expect(r.body).toMatchObject({
      schema: 'agent-lock/v1',
      command: 'acquire',
      status: 'acquired',
      ok: true,
      exit_code: 0,
      agent: { id: 'A', parent_id: 'boss' },
      conflicts: [],
      error: null,
    });
    expect(typeof r.body.message).toBe('string');
    expect(r.body.locks).toHaveLength(1);
    const lock = r.body.locks[0]!;
    for (const field of LOCK_FIELDS) expect(lock).toHaveProperty(field);
    expect(lock).toMatchObject({
      scope: 'src/a.ts',
      kind: 'path',
      mode: 'exclusive',
      agent_id: 'A',
      parent_agent_id: 'boss',
      intent: 'refactor login',
      tree: box.tree,
      status: 'active',
      frozen_paths: [],
      notes: [],
      stale: false,
    });
    expect(typeof lock.id).toBe('string');
    expect(Number.isInteger(lock.fence)).toBe(true);
    expect(Number.isInteger(lock.pid)).toBe(true);
    expect(typeof lock.host).toBe('string');
    expect(typeof lock.started).toBe('string');
    for (const time of ['created_at', 'updated_at', 'expires_at'] as const) {
      expect(Number.isNaN(Date.parse(String(lock[time])))).toBe(false);
    }
    // At least 128 random bits: 22 base64url characters or more.
    expect(String(lock.token)).toMatch(/^[A-Za-z0-9_-]{22,}$/);
  });

  it('a resource lock has kind resource and no tree', async () => {
    const r = await box.json('A', ['acquire', '@git/index']);
    expect(r.body.locks[0]).toMatchObject({ scope: '@git/index', kind: 'resource', tree: null });
  });

  it('shows the token only in the taker acquire answer', async () => {
    const taken = await box.json('A', ['acquire', 'src/a.ts']);
    expect(taken.body.locks[0]).toHaveProperty('token');
    const again = await box.json('A', ['acquire', 'src/a.ts']);
    expect(again.body.status).toBe('already_mine');
    expect(again.body.locks[0]).not.toHaveProperty('token');
    const held = await box.json('B', ['acquire', 'src/a.ts']);
    expect(held.body.conflicts[0]).not.toHaveProperty('token');
    const check = await box.json('B', ['check', 'src/a.ts']);
    expect(check.body.conflicts[0]).not.toHaveProperty('token');
    for (const [agent, argv] of [
      ['B', ['list']],
      ['A', ['mine']],
      ['A', ['note', 'src/a.ts', 'x']],
      ['A', ['renew', 'src/a.ts']],
    ] as const) {
      const r = await box.json(agent, [...argv]);
      expect(r.code).toBe(0);
      expect(r.body.locks.length).toBeGreaterThan(0);
      for (const lock of r.body.locks) expect(lock).not.toHaveProperty('token');
    }
    const released = await box.json('A', ['release', 'src/a.ts']);
    expect(released.body.locks[0]).not.toHaveProperty('token');
  });

  it('fences strictly increase across grants', async () => {
    const a = await box.json('A', ['acquire', '@one']);
    const b = await box.json('B', ['acquire', '@two']);
    await box.run('A', ['release', '@one']);
    const c = await box.json('C', ['acquire', '@one']);
    const fences = [a, b, c].map((r) => r.body.locks[0]?.fence as number);
    expect(fences[1]!).toBeGreaterThan(fences[0]!);
    expect(fences[2]!).toBeGreaterThan(fences[1]!);
  });

  it('the held answer lists the blocking locks as conflicts, ok false, exit_code 1', async () => {
    await box.run('A', ['acquire', 'src/**', '-m', 'refactor']);
    const r = await box.json('B', ['acquire', 'src/a.ts']);
    expect(r.code).toBe(1);
    expect(r.body).toMatchObject({ status: 'held', ok: false, exit_code: 1, locks: [], error: null });
    expect(r.body.conflicts).toHaveLength(1);
    expect(r.body.conflicts[0]).toMatchObject({ scope: 'src/**', agent_id: 'A', intent: 'refactor' });
  });

  it('an error is one object with status error, exit_code 2 and a stable error code', async () => {
    const usage = await box.json('A', ['acquire', 'src/a.ts', '--bogus']);
    expect(usage.code).toBe(2);
    expect(usage.body).toMatchObject({
      schema: 'agent-lock/v1',
      command: 'acquire',
      status: 'error',
      ok: false,
      exit_code: 2,
      locks: [],
      conflicts: [],
    });
    expect(usage.body.error?.code).toBe('E_USAGE');
    for (const field of ENVELOPE_FIELDS) expect(usage.body).toHaveProperty(field);
    const outside = await box.json('A', ['acquire', '../repo-other/x']);
    expect(outside.code).toBe(2);
    expect(outside.body.error?.code).toBe('E_SCOPE_OUTSIDE_TREE');
    expect(outside.body.error?.message).toContain('is outside the tree');
    expect(STACK_FRAME.test(outside.stdout)).toBe(false);
  });

  it('an error envelope names the command also after a global flag with a value', async () => {
    const r = await box.json('A', ['--dir', box.tree, 'acquire', '']);
    expect(r.code).toBe(2);
    expect(r.body.error?.code).toBe('E_SCOPE_EMPTY');
    expect(r.body.command).toBe('acquire');
  });

  it('an error envelope still names the agent when the identity is valid', async () => {
    const r = await box.json('A', ['acquire', ''], { AGENT_PARENT_ID: 'boss' });
    expect(r.code).toBe(2);
    expect(r.body.agent).toEqual({ id: 'A', parent_id: 'boss' });
  });

  it('accepts --json after the command too', async () => {
    const r = await box.run('A', ['acquire', '@x', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).status).toBe('acquired');
  });
});

describe('exit codes follow the contract table (docs/cli.md)', () => {
  it('every answer maps to its exit code, in text and JSON alike', async () => {
    await plantOrphan('docs/orphan.md');
    const cases: {
      agent: string;
      argv: string[];
      env?: Record<string, string>;
      status: string;
      code: number;
    }[] = [
      { agent: 'A', argv: ['acquire', 'src/**', '-m', 'work'], status: 'acquired', code: 0 },
      { agent: 'A', argv: ['acquire', 'src/a.ts'], status: 'already_mine', code: 0 },
      { agent: 'B', argv: ['acquire', 'src/a.ts'], status: 'held', code: 1 },
      {
        agent: 'K',
        argv: ['acquire', 'src/**'],
        env: { AGENT_PARENT_ID: 'A' },
        status: 'parent_scope',
        code: 1,
      },
      { agent: 'B', argv: ['acquire', 'docs/orphan.md'], status: 'interrupted', code: 1 },
      { agent: 'B', argv: ['check', 'docs/free.md'], status: 'free', code: 0 },
      { agent: 'A', argv: ['check', 'src/x.ts'], status: 'mine', code: 0 },
      { agent: 'B', argv: ['check', 'src/x.ts'], status: 'held', code: 1 },
      { agent: 'B', argv: ['list'], status: 'listed', code: 0 },
      { agent: 'B', argv: ['mine'], status: 'listed', code: 0 },
      { agent: 'A', argv: ['note', 'src/**', 'halfway'], status: 'noted', code: 0 },
      { agent: 'B', argv: ['note', 'src/**', 'hi'], status: 'refused', code: 1 },
      { agent: 'B', argv: ['note', 'docs/none.md', 'hi'], status: 'not_found', code: 1 },
      { agent: 'A', argv: ['renew', 'src/**'], status: 'renewed', code: 0 },
      { agent: 'B', argv: ['renew', 'src/**'], status: 'refused', code: 1 },
      { agent: 'B', argv: ['renew', 'docs/none.md'], status: 'not_found', code: 1 },
      { agent: 'B', argv: ['release', 'src/**'], status: 'refused', code: 1 },
      { agent: 'B', argv: ['release', 'docs/none.md'], status: 'not_found', code: 1 },
      { agent: 'B', argv: ['resume', 'docs/none.md'], status: 'not_found', code: 1 },
      { agent: 'B', argv: ['resume', 'docs/orphan.md'], status: 'resumed', code: 0 },
      { agent: 'A', argv: ['release', 'src/**'], status: 'released', code: 0 },
      { agent: 'C', argv: ['break', 'docs/orphan.md'], status: 'broken', code: 0 },
      { agent: 'C', argv: ['break', 'docs/orphan.md'], status: 'not_found', code: 1 },
      // log --json prints JSON lines, one per event (test/cli/log.test.ts).
      { agent: 'C', argv: ['whoami'], status: 'identified', code: 0 },
      { agent: 'C', argv: ['version'], status: 'version', code: 0 },
      { agent: 'C', argv: ['contract'], status: 'contract', code: 0 },
      { agent: 'C', argv: ['completion', 'bash'], status: 'completion', code: 0 },
      { agent: 'C', argv: ['init'], status: 'initialized', code: 0 },
    ];
    for (const c of cases) {
      const r = await box.json(c.agent, c.argv, c.env);
      expect({ argv: c.argv, status: r.body.status, code: r.code }).toEqual({
        argv: c.argv,
        status: c.status,
        code: c.code,
      });
      expect(r.body.exit_code).toBe(c.code);
      expect(r.body.ok).toBe(c.code === 0);
    }
  });
});

describe('whoami, version, contract, completion, init', () => {
  it('whoami shows the agent, its parent and where each came from', async () => {
    const r = await box.run('A', ['whoami'], { AGENT_PARENT_ID: 'boss' });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('AGENT A (from AGENT_ID)');
    expect(r.stdout).toContain('PARENT boss (from AGENT_PARENT_ID)');
    expect(r.stdout).toMatch(/^HOLDER pid \d+ /m);
    expect(r.stdout).toContain(`TREE ${box.tree}`);
    expect(r.stdout).toContain(`STORE file ${box.store}`);
    const json = await box.json('A', ['whoami'], { AGENT_PARENT_ID: 'boss' });
    expect(json.body.identity).toMatchObject({
      agent_id: 'A',
      agent_source: 'AGENT_ID',
      parent_agent_id: 'boss',
      parent_source: 'AGENT_PARENT_ID',
    });
  });

  it('whoami derives the parent from the process when only AGENT_ID is set', async () => {
    const json = await box.json('A', ['whoami']);
    const identity = json.body.identity as { parent_source: string; parent_agent_id: string | null };
    expect(identity.parent_source).toBe('without AGENT_ID');
    expect(identity.parent_agent_id).toMatch(/-[0-9a-f]{8}$/);
  });

  it('whoami warns when sub-agents of one session would share an id', async () => {
    const r = await box.run('', ['whoami'], {
      AGENT_ID: undefined,
      CLAUDE_CODE_SESSION_ID: 'abcdef12-3456-4789-8abc-def012345678',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('AGENT claude-abcdef12 (from CLAUDE_CODE_SESSION_ID)');
    expect(r.stdout).toMatch(/^WARNING .*AGENT_ID/m);
  });

  it('version prints one version line, exit 0', async () => {
    const r = await box.run('A', ['version']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^\d+\.\d+\.\d+(-[\w.]+)?\n$/);
  });

  it('contract is valid JSON that lists every command with its answers', async () => {
    const r = await box.run('A', ['contract']);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as {
      schema: string;
      commands: { name: string; aliases: string[]; answers: { exit_0: string[]; exit_1: string[] } }[];
      exit_codes: Record<string, string>;
      json_envelope: string[];
      lock_fields: string[];
    };
    expect(doc.schema).toBe('agent-lock/v1');
    const names = doc.commands.map((c) => c.name).sort();
    expect(names).toEqual(
      [
        'acquire',
        'run',
        'release',
        'release-all',
        'renew',
        'check',
        'list',
        'mine',
        'note',
        'ask',
        'reply',
        'resume',
        'break',
        'log',
        'explain',
        'watch',
        'ui',
        'whoami',
        'version',
        'help',
        'doctor',
        'contract',
        'completion',
        'init',
        'repair',
        'mcp',
        'skill',
        'hooks',
        'guard',
        'conflicts',
      ].sort(),
    );
    expect(doc.commands.find((c) => c.name === 'list')?.aliases).toContain('ls');
    const answers = (name: string) => doc.commands.find((c) => c.name === name)?.answers;
    expect(answers('acquire')?.exit_0.sort()).toEqual(['acquired', 'already_mine']);
    expect(answers('acquire')?.exit_1).toEqual(
      expect.arrayContaining(['held', 'parent_scope', 'interrupted', 'timeout']),
    );
    expect(answers('run')?.exit_1).toEqual(expect.arrayContaining(['held', 'timeout', 'lease_lost']));
    expect(answers('release')).toEqual({ exit_0: ['released'], exit_1: ['not_found', 'refused'] });
    expect(answers('ask')).toEqual({ exit_0: ['asked'], exit_1: ['free', 'mine'] });
    expect(answers('reply')).toEqual({ exit_0: ['replied'], exit_1: ['not_found'] });
    expect(answers('renew')?.exit_1.sort()).toEqual(['expired', 'not_found', 'refused']);
    expect(answers('check')).toEqual({ exit_0: ['free', 'mine'], exit_1: ['held', 'other_worktree'] });
    expect(answers('conflicts')).toEqual({ exit_0: ['clear'], exit_1: ['conflicting'] });
    expect(answers('note')?.exit_1.sort()).toEqual(['not_found', 'refused']);
    expect(answers('resume')).toEqual({ exit_0: ['resumed'], exit_1: ['not_found', 'held'] });
    expect(answers('break')).toEqual({ exit_0: ['broken'], exit_1: ['not_found'] });
    expect(answers('explain')).toEqual({ exit_0: ['disjoint'], exit_1: ['conflict'] });
    expect(Object.keys(doc.exit_codes)).toEqual(expect.arrayContaining(['0', '1', '2', '130']));
    expect(doc.json_envelope).toEqual([...ENVELOPE_FIELDS]);
    expect(doc.lock_fields).toEqual(expect.arrayContaining([...LOCK_FIELDS, 'token']));
    const json = await box.json('A', ['contract']);
    expect(json.body.contract).toEqual(doc);
  });

  it.each(['bash', 'zsh', 'fish'])(
    'completion %s prints a non-empty script naming the program',
    async (shell) => {
      const r = await box.run('A', ['completion', shell]);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout.trim().length).toBeGreaterThan(50);
      expect(r.stdout).toContain('alock');
      expect(r.stdout).toContain('acquire');
    },
  );

  it('completion uses the program name the user typed', async () => {
    let out = '';
    const { runCli } = await import('../../src/cli/run-cli.js');
    const code = await runCli(['completion', 'bash'], {
      stdout: (t) => {
        out += t;
      },
      stderr: () => {},
      env: box.envFor('A'),
      cwd: box.tree,
      programName: 'agent-lock',
    });
    expect(code).toBe(0);
    expect(out).toContain('complete -o filenames -F _agent_lock agent-lock');
  });

  it('completion for an unknown shell is an error, exit 2', async () => {
    const r = await box.run('A', ['completion', 'powershell']);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^ERROR: alock: completion supports bash, zsh or fish/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('init answers INITIALIZED and records the file backend in the store marker', async () => {
    const r = await box.run('A', ['init']);
    expect(r.code).toBe(0);
    expect(firstLine(r.stdout)).toBe(`INITIALIZED file store ${box.store}`);
    const marker = JSON.parse(readFileSync(`${box.store}/backend.json`, 'utf8')) as { backend: string };
    expect(marker.backend).toBe('file');
  });

  it('help and no arguments print usage, exit 0', async () => {
    const none = await box.run('A', []);
    expect(none.code).toBe(0);
    expect(none.stdout).toContain('acquire');
    const help = await box.run('A', ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage');
  });
});

describe('--dir', () => {
  it('resolves scopes from the given folder', async () => {
    const r = await box.json('A', ['--dir', `${box.tree}/src`, 'acquire', 'a.ts']);
    expect(r.code).toBe(0);
    expect(r.body.locks[0]).toMatchObject({ scope: 'a.ts', tree: `${box.tree}/src` });
  });

  it('refuses a relative AGENT_LOCK_DIR: agents reading it from different folders would split the store', async () => {
    expect(spawnSync('git', ['init', '-q'], { cwd: box.tree }).status).toBe(0);
    const env = { AGENT_LOCK_DIR: '.locks' };
    const r = await box.run('A', ['--dir', 'src', 'acquire', '@rel'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^ERROR: alock: AGENT_LOCK_DIR must be an absolute path \(got "\.locks"\)/);
    expect(existsSync(path.join(box.tree, '.locks'))).toBe(false);
    expect(existsSync(path.join(box.tree, 'src', '.locks'))).toBe(false);
  });
});

describe('trees, default leases and colour', () => {
  it('path scopes of different trees do not conflict; resources and AGENT_LOCK_TREE do', async () => {
    await box.run('A', ['acquire', 'src/a.ts', '@merge']);
    const otherTree = await box.json('B', ['--dir', box.outside, 'acquire', 'src/a.ts']);
    expect(otherTree.code).toBe(0);
    expect(otherTree.body.locks[0]?.tree).toBe(box.outside);
    const resource = await box.run('B', ['--dir', box.outside, 'acquire', '@merge']);
    expect(resource.code).toBe(1);
    expect(firstLine(resource.stdout)).toBe('HELD @merge');

    const shared = { AGENT_LOCK_TREE: 'one-name' };
    expect((await box.run('C', ['acquire', 'lib/x.ts'], shared)).code).toBe(0);
    const sameKey = await box.run('D', ['--dir', box.outside, 'acquire', 'lib/x.ts'], shared);
    expect(sameKey.code).toBe(1);
    expect(sameKey.stdout).toMatch(/by C\b/);
  });

  it('AGENT_LOCK_TTL_SECONDS gives a default lease, and 0 means none', async () => {
    const leased = await box.json('A', ['acquire', '@lease'], { AGENT_LOCK_TTL_SECONDS: '90' });
    expect(leased.body.locks[0]?.ttl_seconds).toBe(90);
    expect(leased.body.locks[0]?.expires_at).not.toBeNull();
    const none = await box.json('A', ['acquire', '@plain'], { AGENT_LOCK_TTL_SECONDS: '0' });
    expect(none.body.locks[0]?.ttl_seconds).toBeNull();
    expect(none.body.locks[0]?.expires_at).toBeNull();
  });

  it('colours only on a terminal, and never with NO_COLOR', async () => {
    const { runCli } = await import('../../src/cli/run-cli.js');
    const runTty = async (env: Record<string, string>) => {
      let out = '';
      await runCli(['check', '@colour'], {
        stdout: (t) => {
          out += t;
        },
        stderr: () => {},
        env: { ...box.envFor('A'), ...env },
        cwd: box.tree,
        isTTY: true,
      });
      return out;
    };
    expect(await runTty({})).toContain('\u001b[');
    expect(await runTty({ NO_COLOR: '1' })).not.toContain('\u001b[');
    expect((await box.run('A', ['check', '@colour'])).stdout).not.toContain('\u001b[');
  });
});

describe('no answer prints a stack trace', () => {
  it('text answers of refusals carry no stack frames', async () => {
    await box.run('A', ['acquire', 'src/a.ts']);
    const r = await box.run('B', ['acquire', 'src/a.ts']);
    expect(STACK_FRAME.test(r.stdout + r.stderr)).toBe(false);
  });
});

describe('no command', () => {
  it('prints help and exits 0 with no arguments at all', async () => {
    const r = await box.run('A', []);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage:');
  });

  it('is a usage error when only global flags are given', async () => {
    const text = await box.run('A', ['--dir', box.tree]);
    expect(text.code).toBe(2);
    expect(text.stderr).toBe('ERROR: alock: no command given (see --help)\n');
    const json = await box.json('A', []);
    expect(json.code).toBe(2);
    expect(json.body.error?.code).toBe('E_USAGE');
  });
});
