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
 * go touches the oldest file not yet woken (one waiter woken, not a herd), which marks its file
 * unwoken again and tries the mutex at once. A waiter that loses the mutex to a newcomer so stays
 * first in line and is woken by the next release. While the first file woken has not answered for
 * a few milliseconds (ANSWER_MS), a release wakes nobody else: that waiter is on its way to try,
 * and one woken per release, each to lose to the releaser taking the mutex again, was a herd spread
 * over time (measured with 8 processes on 2 cores: a third to three quarters fewer wake-ups, a
 * fifth less CPU per decision, but a longer tail for a waiter left to its timed retry). A file that
 * was woken and neither left nor answered for longer (its waiter dead, on another host, or deaf to
 * fs.watch) is passed by: it cannot hold up the line.
 *
 * No wake-up is lost: a waiter tries the mutex after joining, and a releaser looks at the line
 * after letting go, so one of the two sees the other. A timed retry stays as the fallback: for a
 * dead holder (it never lets go; the retry looks at the owner and takes its mutex over), a file
 * system where fs.watch sees nothing, and a waiter killed in line (its file swallows one wake-up: a
 * waiter whose timer ran out twice in a row removes abandoned files ahead of it, and so do the
 * mutex's sweeps). It is slow on purpose: a wake-up normally comes first. No daemon, no native code: files, fs.watch and timers only.
 */
import { type FSWatcher, linkSync, lstatSync, lutimesSync, readdirSync, unlinkSync, watch } from 'node:fs';
import path from 'node:path';
import type { Holder } from '../../core/lock.js';
import { createExclusive, makeStoreFolder, readPrivateOrNull } from './safe-fs.js';

/**
 * `<joined, base 36>.<count, base 36>.<pid>.<nonce>`, both numbers of fixed width so that sorting
 * the names sorts the line (an unpadded count put "10" before "z"). The join time is the wall
 * clock: a clock stepped back lets later joiners of other processes in ahead of earlier ones, and
 * one stepped forward puts them behind. That costs fairness only (the first name is still woken at
 * each release, so nobody is stranded), and anything stronger needs a shared counter, which needs
 * the lock this line waits for. Within a process the count keeps the order.
 */
const WAITER_NAME = /^([0-9a-z]{10})\.[0-9a-z]{8}\.\d+\.[0-9a-f]+$/;
/** A waiter's file while it is written, before it is linked into the line. */
const DRAFT_NAME = /^([0-9a-z]{10})\.[0-9a-z]{8}\.\d+\.[0-9a-f]+\.draft$/;

/**
 * A waiter's file is born with this modification time; a release sets it to the present (that is
 * the wake-up), and the waiter sets it back before it tries the mutex. So a file whose time is not
 * this one was woken and has not answered yet.
 */
const UNWOKEN = new Date(0);
/** Drafts and files that cannot be read: a live process keeps them for microseconds. */
const STALE_MS = 5_000;
/**
 * A wake-up younger than this is still being answered: releases meanwhile wake nobody else. Past
 * it, the next waiter is woken as well (the woken one may be dead, deaf, or just not scheduled).
 */
const ANSWER_MS = 5;
/** A wake-up unanswered this long: its waiter is dead, elsewhere, or cannot see it. */
const UNANSWERED_MS = 60_000;

/** First timed retry of a waiter nobody woke; it doubles up to the last. */
export const FALLBACK_FIRST_MS = 10;
export const FALLBACK_LAST_MS = 100;

/** How a waiter came to try the mutex again: counted for the test that wake-ups do the work. */
export interface LineStats {
  wakeups: number;
  timedRetries: number;
}

let joined = 0;

function waiterName(me: Holder, nonce: string): string {
  const count = (joined++ % 36 ** 8).toString(36).padStart(8, '0');
  return `${Date.now().toString(36).padStart(10, '0')}.${count}.${me.pid}.${nonce}`;
}

/** How long ago the name says its file joined (a clock step can make it wrong: see WAITER_NAME). */
function ageOf(stamp: string | undefined): number {
  return stamp === undefined ? 0 : Date.now() - Number.parseInt(stamp, 36);
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Left the line meanwhile, or someone else swept it.
  }
}

