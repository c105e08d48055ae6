/**
 * A Redis store handle's commits: what it sends COMMIT_LUA (commit-script.ts), as a typed object
 * turned into the positional arguments the script reads in one place, and how the answer is
 * folded into the handle's snapshot.
 */
import type { Changes } from '../../core/decide.js';
import { owns, readKeys, recordDomain, STORE_DOMAIN, writeKeys } from '../../core/domains.js';
import type { LockRecord } from '../../core/lock.js';
import { randomTextPooled } from '../../host/random.js';
import type { Client } from './connection.js';
import type { Snapshot } from './snapshot.js';

/** The keys of one store: all under one hash tag, so they share a Cluster slot. */
export interface StoreKeys {
  readonly store: string;
  readonly changes: string;
  readonly history: string;
  readonly domains: string;
}

export interface CommitArgs {
  readonly keys: StoreKeys;
  /** The snapshot's epoch and version ('' when the handle has none). */
  readonly epoch: string;
  readonly version: string;
  /** Check the server's clock against [now, validUntil); false: the handle's own clock is trusted. */
  readonly checkTime: boolean;
  /** How the script may apply the changes to a newer store (commitHow). */
  readonly how: string;
  readonly now: number;
  readonly validUntil: number;
  /** The store's fence after the decision. */
  readonly fence: number;
  /** The fence the decision started from, when its new fences may be moved up; null: they may not. */
  readonly seenFence: number | null;
  /** The new tombstones as JSON, or '' when unchanged. */
  readonly tombstones: string;
  readonly channel: string;
  /** A fresh id for the commit, '' to validate only. */
  readonly commitId: string;
  /** The domain version keys the decision read, with the version this handle knows each at. */
  readonly reads: readonly (readonly [string, number])[];
  /** The domain version keys the changes move. */
  readonly writes: Iterable<string>;
  /** Lock id and record JSON, each to write. */
  readonly put: readonly (readonly [string, string])[];
  readonly del: readonly string[];
  /** Channels of waiters to wake, and of holders to inform (marked with a leading '~'). */
  readonly notify: readonly string[];
  /** The events as a JSON array, or null when there are none. */
  readonly events: string | null;
}

/** The script's KEYS then ARGV (numberOfKeys 4). */
export function commitArgv(args: CommitArgs): string[] {
  const { keys } = args;
  // Built with push, not spreads and flatMap: this runs on every decision.
  const argv = [
    keys.store,
    keys.changes,
    keys.history,
    keys.domains,
    args.epoch,
    args.version,
    (args.checkTime ? '1' : '0') + args.how,
    String(args.now),
    String(args.validUntil),
    String(args.fence),
    args.tombstones,
    args.channel,
    args.commitId,
    args.seenFence === null ? '' : String(args.seenFence),
    String(args.reads.length),
  ];
  for (const [key, known] of args.reads) argv.push(key, String(known));
  const at = argv.length;
  argv.push('0');
  for (const key of args.writes) argv.push(key);
  argv[at] = String(argv.length - at - 1);
  argv.push(String(args.put.length));
  for (const [id, json] of args.put) argv.push(id, json);
  argv.push(String(args.del.length));
  for (const id of args.del) argv.push(id);
  argv.push(String(args.notify.length));
  for (const channel of args.notify) argv.push(channel);
  if (args.events !== null) argv.push(args.events);
  return argv;
}

/** A change set that only takes a new place in line: the commit script may merge it (MERGE). */
function onlyNewTickets(changes: Changes, known: ReadonlyMap<string, LockRecord>): boolean {
  return (
    changes.put.length > 0 &&
    changes.put.length <= 100 &&
    changes.del.length === 0 &&
    changes.events.every((event) => event.type === 'queued') &&
    changes.tombstones === null &&
    changes.put.every((record) => record.status === 'waiting' && !known.has(record.id))
  );
}

/**
 * How the script may apply the changes to a newer store (ARGV[3] after its first character). A
 * merge decided on a clock of the caller's own also says when it is sent (`sentAt`, a lower bound
 * of server time), so that the script still takes it only fresh (MERGE in commit-script.ts).
 */
