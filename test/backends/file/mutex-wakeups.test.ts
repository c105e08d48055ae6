/**
 * Waiters for the file store's mutex are woken when it is let go (mutex-line.ts), one at a time,
 * rather than finding out by retrying on a timer. Real processes wait in line; their timed retries
 * are set to ten minutes, so every wait that ends was ended by a wake-up, and the counts say so.
 * No wall-clock bounds: the test waits until each process says it is asleep in line (a file under
 * waiters/ is not enough: its process may still be at its try after joining, and take the mutex
 * there without a wake-up), then for the processes to finish.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { afterEach, describe, expect, it } from 'vitest';
import { FileMutex } from '../../../src/backends/file/mutex.js';
import { processAlive } from '../../../src/host/process.js';
import { scratch } from '../../race/helpers.js';

const WAITER = fileURLToPath(new URL('./fixtures/mutex-waiter.mjs', import.meta.url));
const SOURCES = fileURLToPath(new URL('../../../src/backends/file/', import.meta.url));

interface Took {
  took: true;
  wakeups: number;
  timedRetries: number;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A store whose mutex this process holds, and a bundle of the source for the children. */
async function heldStore(): Promise<{ store: string; line: string; holder: FileMutex; bundle: string }> {
  const dirs = scratch('mutex-wake');
  cleanups.push(dirs.cleanup);
  mkdirSync(dirs.store, { recursive: true, mode: 0o700 });
  // The children run the source as it is, bundled for plain node (one copy of each module, so the
  // child's hook on MutexLine is the one FileMutex uses).
  const bundle = path.join(dirs.root, 'mutex.mjs');
  buildSync({
    stdin: {
      contents: "export { FileMutex } from './mutex.ts'; export { MutexLine } from './mutex-line.ts';",
      resolveDir: SOURCES,
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    outfile: bundle,
    logLevel: 'error',
  });
  const me = { pid: process.pid, started: 'test', host: os.hostname() };
  const holder = new FileMutex(dirs.store, me, 600_000, processAlive);
  cleanups.push(() => holder.dispose());
  await holder.lock();
  return { store: dirs.store, line: path.join(dirs.store, 'waiters'), holder, bundle };
}

/** Waiting processes: `asleep` once all sleep in line, `took` with how each wait ended. */
function waiters(
  count: number,
  bundle: string,
  store: string,
): { asleep: Promise<unknown>; took: Promise<Took[]> } {
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, [WAITER, bundle, store], { stdio: ['ignore', 'pipe', 'inherit'] }),
  );
  cleanups.push(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  const asleep: Promise<void>[] = [];
  const took: Promise<Took>[] = [];
  for (const child of children) {
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const next = async () => {
      const { value, done } = await lines.next();
      if (done) throw new Error('a waiter exited without the mutex');
      return JSON.parse(value as string) as { asleep?: true } & Partial<Took>;
    };
    const first = next().then((line) => {
      if (!line.asleep) throw new Error(`a waiter took the mutex while it was held: ${JSON.stringify(line)}`);
    });
    asleep.push(first);
    took.push(first.then(next).then((line) => line as Took));
  }
  return { asleep: Promise.all(asleep), took: Promise.all(took) };
}

/** A waiter's file name, as the line names them, for a join `agoMs` ago. */
function waiterName(agoMs: number, pid: number): string {
  return `${(Date.now() - agoMs).toString(36).padStart(10, '0')}.00000000.${pid}.${'ab'.repeat(8)}`;
}

describe('file store: the mutex wakes its waiters', () => {
  it('wakes each waiting process when the mutex is let go, one at a time, with no timed retry', async () => {
    const { store, line, holder, bundle } = await heldStore();
    const count = 4;
    const { asleep, took } = waiters(count, bundle, store);
    await asleep;

    holder.unlock();
    const ends = await took;

    expect(ends.map((t) => t.timedRetries)).toEqual(Array(count).fill(0));
    // Woken once each: a release wakes the first in line, not every waiter (a herd would wake the
    // later ones again at each release that went to someone else).
    expect(ends.map((t) => t.wakeups)).toEqual(Array(count).fill(1));
    expect(readdirSync(line)).toEqual([]);
  });

  it('wakes the waiters behind an empty file and a woken waiter of another host that never answered', async () => {
    const { store, line, holder, bundle } = await heldStore();
    mkdirSync(line, { mode: 0o700 });
    // First in line: what a waiter killed between creating and writing its file left (before the
    // file was written aside), and a waiter on another host, woken by an earlier release, that
    // never took its turn (dead there: its pid means nothing here).
    writeFileSync(path.join(line, waiterName(20_000, 4_000_001)), '', { mode: 0o600 });
    const elsewhere = path.join(line, waiterName(10_000, 4_000_002));
    writeFileSync(elsewhere, 'another-host|4000002|started', { mode: 0o600 });
    utimesSync(elsewhere, new Date(), new Date());
    const count = 2;
    const { asleep, took } = waiters(count, bundle, store);
    await asleep;

    holder.unlock();
    const ends = await took;

    expect(ends.map((t) => t.timedRetries)).toEqual(Array(count).fill(0));
    expect(ends.map((t) => t.wakeups)).toEqual(Array(count).fill(1));
    // The sweep removes the empty file (older than a few seconds by its name); the other host's
    // waiter stays until its wake-up has gone unanswered for long.
    holder.sweepDeadOwners();
    expect(readdirSync(line)).toEqual([path.basename(elsewhere)]);
  });
});
