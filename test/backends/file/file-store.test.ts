/**
 * Safety of the file store on a real file system (docs/stores.md): private modes, refusal of planted
 * symlinks, repair of a torn last line, fail-closed reading of a corrupt line, and the store mutex
 * left behind by a dead process (taken over) or held by a live one (reported, not waited for ever).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hostName, startStamp } from '../../../src/host/process.js';
import { type Locks, openLocks } from '../../../src/index.js';
import { backendOf } from '../../../src/store/store.js';
import { readLog, scratch } from '../../race/helpers.js';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup(name: string) {
  const dirs = scratch(name);
  mkdirSync(dirs.tree, { recursive: true });
  cleanups.push(dirs.cleanup);
  const open = async (agent: string, env: Record<string, string> = {}, storeDir = dirs.store) => {
    const locks = await openLocks({ dir: dirs.tree, storeDir, env: { AGENT_ID: agent, ...env } });
    cleanups.push(() => locks.close());
    return locks;
  };
  return { ...dirs, open, log: path.join(dirs.store, 'locks.log') };
}

/** Opens a handle and makes one decision, so that errors of either step surface as one rejection. */
async function decideOnce(open: () => Promise<Locks>): Promise<string> {
  const locks = await open();
  try {
    return (await locks.acquire(['src/new.ts'])).status;
  } finally {
    await locks.close();
  }
}

const mode = (file: string) => lstatSync(file).mode & 0o777;

/** A process that lives until killed, and its start stamp (the mutex owner evidence). */
async function sleeper(): Promise<{ child: ChildProcess; pid: number; started: string }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60_000); console.log("up")'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve) => child.stdout!.once('data', resolve));
  const pid = child.pid!;
  return { child, pid, started: startStamp(pid) };
}

async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** Leaves the store mutex held by `owner`, as mutex.ts writes it: a hard link to the owner file. */
function plantMutex(store: string, owner: { pid: number; started: string; host?: string }): string {
  const nonce = randomBytes(8).toString('hex');
  const ownerFile = path.join(store, `owner.${owner.pid}.${nonce}`);
  const info = { pid: owner.pid, started: owner.started, host: owner.host ?? os.hostname(), nonce };
  writeFileSync(ownerFile, JSON.stringify(info), { mode: 0o600 });
  linkSync(ownerFile, path.join(store, 'mutex'));
  return ownerFile;
}

describe('file store: private folder and files', () => {
  it('creates the folder 0700 and every file 0600, also after compaction and under umask 000', async () => {
    const s = setup('modes');
    const previous = process.umask(0);
    try {
      const a = await s.open('a');
      expect((await a.acquire(['src/a.ts', '@res'], { intent: 'work' })).status).toBe('acquired');
      expect((await a.note('src/a.ts', 'halfway')).status).toBe('noted');
      const b = await s.open('b');
      expect((await b.breakLock(['@res'], { reason: 'test' })).status).toBe('broken');
      // Enough decisions to compact the log into a fresh snapshot (written aside, renamed over).
      const inode = lstatSync(s.log).ino;
      for (let i = 0; i < 300; i += 1) {
        expect((await b.acquire([`@r${i}`])).status).toBe('acquired');
        expect((await b.release([`@r${i}`])).status).toBe('released');
      }
      expect(lstatSync(s.log).ino).not.toBe(inode);
    } finally {
      process.umask(previous);
    }
    expect(mode(s.store)).toBe(0o700);
    const files = readdirSync(s.store);
    expect(files).toEqual(expect.arrayContaining(['locks.log', 'events.log', 'backend.json']));
    for (const file of files) expect(mode(path.join(s.store, file)), file).toBe(0o600);
  });

  it('tightens an existing store folder that others could read to 0700', async () => {
    const s = setup('tighten');
    mkdirSync(s.store, { mode: 0o755 });
    chmodSync(s.store, 0o755);
    const a = await s.open('a');
    expect((await a.acquire(['@x'])).status).toBe('acquired');
    expect(mode(s.store)).toBe(0o700);
  });
});

