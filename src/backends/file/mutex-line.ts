/**
 * The line of processes waiting for the store mutex (mutex.ts), so that a waiter sleeps until the
 * mutex is let go instead of trying again on a timer.
 *
 * Why: waiters that retried on timers (a spin, then random pauses) collapsed the store when several
 * processes decided at once: each retry cost a link(2), a read of the owner and a process lookup,
 * so eight waiters burnt the CPU the holder needed, and a waiter that slept past the release left
 * the mutex idle (measured for issue 19: 12,872 decisions a second with one process, 1,323 with
 * eight, p99 166 ms). Now a waiter joins the line with a file of its own under `waiters/`, named by
 * the time it joined, and watches it (fs.watch, inotify on Linux); the process that lets the mutex
 * go touches the oldest file only (one waiter woken, not a herd), which tries the mutex at once. A
 * waiter that loses the mutex to a newcomer stays first in line and is woken by the next release.
 *
 * No wake-up is lost: a waiter tries the mutex after joining, and a releaser looks at the line
 * after letting go, so one of the two sees the other. A timed retry stays as the fallback: for a
 * dead holder (it never lets go; the retry takes its mutex over), a file system where fs.watch
 * sees nothing, and a waiter killed in line (its file is first and no longer wakes anyone: a
 * waiter whose timer ran out removes dead waiters' files ahead of it). It is slow on purpose:
 * a wake-up normally comes first. No daemon, no native code: files, fs.watch and timers only.
 */
import { existsSync, type FSWatcher, lstatSync, lutimesSync, readdirSync, unlinkSync, watch } from 'node:fs';
import path from 'node:path';
import type { Holder } from '../../core/lock.js';
import { makeDirs } from '../../host/make-dirs.js';
import { createExclusive, readPrivateOrNull } from './safe-fs.js';

/** `<joined, base 36, fixed width>.<count>.<pid>.<nonce>`: sorting the names sorts the line. */
const WAITER_NAME = /^[0-9a-z]{10}\.[0-9a-z]+\.\d+\.[0-9a-f]+$/;

/** First timed retry of a waiter nobody woke; it doubles up to the last. */
export const FALLBACK_FIRST_MS = 10;
export const FALLBACK_LAST_MS = 100;

/** How a waiter came to try the mutex again: counted for the test that wake-ups do the work. */
export interface LineStats {
  wakeups: number;
  timedRetries: number;
}

let joined = 0;

export class MutexLine {
  readonly dir: string;
  readonly stats: LineStats = { wakeups: 0, timedRetries: 0 };
  private file: string | null = null;
  private watcher: FSWatcher | null = null;
  private woken = false;
  private resolve: (() => void) | null = null;
  /** The folder was seen to exist: it is never removed, so unlock stops asking. */
  private seen = false;

  constructor(
    storeDir: string,
    private readonly me: Holder,
    private readonly nonce: string,
    private readonly processAlive: (pid: number, started: string) => boolean,
  ) {
    this.dir = path.join(storeDir, 'waiters');
  }

  /**
   * Joins the line. False when it cannot (a symlink planted for the folder, a watch refused): the
   * waiter then relies on its timed retries alone.
   */
  join(): boolean {
    if (this.file !== null) return true;
    try {
      makeDirs(this.dir, 0o700);
      if (!lstatSync(this.dir).isDirectory()) return false;
      this.seen = true;
      const name = `${Date.now().toString(36).padStart(10, '0')}.${(joined++).toString(36)}.${this.me.pid}.${this.nonce}`;
      const file = path.join(this.dir, name);
      createExclusive(file, `${this.me.host}|${this.me.pid}|${this.me.started}`);
      this.file = file;
      this.woken = false;
      const watcher = watch(file, { persistent: false }, () => this.wake());
      watcher.on('error', () => {
        watcher.close();
        if (this.watcher === watcher) this.watcher = null;
      });
      this.watcher = watcher;
      return true;
    } catch {
      this.leave();
      return false;
    }
  }

  /** Leaves the line (taken the mutex, or given up). */
  leave(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.file !== null) {
      try {
        unlinkSync(this.file);
      } catch {
        // Swept as dead by a waiter that misjudged us, or the folder was cleaned.
      }
      this.file = null;
    }
  }

  private wake(): void {
    this.woken = true;
    const resolve = this.resolve;
    this.resolve = null;
    resolve?.();
  }

  /**
   * Waits to be woken, or `ms` at most. True when woken (a touch since the last call counts: it
   * may have landed while the waiter was trying the mutex).
   */
  async wait(ms: number): Promise<boolean> {
    if (!this.woken) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.resolve = null;
          resolve();
        }, ms);
        this.resolve = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    const woken = this.woken;
    this.woken = false;
    if (woken) this.stats.wakeups += 1;
    else {
      this.stats.timedRetries += 1;
      this.sweepDeadAhead();
    }
    return woken;
  }

  /**
   * Wakes the first waiter in line: called right after the mutex is let go. A file gone meanwhile
   * (its waiter took the mutex or gave up) passes the turn to the next.
   */
  wakeNext(): void {
    if (!this.seen) {
      if (!existsSync(this.dir)) return;
      this.seen = true;
    }
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    if (names.length === 0) return;
    names.sort();
    const now = new Date();
    for (const name of names) {
      const file = path.join(this.dir, name);
      if (file === this.file || !WAITER_NAME.test(name)) continue;
      try {
        lutimesSync(file, now, now);
        return;
      } catch {
        // Left the line meanwhile: the next one.
      }
    }
  }

  /** Removes the files of dead waiters ahead of us: a dead first waiter would swallow every wake-up. */
  private sweepDeadAhead(): void {
    if (this.file === null) return;
    const mine = path.basename(this.file);
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (name >= mine || !WAITER_NAME.test(name)) continue;
      this.removeIfDead(path.join(this.dir, name));
    }
  }

  /** Removes every dead waiter's file (a SIGKILLed waiter leaves it): at the mutex's sweeps. */
  sweep(): void {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (WAITER_NAME.test(name)) this.removeIfDead(path.join(this.dir, name));
    }
  }

  private removeIfDead(file: string): void {
    const [host, pid, started] = (readPrivateOrNull(file)?.toString('utf8') ?? '').split('|');
    if (host !== this.me.host || pid === undefined || started === undefined) return;
    if (this.processAlive(Number(pid), started)) return;
    try {
      unlinkSync(file);
    } catch {
      // Someone else swept it.
    }
  }
}