export function commitHow(
  changes: Changes,
  known: ReadonlyMap<string, LockRecord>,
  sentAt: number | null,
): string {
  if (onlyNewTickets(changes, known)) return sentAt === null ? 'm' : `m${sentAt}`;
  if (changes.rebase === undefined) return '';
  let flag = 'r';
  for (const agent of changes.rebase) flag += `\n${JSON.stringify(agent)}`;
  return flag;
}

/**
 * A result whose locks include new grants, with the fences the store gave them: the script moves
 * a decision's new fences up past grants made meanwhile on other domains (FENCES).
 */
export function withFences<T>(result: T, fences: ReadonlyMap<string, number>): T {
  if (fences.size === 0 || typeof result !== 'object' || result === null) return result;
  const locks = (result as { locks?: unknown }).locks;
  if (!Array.isArray(locks)) return result;
  return {
    ...result,
    locks: locks.map((lock: { id: string; fence: number }) => {
      const fence = fences.get(lock.id);
      return fence === undefined ? lock : { ...lock, fence };
    }),
  };
}

/** What commit() needs of the store handle. */
export interface CommitLine {
  readonly client: Client;
  /** Runs a command, its failures turned into the store's errors. */
  call<T>(command: () => Promise<T>): Promise<T>;
  readonly keys: StoreKeys;
  readonly channel: string;
  wakeChannel(waiter: string): string;
  damaged(what: string): Error;
  readonly snapshot: Snapshot;
}

/** A decision's changes (null: validate the snapshot only), and what they were decided on. */
export interface Sent {
  readonly changes: Changes | null;
  readonly now: number;
  readonly validUntil: number;
  readonly checkTime: boolean;
  /** The decision's conflict domains; absent or null: the whole store is compared. */
  readonly domains?: readonly string[] | null;
  /** The fence the decision started from. */
  readonly seenFence?: number;
}

/**
 * 'ok' when committed, 'folded' when committed and already in the cache (it came on a channel
 * first), 'rebased' when committed on a newer store (the cache is synced to it), 'time' and 'again'
 * when the caller must decide again on the refreshed cache. `offset`: how far the script moved the
 * new fences up (NaN: it did, by an unknown amount; the cache is then synced).
 */
export interface CommitAnswer {
  readonly kind: 'ok' | 'folded' | 'rebased' | 'time' | 'again';
  readonly offset: number;
}

/**
 * Sends a change set (or null: validate only) and folds the answer into the cache: 'ok' when
 * committed, 'folded' when committed and already in the cache (it came on the channel first),
 * 'rebased' when committed on a newer store (the cache is synced to it), 'time' and 'again' when
 * the caller must decide again on the refreshed cache. `offset`: how far the script moved the new
 * fences up (NaN: it did, by an unknown amount; the cache is then synced).
 */
/** Most domain version keys a commit compares (COMMIT_LUA reads them with one HMGET). */
const READS_SENT = 2000;