export class MutexLine {
  readonly dir: string;
  readonly stats: LineStats = { wakeups: 0, timedRetries: 0 };
  private file: string | null = null;
  private watcher: FSWatcher | null = null;
  private woken = false;
  /** Timed retries since the last wake-up. */
  private unheard = 0;
  private resolve: (() => void) | null = null;

  constructor(
    storeDir: string,
    private readonly me: Holder,
    private readonly nonce: string,
    private readonly processAlive: (pid: number, started: string) => boolean,
  ) {
    this.dir = path.join(storeDir, 'waiters');
  }

  /**
   * The line's folder is read and written only when it is a real folder of ours, as the store
   * folder is checked (safe-fs.ts): a symlink planted for it would send the sweeps' unlinks and
   * the releases' touches into another folder.
   */
  private realFolder(): boolean {
    try {
      const stat = lstatSync(this.dir);
      if (!stat.isDirectory()) return false;
      return typeof process.getuid !== 'function' || stat.uid === process.getuid();
    } catch {
      return false;
    }
  }

  /** The names in the line's folder, or none when it is missing or not a real folder of ours. */
  private names(): string[] {
    if (!this.realFolder()) return [];
    try {
      return readdirSync(this.dir);
    } catch {
      return [];
    }
  }

  /**
   * Joins the line. False when it cannot (a symlink planted for the folder, a watch refused): the
   * waiter then relies on its timed retries alone.
   */
  join(): boolean {
    if (this.file !== null) return true;
    let draft: string | null = null;
    try {
      // Only the line's own folder: a store folder that is gone (moved or removed while open) is not
      // made again here (E_STORE_UNREADABLE).
      makeStoreFolder(this.dir);
      if (!this.realFolder()) return false;
      const name = waiterName(this.me, this.nonce);
      const file = path.join(this.dir, name);
      // Written whole under a draft name, then linked in: a waiter killed mid-write leaves a draft
      // (swept by its age), never an empty file in the line that nobody can judge.
      draft = `${file}.draft`;
      createExclusive(draft, `${this.me.host}|${this.me.pid}|${this.me.started}`);
      lutimesSync(draft, UNWOKEN, UNWOKEN);
      linkSync(draft, file);
      this.file = file;
      this.woken = false;
      this.unheard = 0;
      const watcher = watch(file, { persistent: false }, () => this.heard());
      watcher.on('error', () => {
        watcher.close();
        if (this.watcher === watcher) this.watcher = null;
      });
      this.watcher = watcher;
      return true;
    } catch {
      this.leave();
      return false;
    } finally {
      if (draft !== null) unlinkQuietly(draft);
    }
  }

  /** Leaves the line (taken the mutex, or given up). */
  leave(): void {
    this.watcher?.close();
    this.watcher = null;
    if (this.file !== null) {
      // Swept meanwhile by a waiter that misjudged us, or the folder was cleaned: nothing to do.
      unlinkQuietly(this.file);
      this.file = null;
    }
  }

  /**
   * A change to our file: a release's touch wakes us; our own reset of the time (see wait) is
   * heard too, and ignored. A file gone (swept) wakes us as well: we had better try.
   */
  private heard(): void {
    if (this.file !== null) {
      try {
        if (lstatSync(this.file).mtimeMs === UNWOKEN.getTime()) return;
      } catch {
        // Gone: woken.
      }
    }
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
    if (woken) {
      this.stats.wakeups += 1;
      this.unheard = 0;
      this.answer();
    } else {
      this.stats.timedRetries += 1;
      // A wake-up late on a busy machine is not a dead waiter ahead: the line is swept (a read of
      // every file ahead and a process lookup each) from the second timed retry in a row on.
      this.unheard += 1;
      if (this.unheard >= 2) this.sweepDeadAhead();
    }
    return woken;
  }

