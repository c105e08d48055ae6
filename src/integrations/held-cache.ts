/**
 * What a hook's trespass stamp last read of a file store: the locks of others an agent's shell
 * command could trespass on, kept beside the stamps (trespass-folder.ts) with the identity of the
 * store's log when they were read (inode, size, mtime). The log only grows between compactions,
 * and a compaction or repair renames a new one over it: a log with the same identity holds the same
 * commits. The agent's next shell call then takes the locks from here, after asking of each whether
 * it still stands (a lease that ran out, a holder that is gone: context.ts lockStands), instead of
 * reading and deciding over the whole log, which was most of a stamp's cost with a hundred locks
 * held. Any doubt (a lock that no longer stands, a changed log, a cache that cannot be read) reads
 * the store as before, which also reaps what no longer stands.
 *
 * Only the file store: Redis answers over the network, and its state has no such identity here.
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { HeldRecord } from '../core/decisions/trespass.js';
import { holderGone, lockStands } from '../core/decisions/context.js';
import { hostName, processAlive } from '../host/process.js';
import { keyName, prune, writeWhole } from './trespass-folder.js';

/** The identity of a file store's log: a commit changes its size, a compaction its inode. */
export interface LogIdentity {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
}

interface Kept {
  readonly log: LogIdentity;
  readonly locks: HeldRecord[];
}

/** A cache folder of at most this many is not pruned (trespass-folder.ts prune). */
const KEPT_UNLOOKED = 256;
/** A kept list is never used after this, whatever its log: a bound on what a mistake could cost. */
const KEPT_MS = 60 * 60 * 1000;

/**
 * The identity of the log of the file store in `storeDir`, or null when that store is not a file
 * store (its marker says otherwise, or cannot be read) or has no log.
 */
export function fileLogIdentity(storeDir: string): LogIdentity | null {
  try {
    const marker = JSON.parse(readFileSync(path.join(storeDir, 'backend.json'), 'utf8')) as {
      backend?: unknown;
    };
    if (marker.backend !== 'file') return null;
    const s = statSync(path.join(storeDir, 'locks.log'));
    return { ino: s.ino, size: s.size, mtimeMs: s.mtimeMs };
  } catch {
    return null;
  }
}

/** The cache file of one agent's view of one tree's store. */
export function keptFile(dir: string, parts: readonly string[]): string {
  return path.join(dir, 'held', `${keyName(parts.join('\n'))}.json`);
}

const same = (a: LogIdentity, b: LogIdentity) =>
  a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

/**
 * The locks kept in `file` for a log of identity `log`, when every one of them still stands at
 * `now` (as seen from this host, `staleMs` for holders on other hosts); else null.
 */
export function keptLocks(file: string, log: LogIdentity, now: number, staleMs: number): HeldRecord[] | null {
  let kept: Kept & { readonly at?: unknown };
  try {
    // None yet is the usual miss: asked without an exception, which costs more than the stat.
    if (statSync(file, { throwIfNoEntry: false }) === undefined) return null;
    kept = JSON.parse(readFileSync(file, 'utf8')) as Kept & { readonly at?: unknown };
  } catch {
    return null;
  }
  if (typeof kept.at !== 'number' || now - kept.at > KEPT_MS || now < kept.at) return null;
  if (!kept.log || !same(kept.log, log) || !Array.isArray(kept.locks)) return null;
  // A hook process holds no lock: no record is its own.
  const caller = { holder: { host: hostName(), pid: process.pid, started: 'hook' } };
  const alive = new Map<string, boolean>();
  const isAlive = (pid: number, started: string) => {
    const key = `${pid}|${started}`;
    let answer = alive.get(key);
    if (answer === undefined) {
      answer = processAlive(pid, started);
      alive.set(key, answer);
    }
    return answer;
  };
  const stands = (lock: HeldRecord) =>
    typeof lock?.scope === 'string' &&
    lockStands(lock, now, () => holderGone(lock, { now, staleMs, caller }, isAlive));
  return kept.locks.every(stands) ? kept.locks : null;
}

/** Keeps `locks`, read from a log of identity `log` (taken before the read), in `file`. */
export function keepLocks(file: string, log: LogIdentity, locks: readonly HeldRecord[], now: number): void {
  try {
    const dir = path.dirname(file);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    prune(dir, KEPT_MS, now, KEPT_UNLOOKED);
    writeWhole(file, JSON.stringify({ at: now, log, locks }));
  } catch {
    // Not kept: the next call reads the store.
  }
}