export async function commit(line: CommitLine, sent: Sent): Promise<CommitAnswer> {
  const { snapshot } = line;
  const { changes } = sent;
  const cache = snapshot.cache;
  const domains = sent.domains ?? null;
  const reads: [string, number][] = [];
  if (cache && domains !== null) {
    const at = Number(cache.version);
    for (const key of readKeys(domains)) reads.push([key, Math.max(at, cache.known.get(key) ?? 0)]);
    // A request of very many scopes is compared whole: the script reads its keys in one call.
    if (reads.length > READS_SENT) reads.length = 0;
  }
  const writes = new Set<string>();
  const put: [string, string][] = [];
  const notify: string[] = [];
  if (changes !== null) {
    for (const record of changes.put) {
      const json = JSON.stringify(record);
      put.push([record.id, json]);
      // Answers and messages send it back as written: found, not parsed again (see wrote).
      // Decisions write only JSON-safe records (no undefined fields, finite numbers), so the
      // object stands for what parsing that JSON gives.
      snapshot.wrote(json, record);
      writeKeys(recordDomain(record), writes);
    }
    for (const id of changes.del) {
      const record = cache?.locks.get(id);
      writeKeys(record === undefined ? STORE_DOMAIN : recordDomain(record), writes);
    }
    // Waiters to wake, then holders to inform (their channels marked '~'): see COMMIT_LUA.
    const wake = changes.wake ?? [];
    for (const waiter of wake) notify.push(line.wakeChannel(waiter));
    for (const holder of changes.inform ?? []) {
      if (!wake.includes(holder)) notify.push(`~${line.wakeChannel(holder)}`);
    }
  }
  const args: CommitArgs = {
    keys: line.keys,
    epoch: cache?.epoch ?? '',
    version: cache?.version ?? '',
    checkTime: sent.checkTime,
    how:
      changes !== null && cache
        ? commitHow(changes, cache.locks, sent.checkTime ? null : snapshot.estimateNow())
        : '',
    now: sent.now,
    validUntil: sent.validUntil,
    fence: changes?.fence ?? cache?.fence ?? 0,
    seenFence: reads.length === 0 ? null : (sent.seenFence ?? null),
    tombstones: changes?.tombstones ? JSON.stringify(changes.tombstones) : '',
    channel: line.channel,
    commitId: changes ? randomTextPooled(6, 'base64url') : '',
    reads,
    writes,
    put,
    del: changes?.del ?? [],
    notify,
    events: changes !== null && changes.events.length > 0 ? JSON.stringify(changes.events) : null,
  };
  const reply = await line.call(() => line.client.agentLockCommit(...commitArgv(args)));
  const [kind, epoch, version, serverNow] = reply as [string, string, string, string];
  if (kind === 'damaged') throw line.damaged(`field ${epoch} cannot be read`);
  snapshot.heard(serverNow);
  if (kind === 'ok') {
    // Compared whole, the commit was made on the snapshot's version and moved no fence.
    const previous = reply[4] ?? cache?.version ?? '';
    const offset = reply[5] === '?' && reads.length > 0 ? Number.NaN : Number(reply[5] ?? 0) || 0;
    // The channel may have carried this commit, and later ones, before its answer came back:
    // then the cache has it already (and maybe what came after): leave it as it is.
    if (changes !== null && cache && Number(cache.version) >= Number(version)) {
      return { kind: 'folded', offset };
    }
    if (cache && Number.isNaN(offset)) {
      // A commit sent again whose first answer was lost: the next decision syncs.
      snapshot.forget();
      return { kind: 'folded', offset };
    }
    if (cache && (previous === cache.version || version === cache.version)) {
      // Nothing else committed between the snapshot and this: the whole cache is current.
      cache.version = version;
      // Mostly empty already: clear() would still allocate a new table.
      if (cache.known.size > 0) cache.known.clear();
    } else if (cache) {
      // Others committed meanwhile, elsewhere: only what this decision read is current.
      const at = Number(version);
      for (const [key] of reads) cache.known.set(key, at);
    }
    return { kind: 'ok', offset };
  }
  if (kind === 'time') return { kind: 'time', offset: 0 };
  // 'sync'; 'merged': our new tickets went in at the server's place in line, and the answer
  // brings the cache up to date with them, deciding again finds them (and maybe a free way);
  // 'rebased': our changes went in on a newer store, the decision stands. A cache that a named
  // message moved past the answer's version meanwhile is newer still: it stays.
  const current = snapshot.cache;
  if (!(current && current.epoch === epoch && Number(current.version) > Number(version)))
    snapshot.applySync(reply, epoch, version);
  return kind === 'rebased' ? { kind: 'rebased', offset: Number.NaN } : { kind: 'again', offset: 0 };
}

/** Do the changes keep to the domains' subtrees (and leave the tombstones, which are the store's)? */
export function inside(
  changes: Changes,
  seen: ReadonlyMap<string, LockRecord>,
  domains: readonly string[],
): boolean {
  if (changes.tombstones !== null) return false;
  for (const record of changes.put) if (!owns(domains, record)) return false;
  for (const id of changes.del) {
    const record = seen.get(id);
    if (record === undefined || !owns(domains, record)) return false;
  }
  return true;
}
