/**
 * Watching the store for commits: an fs.watch, and a stat poll for file systems where that sees
 * nothing. Used by log watchers (alock log --follow, waiting acquires) and by wake files.
 */
import { closeSync, type FSWatcher, fstatSync, lstatSync, watch } from 'node:fs';
import type { WatchListener } from '../backend.js';
import { coalesced } from '../shared/listeners.js';
import { NEWLINE } from './log.js';
import { openRead, readRange } from './safe-fs.js';

/**
 * fs.watch misses changes on some file systems (network mounts, some containers) and may not be
 * available at all, so watchers also compare the log's inode, size and mtime this often.
 */
const WATCH_POLL_MS = 100;
/**
 * Every commit appends to `locks.log` (or renames a compacted one over it): an fs.watch on the
 * store folder sees both, and a stat poll catches what it misses. Calls are coalesced.
 */
export function watchLog(dir: string, logPath: string, listener: WatchListener): () => Promise<void> {
  let on = true;
  const tail = logTail(logPath);
  const fire = coalesced(() => {
    if (!on) return;
    try {
      listener(tail());
    } catch {
      // A watcher's failure is its own; it must never surface from a timer.
    }
  });
  const stop = watchWithPoll(
    dir,
    (name) => name === null || name === 'locks.log',
    () => statStamp(logPath),
    fire,
  );
  return async () => {
    on = false;
    stop();
  };
}

/**
 * What the decisions appended since the last call touched: the ids their lines put or delete,
 * read without the mutex (a line is appended whole by one write; a partial last line waits for
 * the next call). Null when that cannot be told: the log was compacted or replaced.
 */
function logTail(logPath: string): () => string[] | null {
  let ino = -1;
  let offset = 0;
  const reset = () => {
    try {
      const stat = lstatSync(logPath);
      ino = stat.ino;
      offset = stat.size;
    } catch {
      ino = -1;
    }
  };
  reset();
  return () => {
    let fd: number;
    try {
      fd = openRead(logPath);
    } catch {
      ino = -1;
      return null;
    }
    try {
      const stat = fstatSync(fd);
      if (stat.ino !== ino || stat.size < offset) {
        ino = stat.ino;
        offset = stat.size;
        return null;
      }
      const bytes = readRange(fd, offset, stat.size);
      const end = bytes.lastIndexOf(NEWLINE) + 1;
      offset += end;
      const touched: string[] = [];
      for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) {
        if (line === '') continue;
        const entry = JSON.parse(line) as { t?: string; put?: { id: string }[]; del?: string[] };
        if (entry.t !== 'tx' || !Array.isArray(entry.put) || !Array.isArray(entry.del)) return null;
        for (const record of entry.put) touched.push(record.id);
        touched.push(...entry.del);
      }
      return touched;
    } catch {
      reset();
      return null;
    } finally {
      closeSync(fd);
    }
  };
}

/** What a stat poll compares: the inode, size and mtime ('' when the file is missing). */
export function statStamp(file: string): string {
  try {
    const stat = lstatSync(file);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return '';
  }
}

/**
 * fs.watch on `target` (events for which `relevant` holds), plus a stat poll of `stamp` every
 * WATCH_POLL_MS for file systems where fs.watch sees nothing; both call `fire`. A watch that breaks
 * (the folder removed, too many watches) leaves the poll to do the work. Answers the stopper.
 */
export function watchWithPoll(
  target: string,
  relevant: (name: string | null) => boolean,
  stamp: () => string,
  fire: () => void,
): () => void {
  let last = stamp();
  const poll = setInterval(() => {
    const now = stamp();
    if (now !== last) {
      last = now;
      fire();
    }
  }, WATCH_POLL_MS);
  poll.unref();
  let watcher: FSWatcher | null = null;
  try {
    watcher = watch(target, { persistent: false }, (_event, name) => {
      if (!relevant(name)) return;
      last = stamp();
      fire();
    });
    watcher.on('error', () => {
      watcher?.close();
      watcher = null;
    });
  } catch {
    watcher = null;
  }
  return () => {
    clearInterval(poll);
    watcher?.close();
  };
}