describe('file store: planted symlinks are refused and nothing is written through them', () => {
  it('refuses a symlink at the store path (to a folder)', async () => {
    const s = setup('link-store');
    const elsewhere = path.join(s.root, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o700 });
    symlinkSync(elsewhere, s.store);
    await expect(decideOnce(() => s.open('a'))).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('refuses a dangling symlink at the store path, without creating its target', async () => {
    const s = setup('link-store-dangling');
    const target = path.join(s.root, 'not-yet');
    symlinkSync(target, s.store);
    const error = await decideOnce(() => s.open('a')).catch((caught: unknown) => caught);
    expect(existsSync(target)).toBe(false);
    expect(error).toMatchObject({ code: 'E_STORE_UNSAFE' });
  });

  it('refuses a symlink at locks.log, in a new store and in one that holds locks', async () => {
    const s = setup('link-log');
    const victim = path.join(s.root, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    mkdirSync(s.store, { mode: 0o700 });
    symlinkSync(victim, s.log);
    await expect(decideOnce(() => s.open('a'))).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');

    // A store in use whose log is swapped for a symlink: refused by every handle, warm or new.
    unlinkSync(s.log);
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    unlinkSync(s.log);
    symlinkSync(victim, s.log);
    await expect(a.acquire(['src/b.ts'])).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
    await expect(decideOnce(() => s.open('b'))).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
  });

  it('refuses a dangling symlink at locks.log, without creating its target', async () => {
    const s = setup('link-log-dangling');
    const target = path.join(s.root, 'created-through-link');
    mkdirSync(s.store, { mode: 0o700 });
    symlinkSync(target, s.log);
    await expect(decideOnce(() => s.open('a'))).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
    expect(existsSync(target)).toBe(false);
  });

  it('refuses a symlink at events.log: a break either happens or fails, never both', async () => {
    const s = setup('link-events');
    const a = await s.open('a');
    expect((await a.acquire(['@victim-lock'])).status).toBe('acquired');
    const victim = path.join(s.root, 'victim.txt');
    writeFileSync(victim, 'precious\n');
    symlinkSync(victim, path.join(s.store, 'events.log'));
    const b = await s.open('b');
    const answer = await b.breakLock(['@victim-lock'], { reason: 'test' }).then(
      (outcome) => outcome.status,
      (caught: unknown) => (caught as { code?: string }).code,
    );
    expect(readFileSync(victim, 'utf8')).toBe('precious\n');
    // Refused (the lock stays) or broken (the lock is gone): an error for a break that happened
    // would leave the caller believing the lock is still there.
    const c = await s.open('c');
    const after = (await c.check(['@victim-lock'])).status;
    expect(['broken', 'E_STORE_UNSAFE']).toContain(answer);
    expect(after, `the break answered ${answer}`).toBe(answer === 'broken' ? 'free' : 'held');
  });

  it('refuses a symlink at the mutex (to a file or dangling) and keeps the locks as they were', async () => {
    const s = setup('link-mutex');
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    const before = readFileSync(s.log, 'utf8');
    const victim = path.join(s.root, 'victim.txt');
    writeFileSync(victim, JSON.stringify({ pid: 999_999, started: 'x', host: os.hostname(), nonce: 'n' }));
    const mutex = path.join(s.store, 'mutex');

    for (const target of [victim, path.join(s.root, 'dangling')]) {
      symlinkSync(target, mutex);
      await expect(a.acquire(['src/b.ts'])).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
      await expect(decideOnce(() => s.open('b'))).rejects.toMatchObject({ code: 'E_STORE_UNSAFE' });
      expect(lstatSync(mutex).isSymbolicLink()).toBe(true);
      expect(readFileSync(s.log, 'utf8')).toBe(before);
      unlinkSync(mutex);
    }
    expect(existsSync(path.join(s.root, 'dangling'))).toBe(false);
    expect(readFileSync(victim, 'utf8')).toContain('999999');
    // With the symlink gone the store works again and the earlier lock is intact.
    const b = await s.open('b');
    const blocked = await b.acquire(['src/a.ts']);
    expect(blocked.status).toBe('held');
    expect(blocked.conflicts.map((lock) => lock.agent_id)).toEqual(['a']);
  });
});

describe('file store: torn and corrupt lines', () => {
  const torn = '{"t":"tx","fence":999,"put":[{"id":"lk_torn","scope":"src/a.ts"';

  for (const reader of ['a fresh handle', 'a warm handle'] as const) {
    it(`cuts off a dead writer's torn last line (seen by ${reader}), keeps it aside and every earlier lock`, async () => {
      const s = setup('torn');
      const a = await s.open('a');
      const granted = await a.acquire(['src/a.ts', '@keep']);
      expect(granted.status).toBe('acquired');
      const maxFence = Math.max(...granted.locks.map((lock) => lock.fence));
      const sizeBefore = statSync(s.log).size;
      // A writer killed mid-write: it still holds the mutex, and its commit is half written.
      const dead = await sleeper();
      await killAndWait(dead.child);
      plantMutex(s.store, dead);
      appendFileSync(s.log, torn);

      const next = reader === 'a fresh handle' ? await s.open('b') : a;
      const other = await next.acquire(['src/b.ts']);
      expect(other.status).toBe('acquired');
      // The torn grant was never made: the counter continues from the last whole line.
      expect(other.locks[0]!.fence).toBe(maxFence + 1);
      const log = readLog(s.store);
      expect(log.text.endsWith('\n')).toBe(true);
      expect(log.text).not.toContain('lk_torn');
      expect(statSync(s.log).size).toBeGreaterThan(sizeBefore);
      const aside = readdirSync(path.join(s.store, 'damaged'));
      expect(aside).toHaveLength(1);
      expect(readFileSync(path.join(s.store, 'damaged', aside[0]!), 'utf8')).toBe(torn);

      const c = await s.open('c');
      const listed = await c.list();
      expect(listed.locks.map((lock) => `${lock.scope} ${lock.agent_id}`).sort()).toEqual([
        `@keep a`,
        `src/a.ts a`,
        `src/b.ts ${reader === 'a fresh handle' ? 'b' : 'a'}`,
      ]);
      const blocked = await c.acquire(['src/a.ts']);
      expect(blocked.status).toBe('held');
      expect(blocked.conflicts.map((lock) => lock.agent_id)).toEqual(['a']);
    });
  }

  it('holds everything by <unknown> after a garbage line, until that record is broken by id', async () => {
    const s = setup('garbage');
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    appendFileSync(s.log, 'this is not a record\n');

    const b = await s.open('b');
    for (const scopes of [['docs/x.md'], ['@res'], ['**']]) {
      const blocked = await b.acquire(scopes);
      expect(blocked.status, scopes.join(' ')).toBe('held');
      expect(blocked.conflicts.map((lock) => lock.agent_id)).toContain('<unknown>');
    }
    // It blocks the earlier holder too (fail closed), and shows in the list.
    const own = await a.acquire(['src/other.ts']);
    expect(own.status).toBe('held');
    expect(own.conflicts.map((lock) => lock.agent_id)).toEqual(['<unknown>']);
    const unknown = (await b.list()).locks.filter((lock) => lock.agent_id === '<unknown>');
    expect(unknown).toHaveLength(1);

    // Breaking by scope does not reach it; breaking by id does.
    expect((await b.breakLock([], { ids: [unknown[0]!.id], reason: 'garbage line' })).status).toBe('broken');
    expect((await b.acquire(['docs/x.md'])).status).toBe('acquired');
    // The earlier lock was never touched, and a new process replaying the log agrees.
    const c = await s.open('c');
    const listed = await c.list();
    expect(listed.locks.map((lock) => lock.agent_id).sort()).toEqual(['a', 'b']);
    const blocked = await c.acquire(['src/a.ts']);
    expect(blocked.conflicts.map((lock) => lock.agent_id)).toEqual(['a']);
    expect((await c.acquire(['@res'])).status).toBe('acquired');
  });

  it('refuses a log emptied behind its back, and never grants a fence again after repair', async () => {
    const s = setup('emptied-log');
    const a = await s.open('a');
    const first = await a.acquire(['@first']);
    expect(first.status).toBe('acquired');
    writeFileSync(s.log, '');
    const b = await s.open('b');
    await expect(b.acquire(['@second'])).rejects.toMatchObject({ code: 'E_STORE_UNREADABLE' });
    await expect(a.acquire(['@second'])).rejects.toMatchObject({ code: 'E_STORE_UNREADABLE' });
    expect((await b.repair()).damage).toHaveLength(1);
    const next = await b.acquire(['@second']);
    expect(next.status).toBe('acquired');
    expect(next.locks[0]!.fence).toBeGreaterThan(first.locks[0]!.fence);
  });

  it('never grants again the fence of a grant whose line was corrupted', async () => {
    const s = setup('corrupt-last-grant');
    const a = await s.open('a');
    expect((await a.acquire(['@first'])).status).toBe('acquired');
    const lost = await a.acquire(['@lost']);
    expect(lost.status).toBe('acquired');
    // The last line (the grant of @lost) becomes garbage of the same length.
    const lines = readFileSync(s.log, 'utf8').split('\n');
    lines[lines.length - 2] = 'x'.repeat(lines[lines.length - 2]!.length);
    writeFileSync(s.log, lines.join('\n'));
    const b = await s.open('b');
    const unreadable = (await b.list()).locks.filter((lock) => lock.agent_id === '<unknown>');
    expect(unreadable).toHaveLength(1);
    expect((await b.breakLock([], { ids: [unreadable[0]!.id] })).status).toBe('broken');
    const next = await b.acquire(['@next']);
    expect(next.status).toBe('acquired');
    expect(next.locks[0]!.fence).toBeGreaterThan(lost.locks[0]!.fence);
  });

  it('treats a line whose record has the wrong shape as held by <unknown>', async () => {
    const s = setup('bad-record');
    const a = await s.open('a');
    expect((await a.acquire(['@first'])).status).toBe('acquired');
    const fence = (await a.list()).locks[0]!.fence;
    appendFileSync(
      s.log,
      `${JSON.stringify({ t: 'tx', fence, put: [{ id: 'lk_bad', scope: 7 }], del: [] })}\n`,
    );
    const b = await s.open('b');
    const blocked = await b.acquire(['@second']);
    expect(blocked.status).toBe('held');
    expect(blocked.conflicts).toEqual([expect.objectContaining({ id: 'lk_bad', agent_id: '<unknown>' })]);
    expect((await b.breakLock([], { ids: ['lk_bad'] })).status).toBe('broken');
    expect((await b.acquire(['@second'])).status).toBe('acquired');
  });
});

describe('file store: the store mutex', () => {
  it('takes over a mutex left by a dead process', async () => {
    const s = setup('dead-mutex');
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    const dead = await sleeper();
    await killAndWait(dead.child);
    const ownerFile = plantMutex(s.store, dead);

    const b = await s.open('b', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await b.acquire(['src/b.ts'])).status).toBe('acquired');
    expect((await a.acquire(['src/c.ts'])).status).toBe('acquired');
    expect(existsSync(path.join(s.store, 'mutex'))).toBe(false);
    expect(existsSync(ownerFile)).toBe(false);
    expect(readdirSync(s.store).filter((file) => file.startsWith('mutex'))).toEqual([]);
    expect((await b.acquire(['src/a.ts'])).conflicts[0]?.agent_id).toBe('a');
  });

  it('takes over even when a dead stealer left its takeover guard behind', async () => {
    const s = setup('dead-guard');
    expect((await (await s.open('a')).list()).status).toBe('listed');
    const deadOwner = await sleeper();
    const deadStealer = await sleeper();
    await killAndWait(deadOwner.child);
    await killAndWait(deadStealer.child);
    plantMutex(s.store, deadOwner);
    // The guard is a hard link to the stealer's owner file, exactly like the mutex itself.
    const stealerFile = path.join(s.store, `owner.${deadStealer.pid}.feed`);
    const info = { pid: deadStealer.pid, started: deadStealer.started, host: os.hostname(), nonce: 'feed' };
    writeFileSync(stealerFile, JSON.stringify(info), { mode: 0o600 });
    linkSync(stealerFile, path.join(s.store, 'mutex.takeover'));

    const b = await s.open('b', { AGENT_LOCK_MUTEX_TIMEOUT: '5' });
    expect((await b.acquire(['src/b.ts'])).status).toBe('acquired');
    expect(readdirSync(s.store).filter((file) => file.startsWith('mutex'))).toEqual([]);
  });

  it('takes over a mutex whose owner pid now belongs to another process (pid reuse)', async () => {
    const s = setup('reused-mutex');
    const a = await s.open('a');
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    const live = await sleeper();
    cleanups.push(() => killAndWait(live.child));
    plantMutex(s.store, { pid: live.pid, started: `${live.started}-earlier-life` });
    const b = await s.open('b', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await b.acquire(['@x'])).status).toBe('acquired');
  });

  it('fails with E_STORE_BUSY, writing nothing, while a live process holds the mutex', async () => {
    const s = setup('live-mutex');
    const a = await s.open('a', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await a.acquire(['src/a.ts'])).status).toBe('acquired');
    const before = readFileSync(s.log, 'utf8');
    const live = await sleeper();
    cleanups.push(() => killAndWait(live.child));
    const ownerFile = plantMutex(s.store, live);

    await expect(a.acquire(['src/b.ts'])).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
    const b = await s.open('b', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    await expect(b.acquire(['@x'])).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
    expect(readFileSync(s.log, 'utf8')).toBe(before);
    // Not stolen from a live owner.
    expect(lstatSync(path.join(s.store, 'mutex')).ino).toBe(lstatSync(ownerFile).ino);

    // Once that process is gone, the next decision goes through and the earlier lock is there.
    await killAndWait(live.child);
    const blocked = await b.acquire(['src/a.ts']);
    expect(blocked.status).toBe('held');
    expect(blocked.conflicts.map((lock) => lock.agent_id)).toEqual(['a']);
    expect((await b.acquire(['@x'])).status).toBe('acquired');
  });

  it("answers a woken waiter's look from the log without the mutex, leaving a line being written alone", async () => {
    const s = setup('peek');
    const a = await s.open('a', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await a.acquire(['@r'])).status).toBe('acquired');
    const b = await s.open('b', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await b.acquire(['src/b.ts'])).status).toBe('acquired');
    const live = await sleeper();
    cleanups.push(() => killAndWait(live.child));
    plantMutex(s.store, live);
    // Another process is half-way through appending its commit.
    const partial = '{"t":"tx","fence":99,"put":[';
    appendFileSync(s.log, partial);

    const ids = (state: { locks: ReadonlyMap<string, { scope: string }> }) =>
      [...state.locks.values()].map((r) => r.scope).sort();
    const unchanged = (state: { fence: number }) => ({
      result: 'seen',
      changes: { put: [], del: [], fence: state.fence, tombstones: null, events: [] },
    });
    // A read-only look sees b's commit (made after a's last look) while the mutex is held...
    let seen: string[] = [];
    const answer = await backendOf(a.store).transact(
      (state) => {
        seen = ids(state);
        return unchanged(state);
      },
      undefined,
      { cached: true },
    );
    expect(answer).toBe('seen');
    expect(seen).toEqual(['@r', 'src/b.ts']);
    // ...and leaves the line in progress as it is: only a mutex holder may cut a torn line off.
    expect(readFileSync(s.log, 'utf8').endsWith(partial)).toBe(true);
    // A decision that changes something still needs the mutex, cached or not.
    await expect(
      backendOf(a.store).transact(
        (state) => ({
          ...unchanged(state),
          changes: { ...unchanged(state).changes, fence: state.fence + 1 },
        }),
        undefined,
        { cached: true },
      ),
    ).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
    await expect(backendOf(a.store).transact(unchanged)).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
  });

  it("answers a fresh handle's cached check of a free file from the log, and anything else under the mutex", async () => {
    const s = setup('peek-cold');
    const a = await s.open('a', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await a.acquire(['src/held.ts'])).status).toBe('acquired');
    const live = await sleeper();
    cleanups.push(() => killAndWait(live.child));
    plantMutex(s.store, live);
    // A handle with nothing read yet (a hook's one check) needs no mutex to find a file free...
    const b = await s.open('b', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    expect((await b.check('src/free.ts', { cached: true })).status).toBe('free');
    // ...but a held file is asked of the store as usual, as is any check not asked cached.
    await expect(b.check('src/held.ts', { cached: true })).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
    await expect(b.check('src/free.ts')).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
    // A partial last line (a write in progress, or a torn commit the mutex's next holder cuts) too.
    appendFileSync(s.log, '{"t":"tx","fence":99,"put":[');
    const c = await s.open('c', { AGENT_LOCK_MUTEX_TIMEOUT: '1' });
    await expect(c.check('src/free.ts', { cached: true })).rejects.toMatchObject({ code: 'E_STORE_BUSY' });
  });

  it("fails a warm handle's cached check closed when a committed line was cut: never a free answer over damage", async () => {
    const s = setup('peek-warm-cut');
    const a = await s.open('a');
    const b = await s.open('b');
    // b has read the log once (under the mutex, so it keeps what it read): its next cached check
    // reads only what was appended since.
    expect((await b.check('src/b.ts')).status).toBe('free');
    expect((await a.acquire(['src/b.ts'])).status).toBe('acquired');
    // a's committed line loses its newline: from outside, that is a torn tail nobody is writing.
    truncateSync(s.log, statSync(s.log).size - 1);
    await expect(b.check('src/b.ts', { cached: true })).rejects.toMatchObject({ code: 'E_STORE_UNREADABLE' });
    await expect(b.check('src/b.ts')).rejects.toMatchObject({ code: 'E_STORE_UNREADABLE' });
  });

  it('keeps a wake file per waiting process under wake/ while the handle is open, and removes it on close', async () => {
    const s = setup('wake-files');
    const a = await s.open('a');
    const b = await s.open('b');
    expect((await a.acquire(['@r'])).status).toBe('acquired');
    const waiting = b.acquire(['@r'], { wait: 60 });
    const wakeDir = path.join(s.store, 'wake');
    await expect
      .poll(() => (existsSync(wakeDir) ? readdirSync(wakeDir) : []), { timeout: 10_000 })
      .toHaveLength(1);
    const [name] = readdirSync(wakeDir);
    expect(name!.startsWith(`${process.pid}-`)).toBe(true);
    expect(mode(path.join(wakeDir, name!))).toBe(0o600);
    await a.release(['@r']);
    expect((await waiting).status).toBe('acquired');
    // Kept for the next wait, also while other handles (here one that never waited) close...
    expect(readdirSync(wakeDir)).toEqual([name]);
    await a.close();
    expect(readdirSync(wakeDir)).toEqual([name]);
    // ...until the last handle that waited closes.
    await b.close();
    expect(readdirSync(wakeDir)).toEqual([]);
  });

  it('makes a removed wake file again on the next wait, so the waiter is still woken at once', async () => {
    const s = setup('wake-again');
    const a = await s.open('a');
    const b = await openLocks({
      dir: s.tree,
      storeDir: s.store,
      env: { AGENT_ID: 'b' },
      waitPollMs: 600_000,
    });
    cleanups.push(() => b.close());
    const wakeDir = path.join(s.store, 'wake');
    for (let round = 0; round < 2; round++) {
      expect((await a.acquire(['@r'])).status).toBe('acquired');
      const waiting = b.acquire(['@r'], { wait: 600 });
      await expect.poll(async () => (await a.list()).waiting.length, { timeout: 10_000 }).toBe(1);
      await a.release(['@r']);
      // Ten minutes between polls: only the wake file can bring this grant in time.
      expect((await waiting).status).toBe('acquired');
      await b.release(['@r']);
      for (const name of readdirSync(wakeDir)) unlinkSync(path.join(wakeDir, name));
    }
  });

  it('sweeps at compaction only the wake files of dead waiters, never through a symlinked folder', async () => {
    const s = setup('wake-sweep');
    const a = await s.open('a');
    expect((await a.acquire(['@first'])).status).toBe('acquired');
    const wakeDir = path.join(s.store, 'wake');
    mkdirSync(wakeDir, { mode: 0o700 });
    const dead = await sleeper();
    await killAndWait(dead.child);
    const name = (pid: number) => `${pid}-${'A'.repeat(22)}`;
    writeFileSync(path.join(wakeDir, name(dead.pid)), `${hostName()}|${dead.pid}|${dead.started}`);
    const live = `${hostName()}|${process.pid}|${startStamp(process.pid)}`;
    writeFileSync(path.join(wakeDir, name(process.pid)), live);
    writeFileSync(path.join(wakeDir, '12345-notes.md'), 'not ours');
    // A folder elsewhere, reached through a symlink planted at wake/ after the first sweep.
    const victim = path.join(s.tree, 'victim');
    mkdirSync(victim);
    writeFileSync(path.join(victim, name(dead.pid)), `${hostName()}|${dead.pid}|${dead.started}`);
    writeFileSync(path.join(victim, '2023-tax-return.pdf'), 'x');

    const compactions = async () => {
      for (let i = 0; i < 300; i++) {
        await a.acquire(['@churn']);
        await a.release(['@churn']);
      }
    };
    await compactions();
    expect(readdirSync(wakeDir).sort()).toEqual(['12345-notes.md', name(process.pid)].sort());

    rmSync(wakeDir, { recursive: true });
    symlinkSync(victim, wakeDir);
    await compactions();
    expect(readdirSync(victim).sort()).toEqual(['2023-tax-return.pdf', name(dead.pid)].sort());
  });
});

describe('file store: a store folder moved away while a handle has it open', () => {
  it('answers E_STORE_UNREADABLE naming the folder, and makes nothing where it was', async () => {
    const s = setup('moved');
    const locks = await s.open('a');
    expect((await locks.acquire('@x')).status).toBe('acquired');
    renameSync(s.store, `${s.store}-moved`);
    await expect(locks.list()).rejects.toMatchObject({
      code: 'E_STORE_UNREADABLE',
      message: expect.stringContaining(`the store folder ${s.store} is gone`),
    });
    await expect(locks.acquire('@y')).rejects.toMatchObject({ code: 'E_STORE_UNREADABLE' });
    // A waiting acquire first listens for its wake-ups: that makes no folder there either.
    await expect(locks.acquire('@y', { wait: 0.3 })).rejects.toMatchObject({
      code: 'E_STORE_UNREADABLE',
      message: expect.stringContaining('is gone'),
    });
    expect(existsSync(s.store)).toBe(false);
    // Where it went, it is whole: a handle opened there sees the lock.
    const there = await s.open('b', {}, `${s.store}-moved`);
    expect((await there.list()).locks.map((l) => l.scope)).toEqual(['@x']);
  });
});
