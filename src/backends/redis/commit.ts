/**
 * What the Redis store sends COMMIT_LUA (commit-script.ts), as a typed object, and the positional
 * arguments the script reads, built in one place.
 */
import type { Changes } from '../../core/decide.js';
import type { LockRecord } from '../../core/lock.js';

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

/** The script's KEYS then ARGV, for ioredis's defined command (numberOfKeys 4). */
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