  /**
   * Marks our file unwoken again before the caller tries the mutex: if the try loses to a
   * newcomer, the next release wakes us alone. A release between this and the try is seen by the
   * try; one after it touches the file again. A waiter that cannot hear (no fs.watch) never
   * answers, so releases pass it by (see wakeNext).
   */
  private answer(): void {
    if (this.file === null) return;
    try {
      lutimesSync(this.file, UNWOKEN, UNWOKEN);
    } catch {
      // Swept meanwhile: the timed retries remain.
    }
  }

  /**
   * Wakes the first waiter in line that has not been woken yet: called right after the mutex is
   * let go. One woken before and still there did not answer (a release may have come before it
   * could; or it is dead, on another host, or deaf to fs.watch): woken less than ANSWER_MS ago, it
   * is left to answer and nobody else is woken; woken earlier, it keeps its wake-up, and the next
   * waiter is woken as well, so no file can swallow every release. A file gone meanwhile (its
   * waiter took the mutex or gave up) passes the turn to the next.
   */
  wakeNext(): void {
    const names = this.names();
    if (names.length === 0) return;
    names.sort();
    const now = new Date();
    for (const name of names) {
      const file = path.join(this.dir, name);
      if (file === this.file || !WAITER_NAME.test(name)) continue;
      try {
        const stat = lstatSync(file);
        if (!stat.isFile()) continue;
        if (stat.mtimeMs !== UNWOKEN.getTime()) {
          // An age below zero (a clock stepped back, another host's clock) counts as old.
          const age = now.getTime() - stat.mtimeMs;
          if (age >= 0 && age < ANSWER_MS) return;
          continue;
        }
        lutimesSync(file, now, now);
        return;
      } catch {
        // Left the line meanwhile: the next one.
      }
    }
  }

  /** Removes the files of dead waiters ahead of us: they would swallow a wake-up each. */
  private sweepDeadAhead(): void {
    if (this.file === null) return;
    const mine = path.basename(this.file);
    for (const name of this.names()) {
      if (name < mine) this.removeIfAbandoned(name);
    }
  }

  /** Removes every abandoned file in the line (a SIGKILLed waiter leaves it): at the mutex's sweeps. */
  sweep(): void {
    for (const name of this.names()) this.removeIfAbandoned(name);
  }

  /**
   * A file is abandoned when: it is a draft or cannot be read and its name is more than a few
   * seconds old (a live waiter writes its file before it joins); it names a dead process on this
   * host; or a release woke it long ago and it never answered. That last rule is what removes a
   * waiter of another host (the store may sit on a shared file system), whose pid says nothing
   * here: until then, releases pass it by once it was woken.
   */
  private removeIfAbandoned(name: string): void {
    const file = path.join(this.dir, name);
    const draft = DRAFT_NAME.exec(name);
    if (draft) {
      if (ageOf(draft[1]) > STALE_MS) unlinkQuietly(file);
      return;
    }
    const waiter = WAITER_NAME.exec(name);
    if (!waiter || file === this.file) return;
    const [host, pid, started, extra] = (readPrivateOrNull(file)?.toString('utf8') ?? '').split('|');
    if (!host || !pid || started === undefined || extra !== undefined || !/^\d+$/.test(pid)) {
      if (ageOf(waiter[1]) > STALE_MS) unlinkQuietly(file);
      return;
    }
    if (host === this.me.host && !this.processAlive(Number(pid), started)) {
      unlinkQuietly(file);
      return;
    }
    try {
      const { mtimeMs } = lstatSync(file);
      if (mtimeMs !== UNWOKEN.getTime() && Date.now() - mtimeMs > UNANSWERED_MS) unlinkQuietly(file);
    } catch {
      // Gone meanwhile.
    }
  }
}
