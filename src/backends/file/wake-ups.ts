/**
 * Wake-ups for processes waiting in line for a lock: each waits on a file of its own under wake/
 * (fs.watch, with a stat poll for file systems where that sees nothing), and the commit that hands
 * it its locks or frees its way touches that file only, so waiters in line do not all wake on
 * every hand-off. (The store mutex has its own line: mutex-line.ts.)
 */
import {
  closeSync,
  existsSync,
  fstatSync,
  lstatSync,
  lutimesSync,
  readdirSync,
  realpathSync,
  unlinkSync,
} from 'node:fs';
import path from 'node:path';
import { AgentLockError } from '../../core/errors.js';
import type { WatchListener } from '../backend.js';
import { coalesced, stopper, tell, waiterTag } from '../shared/listeners.js';
import { makeStoreFolder, openAppend, readPrivateOrNull, writeAll } from './safe-fs.js';
import { watchWithPoll, statStamp } from './watch.js';

/** Wake files of this process's handles: removed on the way out. */
export const openWakeFiles = new Set<string>();
/** A waiter's wake file: its pid first, so that a sweep can tell the files of dead processes. */
function wakeName(waiter: string): string {
  const pid = waiter.split('|')[1] ?? '0';
  return `${pid}-${waiterTag(waiter)}`;
}

/** The names wakeName() gives: nothing else under wake/ is ever removed by a sweep. */
const WAKE_NAME = /^\d+-[A-Za-z0-9_-]{22}$/;

/** Creates (or re-creates) a wake file, naming its waiter so that a sweep can judge it. */
function writeWakeFile(file: string, waiter: string): void {
  const fd = openAppend(file, true);
  try {
    if (fstatSync(fd).size === 0) writeAll(fd, Buffer.from(waiter));
  } finally {
    closeSync(fd);
  }
}

interface WakeWatch {
  readonly listeners: Set<WatchListener>;
  /** Handles of this process using it: the last to close removes the file. */
  handles: number;
  /** Makes the file again (it was removed under us) and watches the new one. */
  renew(): void;
  close(): void;
}
/** Wake file path -> its watch, shared by the handles of this process (one waiter key each). */
const wakeWatches = new Map<string, WakeWatch>();

/** The wake files of one store handle. */
export class WakeFiles {
  private readonly wakeDir: string;
  /** Wake files this handle uses (see wakeWatches). */
  private readonly wakes = new Set<string>();
  private wakeReal: string | null = null;

  constructor(
    storeDir: string,
    private readonly host: string,
    private readonly processAlive: (pid: number, started: string) => boolean,
  ) {
    this.wakeDir = path.join(storeDir, 'wake');
  }

  /** Touches the wake files of the waiters a commit names (a missing one is a waiter gone). */
  wakeUp(waiters: readonly string[]): void {
    const now = new Date();
    for (const waiter of waiters) {
      try {
        lutimesSync(path.join(this.wakeDir, wakeName(waiter)), now, now);
      } catch {
        // Best effort: the waiter also polls.
      }
    }
  }

  /**
   * A waiter watches a file of its own under wake/ (fs.watch, with a stat poll for file systems
   * where that sees nothing), which the commits that name it touch. One per process and handle,
   * kept until close().
   */
  watch(waiter: string, listener: WatchListener): () => Promise<void> {
    const file = this.wakeFile(waiter);
    let wake = wakeWatches.get(file);
    if (!wake) {
      wake = this.openWake(file, waiter);
      wakeWatches.set(file, wake);
    } else if (!existsSync(file)) {
      // Removed under us (someone cleaned the folder): make it again.
      this.ensureWakeDir();
      wake.renew();
    }
    if (!this.wakes.has(file)) {
      this.wakes.add(file);
      wake.handles += 1;
    }
    wake.listeners.add(listener);
    return stopper(wake.listeners, listener);
  }

  /**
   * The wake file of a waiter, by the real path of the folder (found once per handle): two
   * spellings of one store folder in one process share one watch.
   */
  private wakeFile(waiter: string): string {
    if (this.wakeReal === null) {
      this.ensureWakeDir();
      this.wakeReal = realpathSync.native(this.wakeDir);
    }
    return path.join(this.wakeReal, wakeName(waiter));
  }

  /** Makes the wake folder; a symlink in its place is refused (the waiter then relies on its poll). */
  private ensureWakeDir(): void {
    makeStoreFolder(this.wakeDir);
    if (lstatSync(this.wakeDir).isSymbolicLink()) {
      throw new AgentLockError('E_STORE_UNSAFE', `${this.wakeDir} is a symlink, not a folder`, {
        hint: 'remove it; the store makes a real one',
      });
    }
  }

  private openWake(file: string, waiter: string): WakeWatch {
    writeWakeFile(file, waiter);
    openWakeFiles.add(file);
    const listeners = new Set<WatchListener>();
    const fire = coalesced(() => tell(listeners, null));
    const arm = () =>
      watchWithPoll(
        file,
        () => true,
        () => statStamp(file),
        fire,
      );
    let stop = arm();
    return {
      listeners,
      handles: 0,
      renew: () => {
        // The watch followed the old file: watch the new one.
        writeWakeFile(file, waiter);
        stop();
        stop = arm();
      },
      close: () => {
        wakeWatches.delete(file);
        stop();
        listeners.clear();
        openWakeFiles.delete(file);
        try {
          unlinkSync(file);
        } catch {
          // Gone already.
        }
      },
    };
  }

  /**
   * Removes the wake files of processes that are gone (killed before they could): only files of
   * our own naming in a real folder, each judged by the waiter it names (host, pid, start stamp).
   */
  sweep(): void {
    let names: string[];
    try {
      if (!lstatSync(this.wakeDir).isDirectory()) return;
      names = readdirSync(this.wakeDir);
    } catch {
      return;
    }
    const host = this.host;
    for (const name of names) {
      if (!WAKE_NAME.test(name)) continue;
      const file = path.join(this.wakeDir, name);
      const [waiterHost, pid, started] = (readPrivateOrNull(file)?.toString('utf8') ?? '').split('|');
      if (waiterHost !== host || pid === undefined || started === undefined) continue;
      if (this.processAlive(Number(pid), started)) continue;
      try {
        unlinkSync(file);
      } catch {
        // Someone else swept it.
      }
    }
  }

  /** Lets go of this handle's wake files (the last handle of the process removes each). */
  close(): void {
    for (const file of this.wakes) {
      const wake = wakeWatches.get(file);
      if (wake && --wake.handles === 0) wake.close();
    }
    this.wakes.clear();
  }
}
