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
import { lstatSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { HeldRecord } from '../core/decisions/trespass.js';
import { aliveOnce, holderGone, lockStands } from '../core/decisions/context.js';
import { hostName, processAlive } from '../host/process.js';
import { keyName, prune, writeWhole } from './trespass-folder.js';

/** The identity of a file store's log: a commit changes its size, a compaction its inode. */
export interface LogIdentity {
  readonly ino: number;
  readonly size: number;
  readonly mtimeMs: number;
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

/** The cache file of one agent's view of one tree's store, and the key it must hold. */
export function keptFile(dir: string, parts: readonly string[]): { file: string; key: string } {
  const key = parts.join('\n');
  return { file: path.join(dir, 'held', `${keyName(key)}.json`), key };
}

/** A kept file past this size is no list of ours: read the store. */
const MAX_KEPT_BYTES = 4 * 1024 * 1024;

const same = (a: LogIdentity, b: LogIdentity) =>
  a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

const isString = (v: unknown): v is string => typeof v === 'string';
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** A kept lock as keepLocks wrote it: every field lockStands and a stamp read, of its type. */
function isHeldRecord(value: unknown): value is HeldRecord {
  if (typeof value !== 'object' || value === null) return false;
  const r = value as Record<string, unknown>;
  return (
    isString(r.id) &&
    isString(r.scope) &&
    r.kind === 'path' &&
    (r.mode === 'exclusive' || r.mode === 'shared') &&
    isString(r.agent_id) &&
    (r.parent_agent_id === null || isString(r.parent_agent_id)) &&
    (r.intent === null || isString(r.intent)) &&
    isString(r.tree) &&
    isNumber(r.fence) &&
    isString(r.host) &&
    isNumber(r.pid) &&
    isString(r.started) &&
    isNumber(r.updated_at) &&
    (r.expires_at === null || isNumber(r.expires_at)) &&
    (r.claim === undefined || r.claim === true)
  );
}

/**
 * The locks kept in `kept.file` for a log of identity `log`, when the file is one keepLocks wrote
 * for this key and every lock in it still stands at `now` (as seen from this host, `staleMs` for
 * holders on other hosts); else null, and the caller reads the store (and keeps its read anew).
 */
export function keptLocks(
  kept: { readonly file: string; readonly key: string },
  log: LogIdentity,
  now: number,
  staleMs: number,
): HeldRecord[] | null {
  let locks: unknown[];
  try {
    // None yet is the usual miss: asked without an exception, which costs more than the stat. Not
    // followed: a link, a pipe or a device is no list (a pipe would hang the hook).
    const stat = lstatSync(kept.file, { throwIfNoEntry: false });
    if (stat === undefined || !stat.isFile() || stat.size > MAX_KEPT_BYTES) return null;
    const read = JSON.parse(readFileSync(kept.file, 'utf8')) as Partial<Record<string, unknown>> | null;
    if (typeof read !== 'object' || read === null || read.key !== kept.key) return null;
    if (!isNumber(read.at) || now - read.at > KEPT_MS || now < read.at) return null;
    const was = read.log as Partial<LogIdentity> | undefined;
    if (typeof was !== 'object' || was === null || !same(was as LogIdentity, log)) return null;
    if (!Array.isArray(read.locks) || !read.locks.every(isHeldRecord)) return null;
    locks = read.locks;
  } catch {
    return null;
  }
  // A hook process holds no lock: no record is its own.
  const caller = { holder: { host: hostName(), pid: process.pid, started: 'hook' } };
  const isAlive = aliveOnce(processAlive);
  const held = locks as HeldRecord[];
  const stands = (lock: HeldRecord) =>
    lockStands(lock, now, () => holderGone(lock, { now, staleMs, caller }, isAlive));
  return held.every(stands) ? held : null;
}

/** Keeps `locks`, read from a log of identity `log` (taken before the read), in `kept.file`. */
export function keepLocks(
  kept: { readonly file: string; readonly key: string },
  log: LogIdentity,
  locks: readonly HeldRecord[],
  now: number,
): void {
  try {
    const dir = path.dirname(kept.file);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    prune(dir, KEPT_MS, now, KEPT_UNLOOKED);
    // The key itself too: two keys of one file name (a 64-bit hash) never take each other's list.
    writeWhole(kept.file, JSON.stringify({ key: kept.key, at: now, log, locks }));
  } catch {
    // Not kept: the next call reads the store.
  }
}
