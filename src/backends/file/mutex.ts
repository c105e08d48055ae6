/**
 * The store's internal mutex: a hard link named `mutex` to a file that names its owner process.
 * link(2) fails when the name exists, so taking it is one atomic call, and the owner's identity is
 * there from the first instant (no window with an empty lock file). A dead owner (same host, no
 * process with its pid and start stamp) is recognised at a waiter's first timed retry (10 ms), so a
 * SIGKILLed process never wedges the store; a live but stuck owner is waited for up to
 * AGENT_LOCK_MUTEX_TIMEOUT, then reported.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, lstatSync, readdirSync, unlinkSync } from 'node:fs';
import path from 'node:path';
import type { Holder } from '../../core/lock.js';
import { AgentLockError } from '../../core/errors.js';
import { FALLBACK_FIRST_MS, FALLBACK_LAST_MS, type LineStats, MutexLine } from './mutex-line.js';
import { createExclusive, readPrivate, readPrivateOrNull, storeGone } from './safe-fs.js';

interface OwnerInfo {
  pid: number;
  started: string;
  host: string;
  nonce: string;
}

function parseOwner(data: Buffer | null): OwnerInfo | null | 'missing' {
  if (data === null) return 'missing';
  try {
    const value = JSON.parse(data.toString('utf8')) as OwnerInfo;
    if (typeof value.pid === 'number' && typeof value.nonce === 'string') return value;
  } catch {
    // Unreadable owner: judged by age below.
  }
  return null;
}

const GARBAGE_OWNER_MS = 10_000;
const GUARD_STALE_MS = 5_000;

export class FileMutex {
  private readonly mutexPath: string;
  /**
   * The owner file's name and the line of waiters, made on first use: a handle that only reads
   * (a hook's check answered from the log) never loads node:crypto for the random nonce.
   */
  private named: { nonce: string; ownerPath: string; line: MutexLine } | null = null;
  private ownerIno = -1;
  /** A decision of this handle holds the mutex or is waiting for it; `turns` are the others. */
  private busy = false;
  private readonly turns: (() => void)[] = [];

  constructor(
    private readonly dir: string,
    private readonly me: Holder,
    private readonly timeoutMs: number,
    private readonly processAlive: (pid: number, started: string) => boolean,
    /**
     * Runs when a dead owner's mutex is taken over, while it still names that owner: nobody else
     * can be inside, so what the owner left half-done can be repaired safely (see log-damage.ts).
     */
    private readonly onTakeover: (stillTakingOver: () => boolean) => void = () => undefined,
    /** The timed retries of a waiter nobody wakes (first, and the most it grows to): tests slow them. */
    private readonly fallback: { readonly firstMs: number; readonly lastMs: number } = {
      firstMs: FALLBACK_FIRST_MS,
      lastMs: FALLBACK_LAST_MS,
    },
  ) {
    this.mutexPath = path.join(dir, 'mutex');
  }

  private get own(): { nonce: string; ownerPath: string; line: MutexLine } {
    if (this.named === null) {
      const nonce = randomBytes(8).toString('hex');
      this.named = {
        nonce,
        ownerPath: path.join(this.dir, `owner.${this.me.pid}.${nonce}`),
        line: new MutexLine(this.dir, this.me, nonce, this.processAlive),
      };
    }
    return this.named;
  }

  private get nonce(): string {
    return this.own.nonce;
  }

  private get ownerPath(): string {
    return this.own.ownerPath;
  }

  private get line(): MutexLine {
    return this.own.line;
  }

  private ensureOwnerFile(): void {
    if (this.ownerIno !== -1) return;
    const info: OwnerInfo = {
      pid: this.me.pid,
      started: this.me.started,
      host: this.me.host,
      nonce: this.nonce,
    };
    try {
      this.ownerIno = createExclusive(this.ownerPath, JSON.stringify(info));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      // Our own name (pid and nonce), left from before: made anew, so its inode is known.
      unlinkSync(this.ownerPath);
      this.ownerIno = createExclusive(this.ownerPath, JSON.stringify(info));
    }
  }

  /**
   * One attempt; true when taken. Synchronous, so the uncontended path never yields. `inspect`:
   * on failure, look whether the owner is dead (a file read and a process lookup).
   */
  tryLock(inspect = true): boolean {
    try {
      this.ensureOwnerFile();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && !this.folderThere())
        throw storeGone(this.dir);
      throw error;
    }
    try {
      linkSync(this.ownerPath, this.mutexPath);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        if (!this.folderThere()) throw storeGone(this.dir);
        // Our owner file was removed (someone cleaned the folder): make a new one.
        this.ownerIno = -1;
        return false;
      }
      if (code !== 'EEXIST') throw error;
    }
    // A dead owner's mutex just taken over: try at once (nobody else was woken by the takeover).
    if (inspect && this.inspectHolder()) return this.tryLock(false);
    return false;
  }

  /**
   * Decisions of one handle take turns here before they contend for the file: the line holds one
   * file per handle, and a handle's own release cannot wake it (nor need to: the turn passes).
   */
  async lock(): Promise<void> {
    if (this.busy) await new Promise<void>((resolve) => this.turns.push(resolve));
    this.busy = true;
    try {
      await this.lockFile();
    } catch (error) {
      this.passTurn();
      throw error;
    }
  }

  private passTurn(): void {
    const next = this.turns.shift();
    if (next) next();
    else this.busy = false;
  }

  private async lockFile(): Promise<void> {
    // Whether the owner is dead is looked at only after a timed retry (a file read and a process
    // lookup, about ten system calls): a busy mutex is nearly always held by a live process that
    // is about to let go, and a dead one wakes nobody, so its waiters come to the timer anyway.
    if (this.tryLock(false)) return;
    // Wait in line (mutex-line.ts): woken by the release, with a slow timed retry as the fallback.
    const deadline = Date.now() + this.timeoutMs;
    const inLine = this.line.join();
    const first = inLine ? this.fallback.firstMs : 1;
    const last = inLine ? this.fallback.lastMs : 1;
    let pause = first;
    let inspect = false;
    try {
      // Tried once more after joining: a release just before we joined woke nobody.
      while (!this.tryLock(inspect)) {
        if (Date.now() > deadline) {
          // A timeout shorter than the first timed retry still looks at the owner once.
          if (!inspect && this.tryLock(true)) return;
          const owner = parseOwner(readPrivate(this.mutexPath));
          const who =
            owner && owner !== 'missing' ? `process ${owner.pid} on ${owner.host}` : 'an unknown process';
          throw new AgentLockError(
            'E_STORE_BUSY',
            `the store ${this.dir} stayed busy for ${this.timeoutMs / 1000}s (its mutex is held by ${who})`,
            { hint: 'try again, or raise AGENT_LOCK_MUTEX_TIMEOUT' },
          );
        }
        const woken = await this.line.wait(Math.min(pause, Math.max(1, deadline - Date.now())));
        // Nobody woke us: the holder may be dead (it never lets go), so look at it. Woken: the
        // mutex is changing hands, and the next silence starts short again.
        inspect = !woken;
        pause = woken ? first : Math.min(pause * 2, last);
      }
    } finally {
      this.line.leave();
    }
  }

  /** Counts of how waits for this handle ended: woken by a release, or by the fallback timer. */
  get waitStats(): LineStats {
    return this.line.stats;
  }

  private folderThere(): boolean {
    try {
      return lstatSync(this.dir).isDirectory();
    } catch {
      return false;
    }
  }

  /** Still ours? A takeover by a confused stealer is detected before anything is committed. */
  holds(): boolean {
    try {
      return lstatSync(this.mutexPath).ino === this.ownerIno;
    } catch {
      return false;
    }
  }

  unlock(): void {
    try {
      if (!this.holds()) return;
      unlinkSync(this.mutexPath);
      this.line.wakeNext();
    } finally {
      this.passTurn();
    }
  }

  /** Removes our owner file; the handle can lock again later (it is recreated). */
  dispose(): void {
    if (this.named === null) return;
    this.line.leave();
    if (this.ownerIno === -1) return;
    try {
      unlinkSync(this.ownerPath);
    } catch {
      // Already gone.
    }
    this.ownerIno = -1;
  }

  /**
   * Removes owner files of dead processes (a SIGKILLed process leaves its file behind). Cheap
   * enough for the rare moments it runs: after a takeover and when the log is compacted.
   */
  sweepDeadOwners(): void {
    this.line.sweep();
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (!name.startsWith('owner.') || name === path.basename(this.ownerPath)) continue;
      const file = path.join(this.dir, name);
      const owner = parseOwner(readPrivateOrNull(file));
      if (owner === 'missing' || owner === null) continue;
      if (owner.host === this.me.host && !this.processAlive(owner.pid, owner.started)) {
        try {
          unlinkSync(file);
        } catch {
          // Someone else swept it.
        }
      }
    }
  }

  /** True when the holder was found dead and its mutex taken over (removed). */
  private inspectHolder(): boolean {
    const owner = parseOwner(readPrivate(this.mutexPath));
    if (owner === 'missing') return false;
    if (owner === null) {
      try {
        if (Date.now() - lstatSync(this.mutexPath).mtimeMs > GARBAGE_OWNER_MS) return this.steal(null);
      } catch {
        // Gone meanwhile.
      }
      return false;
    }
    if (owner.host === this.me.host && !this.processAlive(owner.pid, owner.started)) return this.steal(owner);
    return false;
  }

  /**
   * Takes over a dead owner's mutex. Takeovers are serialised by a second link, `mutex.takeover`:
   * under it nobody else removes the mutex, and no live process can replace an existing one (its
   * link fails), so the owner re-read under the guard is exactly what gets unlinked. (Moving the
   * mutex aside and linking it back when the guess was wrong left a gap in which a third process
   * could take the mutex alongside a live owner.)
   */
  private steal(dead: OwnerInfo | null): boolean {
    const guard = path.join(this.dir, 'mutex.takeover');
    try {
      linkSync(this.ownerPath, guard);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') this.clearAbandonedGuard(guard);
      return false;
    }
    try {
      const current = parseOwner(readPrivate(this.mutexPath));
      const same =
        dead === null
          ? current === null
          : current !== null && current !== 'missing' && current.nonce === dead.nonce;
      if (!same) return false;
      // A taker paused for longer than the guard lasts may have been overtaken: the repair checks,
      // just before it writes, that the guard is still ours and the mutex still the dead owner's.
      this.onTakeover(() => {
        try {
          if (lstatSync(guard).ino !== this.ownerIno) return false;
          const now = parseOwner(readPrivate(this.mutexPath));
          return dead === null ? now === null : now !== null && now !== 'missing' && now.nonce === dead.nonce;
        } catch {
          return false;
        }
      });
      unlinkSync(this.mutexPath);
      if (dead !== null) {
        try {
          unlinkSync(path.join(this.dir, `owner.${dead.pid}.${dead.nonce}`));
        } catch {
          // The dead owner's file may have been cleaned already.
        }
      }
      this.sweepDeadOwners();
      return true;
    } finally {
      try {
        if (lstatSync(guard).ino === this.ownerIno) unlinkSync(guard);
      } catch {
        // Already cleared as abandoned by someone else.
      }
    }
  }

  /**
   * A takeover lasts microseconds, so a guard whose owner is dead, or that was linked more than a
   * few seconds ago (link(2) sets the ctime), was abandoned mid-takeover and is removed.
   */
  private clearAbandonedGuard(guard: string): void {
    try {
      const owner = parseOwner(readPrivate(guard));
      const deadOwner =
        owner !== null &&
        owner !== 'missing' &&
        owner.host === this.me.host &&
        !this.processAlive(owner.pid, owner.started);
      if (deadOwner || Date.now() - lstatSync(guard).ctimeMs > GUARD_STALE_MS) unlinkSync(guard);
    } catch {
      // Gone meanwhile.
    }
  }
}
