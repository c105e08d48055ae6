/**
 * What the file store does with a lock log it cannot read: it fails closed and keeps the bytes.
 *
 * A healthy log always starts with a whole snapshot line (it is only ever created or replaced whole,
 * written aside and renamed over) and then holds whole commit lines, each appended by one write(2)
 * under the store mutex. So:
 * - an empty log, one without a complete first line, or one whose first line is no snapshot was
 *   overwritten, emptied or cut short behind the store's back: nothing is granted until `repair`;
 * - a partial last line is a writer's that died mid-write, and only the process that takes the mutex
 *   over from that dead writer may cut it (moving the bytes aside first). Found by anyone else, it is
 *   damage: a log cut short inside a line looks the same, and granting over it could lose a lock;
 * - a line in the middle that cannot be read stands for a lock held by `<unknown>` (decide.ts), and
 *   the log is copied aside before a compaction would drop it.
 */
import { closeSync, fstatSync, linkSync, lstatSync, truncateSync } from 'node:fs';
import path from 'node:path';
import { AgentLockError } from '../../core/errors.js';
import { makeDirs } from '../../host/make-dirs.js';
import { openRead, readPrivate, readRange, writeAtomic } from './safe-fs.js';

const NEWLINE = 0x0a;
/** How every commit line starts (JSON.stringify keeps key order): a torn one starts so too. */
const COMMIT_START = '{"t":"tx","fence":';

export const REPAIR_HINT =
  'run alock repair: it moves the damage aside, kept, and the store goes on with what can be read';

export function damaged(file: string, what: string): AgentLockError {
  return new AgentLockError(
    'E_STORE_UNREADABLE',
    `the lock log ${file} ${what}: nothing is granted over it`,
    { hint: REPAIR_HINT },
  );
}

/** The folder damaged bytes are moved to, and a name in it no other move can take. */
export function asidePath(storeDir: string, name: string, now: number): string {
  const folder = path.join(storeDir, 'damaged');
  makeDirs(folder, 0o700);
  const stamp = new Date(now).toISOString().replace(/[:.]/g, '-');
  return path.join(folder, `${name}.${stamp}.${process.pid}`);
}

/** The first line parsed when it is a snapshot, else null. */
function parseSnapshot(line: string): { fence: number; locks: unknown[]; tomb: unknown } | null {
  try {
    const value = JSON.parse(line) as { t?: unknown; fence?: unknown; locks?: unknown; tomb?: unknown };
    if (value?.t === 'snap' && typeof value.fence === 'number' && Array.isArray(value.locks)) {
      return { fence: value.fence, locks: value.locks, tomb: value.tomb };
    }
  } catch {
    // Not a snapshot.
  }
  return null;
}

/** What is wrong with the start of a whole log (as read under the mutex), or null when nothing is. */
export function logStartDamage(bytes: Buffer): string | null {
  if (bytes.length === 0) return 'is empty (it was emptied behind the store)';
  const end = bytes.indexOf(NEWLINE);
  if (end === -1) return 'has no complete first line (overwritten or cut short)';
  // A UTF-8 byte-order mark (an editor's) before the snapshot is read through, as log.ts does.
  const from = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  if (parseSnapshot(bytes.subarray(from, end).toString('utf8')) === null) {
    return 'does not start with a snapshot line (overwritten or cut short)';
  }
  return null;
}

/** Throws the damage of a log that does not start as every log does. */
export function checkLogStart(file: string, bytes: Buffer): void {
  const damage = logStartDamage(bytes);
  if (damage !== null) throw damaged(file, damage);
}

/** Whether a partial last line could be the start of a commit line (a dead writer's torn write). */
export function looksLikeTornCommit(tail: Buffer): boolean {
  const text = tail.toString('utf8');
  return text.startsWith(COMMIT_START) || COMMIT_START.startsWith(text);
}

/**
 * Run by the process that takes the store mutex over from a dead owner, before it lets anyone in:
 * the owner can no longer write, and nobody else holds the mutex, so a partial last line is exactly
 * what the owner left mid-write. It is moved aside (kept) and cut off. A tail that is no commit's
 * start is left alone: the next decision reports it as damage.
 */
export function cutTornTail(
  storeDir: string,
  logPath: string,
  now: number,
  stillTakingOver: () => boolean,
): void {
  let fd: number;
  try {
    fd = openRead(logPath);
  } catch {
    return;
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return;
    // A commit line is rarely longer than a few kilobytes; a notes-heavy one may be: read back far
    // enough to find the last newline.
    let from = Math.max(0, size - 65536);
    let bytes = readRange(fd, from, size);
    while (bytes.lastIndexOf(NEWLINE) === -1 && from > 0) {
      from = Math.max(0, from - 1048576);
      bytes = readRange(fd, from, size);
    }
    const cut = bytes.lastIndexOf(NEWLINE) + 1;
    if (cut === 0 || cut === bytes.length) return;
    const tail = bytes.subarray(cut);
    if (!looksLikeTornCommit(tail)) return;
    writeAtomic(asidePath(storeDir, 'torn-commit', now), tail);
    // Cut only what was read, and only while no one else can have written since.
    const after = fstatSync(fd);
    if (after.size !== size || lstatSync(logPath).ino !== after.ino || !stillTakingOver()) return;
    truncateSync(logPath, from + cut);
  } catch {
    // Best effort: a tail left in place is reported as damage by the next decision.
  } finally {
    closeSync(fd);
  }
}

/** Keeps the log as it is now beside the store (a hard link: no copy, and the bytes never change). */
export function keepAside(storeDir: string, logPath: string, now: number): string {
  const target = asidePath(storeDir, 'locks.log', now);
  try {
    linkSync(logPath, target);
  } catch {
    const data = readPrivate(logPath);
    if (data !== null) writeAtomic(target, data);
  }
  return target;
}
