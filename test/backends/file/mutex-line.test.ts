/**
 * The mutex's line of waiters (mutex-line.ts) on real files, in this process: the order of its
 * names, which file a release wakes, what the sweeps remove, and a symlink planted for waiters/.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FileMutex } from '../../../src/backends/file/mutex.js';
import { MutexLine } from '../../../src/backends/file/mutex-line.js';
import { scratch } from '../../race/helpers.js';

const me = { pid: process.pid, started: 'test', host: os.hostname() };
const DEAD = 4_000_009;
const alive = (pid: number) => pid !== DEAD;

const cleanups: (() => void)[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function store(): { store: string; line: string; root: string } {
  const dirs = scratch('mutex-line');
  cleanups.push(dirs.cleanup);
  mkdirSync(path.join(dirs.store, 'waiters'), { recursive: true, mode: 0o700 });
  return { store: dirs.store, line: path.join(dirs.store, 'waiters'), root: dirs.root };
}

/** A waiter's file as the line names it, for a join `agoMs` ago, its time set to `mtime`. */
function plant(line: string, agoMs: number, pid: number, content: string, mtime: Date, suffix = ''): string {
  const name = `${(Date.now() - agoMs).toString(36).padStart(10, '0')}.00000000.${pid}.${'ab'.repeat(8)}${suffix}`;
  const file = path.join(line, name);
  writeFileSync(file, content, { mode: 0o600 });
  utimesSync(file, mtime, mtime);
  return name;
}

const unwoken = new Date(0);
const mtimeOf = (file: string) => lstatSync(file).mtimeMs;

describe('file store: the mutex line', () => {
  // First in the file: it needs the per-process join count to start at 0 and pass 36.
  it('keeps joins of one process in order when their times are equal, past a count of 36', () => {
    const { store: dir, line } = store();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-01-01T00:00:00Z'));
    const joined = Array.from({ length: 40 }, (_, i) => {
      const waiter = new MutexLine(dir, me, i.toString(16).padStart(4, '0'), alive);
      expect(waiter.join()).toBe(true);
      cleanups.push(() => waiter.leave());
      return i.toString(16).padStart(4, '0');
    });
    const order = readdirSync(line)
      .sort()
      .map((name) => name.split('.')[3]);
    expect(order).toEqual(joined);
  });

  it('wakes the first waiter not yet woken, passing by one that was woken and never answered', async () => {
    const { store: dir, line } = store();
    const deaf = plant(line, 3_000, 4_000_001, 'elsewhere|4000001|s', new Date(Date.now() - 1_000));
    const next = plant(line, 2_000, 4_000_002, 'elsewhere|4000002|s', unwoken);
    const last = plant(line, 1_000, 4_000_003, 'elsewhere|4000003|s', unwoken);
    const before = mtimeOf(path.join(line, deaf));
    const holder = new FileMutex(dir, me, 1_000, alive);
    cleanups.push(() => holder.dispose());
    await holder.lock();
    holder.unlock();
    expect(mtimeOf(path.join(line, deaf))).toBe(before);
    expect(mtimeOf(path.join(line, next))).not.toBe(0);
    expect(mtimeOf(path.join(line, last))).toBe(0);
  });

  it('wakes nobody else while the first woken waiter has had under 5 ms to answer, and the next one after', async () => {
    const { store: dir, line } = store();
    vi.useFakeTimers({ toFake: ['Date'] });
    const woken = new Date('2026-01-01T00:00:00Z');
    vi.setSystemTime(woken);
    plant(line, 2_000, 4_000_001, 'elsewhere|4000001|s', woken);
    const next = plant(line, 1_000, 4_000_002, 'elsewhere|4000002|s', unwoken);
    const holder = new FileMutex(dir, me, 1_000, alive);
    cleanups.push(() => holder.dispose());
    // 1 ms after the wake-up (not 0: a file time can round below the instant it was set to).
    vi.setSystemTime(woken.getTime() + 1);
    await holder.lock();
    holder.unlock();
    expect(mtimeOf(path.join(line, next))).toBe(0);
    // 6 ms after it, still unanswered: the next waiter is woken as well.
    vi.setSystemTime(woken.getTime() + 6);
    await holder.lock();
    holder.unlock();
    expect(mtimeOf(path.join(line, next))).toBe(woken.getTime() + 6);
  });

  it('sweeps drafts, unreadable files and dead or long-unanswered waiters, and keeps the rest', () => {
    const { store: dir, line } = store();
    const now = new Date();
    const gone = [
      plant(line, 10_000, 4_000_001, 'half', now, '.draft'),
      plant(line, 10_000, 4_000_002, '', now),
      plant(line, 10_000, 4_000_003, 'not a waiter', unwoken),
      plant(line, 1_000, DEAD, `${me.host}|${DEAD}|s`, unwoken),
      plant(line, 1_000, 4_000_004, 'elsewhere|4000004|s', new Date(Date.now() - 120_000)),
    ];
    const kept = [
      plant(line, 0, 4_000_005, 'half', now, '.draft'),
      plant(line, 0, 4_000_006, '', now),
      plant(line, 1_000, 4_000_007, `${me.host}|4000007|s`, unwoken),
      plant(line, 1_000, 4_000_008, 'elsewhere|4000008|s', now),
      plant(line, 1_000, 4_000_010, 'elsewhere|4000010|s', unwoken),
    ];
    const holder = new FileMutex(dir, me, 1_000, alive);
    holder.sweepDeadOwners();
    expect(readdirSync(line).sort()).toEqual(kept.sort());
    expect(gone.some((name) => existsSync(path.join(line, name)))).toBe(false);
  });

  it('neither touches nor sweeps through a symlink planted for waiters/', async () => {
    const { store: dir, line, root } = store();
    const elsewhere = path.join(root, 'elsewhere');
    mkdirSync(elsewhere);
    const victim = plant(elsewhere, 1_000, DEAD, `${me.host}|${DEAD}|s`, unwoken);
    const other = plant(elsewhere, 500, 4_000_011, 'elsewhere|4000011|s', unwoken);
    rmSync(line, { recursive: true });
    symlinkSync(elsewhere, line);
    const holder = new FileMutex(dir, me, 1_000, alive);
    cleanups.push(() => holder.dispose());
    await holder.lock();
    holder.unlock();
    holder.sweepDeadOwners();
    expect(readdirSync(elsewhere).sort()).toEqual([victim, other].sort());
    expect(mtimeOf(path.join(elsewhere, other))).toBe(0);
    // And a waiter does not join a line there.
    expect(new MutexLine(dir, me, 'cd'.repeat(8), alive).join()).toBe(false);
    expect(readdirSync(elsewhere)).toHaveLength(2);
  });
});
