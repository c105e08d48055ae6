/**
 * Waiters for the file store's mutex are woken when it is let go (mutex-line.ts), one at a time,
 * rather than finding out by retrying on a timer. Real processes wait in line; their timed retries
 * are set to ten minutes, so every wait that ends was ended by a wake-up, and the counts say so.
 * No wall-clock bounds: the test waits for the line to form, then for the processes to finish.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
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
const SOURCE = fileURLToPath(new URL('../../../src/backends/file/mutex.ts', import.meta.url));
const WAITERS = 4;

interface Took {
  took: true;
  wakeups: number;
  timedRetries: number;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('file store: the mutex wakes its waiters', () => {
  it('wakes each waiting process when the mutex is let go, one at a time, with no timed retry', async () => {
    const dirs = scratch('mutex-wake');
    cleanups.push(dirs.cleanup);
    mkdirSync(dirs.store, { recursive: true, mode: 0o700 });
    // The children run the source as it is, bundled for plain node.
    const bundle = path.join(dirs.root, 'mutex.mjs');
    buildSync({
      entryPoints: [SOURCE],
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

    const children = Array.from({ length: WAITERS }, () =>
      spawn(process.execPath, [WAITER, bundle, dirs.store], { stdio: ['ignore', 'pipe', 'inherit'] }),
    );
    const answers = children.map(
      (child) =>
        new Promise<Took>((resolve, reject) => {
          createInterface({ input: child.stdout }).once('line', (line) => resolve(JSON.parse(line) as Took));
          child.once('exit', (code) => reject(new Error(`a waiter exited (${code}) without the mutex`)));
        }),
    );
    cleanups.push(() => {
      for (const child of children) child.kill('SIGKILL');
    });

    // Every child is in line (a file each under waiters/) while we hold the mutex.
    const line = path.join(dirs.store, 'waiters');
    while (!existsSync(line) || readdirSync(line).length < WAITERS) await sleep(10);

    holder.unlock();
    const took = await Promise.all(answers);

    expect(took.map((t) => t.timedRetries)).toEqual(Array(WAITERS).fill(0));
    // Woken once each: a release wakes the first in line, not every waiter (a herd would wake the
    // later ones again at each release that went to someone else).
    expect(took.map((t) => t.wakeups)).toEqual(Array(WAITERS).fill(1));
    expect(readdirSync(line)).toEqual([]);
  });
});
