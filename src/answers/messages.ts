/**
 * Each verb's message: the one line an answer's JSON `message` carries, written once here and said
 * the same by `alock --json` and the MCP contract tools. The `lock` tool's one-sentence answers
 * (a lease server's style) are written here too. Nothing here decides anything.
 */
import type { Outcome } from '../core/decide.js';
import type { Lock } from '../core/lock.js';

type Said = Outcome<string>;

export const scopeList = (locks: readonly Lock[]) => locks.map((l) => l.scope).join(' ');
export const holders = (locks: readonly Lock[]) => [...new Set(locks.map((l) => l.agent_id))].join(', ');

function heldBy(outcome: Said, asked: string): string {
  return `${asked} held by ${holders(outcome.conflicts)}: work elsewhere, check again later, or ask with: alock ask ${firstScope(outcome, asked)} "..."`;
}

/** The scope to name in `alock ask`: the first one asked for, as the caller wrote it. */
function firstScope(outcome: Said, asked: string): string {
  return asked.split(' ')[0] || (outcome.conflicts[0]?.scope ?? asked);
}

function otherWorktree(outcome: Said, asked: string): string {
  const where = [...new Set(outcome.conflicts.map((l) => `${l.worktree} (${l.branch ?? 'detached HEAD'})`))];
  return `other_worktree: ${asked} overlaps locks of ${holders(outcome.conflicts)} in ${where.join(', ')} (AGENT_LOCK_WORKTREES=block); work elsewhere or wait until they merge`;
}

/** `waited`: the seconds a wait lasted before it timed out. */
export function timeoutMessage(outcome: Said, asked: string, waited: number): string {
  return `timeout: ${asked} held by ${holders(outcome.conflicts)} after ${waited}s: work elsewhere, wait longer, or ask with: alock ask ${firstScope(outcome, asked)} "..."`;
}

/** A refusal shared by every verb that claims: acquire, run and check. */
export function claimRefusal(outcome: Said, asked: string): string | undefined {
  switch (outcome.status) {
    case 'held':
      return heldBy(outcome, asked);
    case 'other_worktree':
      return otherWorktree(outcome, asked);
    case 'parent_scope':
      return `parent_scope: ${outcome.conflicts[0]?.agent_id ?? 'your parent'} holds exactly ${asked}; claim something narrower inside it`;
    case 'interrupted':
      return `interrupted work on ${asked}: its holder is gone (or its lease ran out) and left notes; resume it, or break it to discard it`;
    default:
      return undefined;
  }
}

/** `asked`: the scopes as the caller named them. `waited`: a timed-out wait's seconds. */
export function acquireMessage(outcome: Said, asked: string, waited = 0): string {
  if (outcome.status === 'acquired')
    return `acquired ${scopeList(outcome.locks)}: note progress as you go, release when done`;
  if (outcome.status === 'already_mine') return `already yours: covered by ${scopeList(outcome.locks)}`;
  if (outcome.status === 'timeout') return timeoutMessage(outcome, asked, waited);
  return claimRefusal(outcome, asked) ?? `${outcome.status}: ${asked}`;
}

export function releaseMessage(outcome: Said, asked: string): string {
  if (outcome.status === 'released')
    return `released ${outcome.locks.length === 0 ? '(you held nothing)' : scopeList(outcome.locks)}`;
  if (outcome.status === 'refused')
    return `refused: ${asked} is held by ${holders(outcome.conflicts)}, not you`;
  return `not locked: ${asked}`;
}

export function renewMessage(outcome: Said, asked: string): string {
  switch (outcome.status) {
    case 'renewed':
      return `renewed ${outcome.locks
        .map((l) => (l.ttl_seconds ? `${l.scope} for ${l.ttl_seconds}s` : `${l.scope} (no TTL)`))
        .join(', ')}`;
    case 'expired':
      return `expired: ${asked}; acquire it again (you get a new fence)`;
    case 'refused':
      return `refused: ${asked} is held by someone else`;
    default:
      return `not locked: you hold no lock on exactly ${asked}`;
  }
}

export function checkMessage(outcome: Said, asked: string): string {
  if (outcome.status === 'free') return `free: ${asked}`;
  if (outcome.status === 'mine') return `yours: ${asked} (covered by ${scopeList(outcome.locks)})`;
  return claimRefusal(outcome, asked) ?? `${outcome.status}: ${asked}`;
}

/** `of`: whose locks (mine), or undefined for every lock in the store (list). */
export function listMessage(outcome: Said, of?: string): string {
  return `${outcome.locks.length} locks${of === undefined ? '' : ` of ${of}`}`;
}

export function noteMessage(outcome: Said, asked: string): string {
  if (outcome.status === 'noted') return `noted ${asked} (${outcome.locks[0]?.notes.length ?? 0} notes)`;
  if (outcome.status === 'refused') return `refused: ${asked} is held by someone else`;
  return `not locked: you hold no lock on exactly ${asked}; acquire it first`;
}

export function resumeMessage(outcome: Said, asked: string): string {
  if (outcome.status === 'resumed')
    return `resumed ${outcome.locks[0]?.scope ?? asked} from ${outcome.conflicts[0]?.agent_id ?? '?'}: read its notes`;
  if (outcome.status === 'held') return heldBy(outcome, asked);
  return `no interrupted work on exactly ${asked}`;
}

export function askMessage(outcome: Said, asked: string): string {
  if (outcome.status === 'asked')
    return `asked ${holders(outcome.locks)} about ${asked}: told on their next tool call; their answer reaches you on yours`;
  if (outcome.status === 'mine') return `yours: ${asked} is held by you only; nobody else to ask`;
  return `free: nobody holds ${asked}; nobody to ask`;
}

export function replyMessage(outcome: Said, to: string): string {
  if (outcome.status === 'replied') return `replied to ${to}: told on their next tool call`;
  return `no request of ${to} is on your locks: nothing to reply to`;
}

export function breakMessage(outcome: Said, asked: string): string {
  return outcome.status === 'broken'
    ? `broken ${scopeList(outcome.locks)} (was held by ${holders(outcome.locks)}; recorded)`
    : `not locked: ${asked}`;
}

/** The `lock` tool's answers: one short sentence naming the key. */
export const lease = {
  notHeld: 'not held (or owned by someone else)',

  /** How long a lease has left, or `no TTL`. */
  left(lock: Lock | undefined, now: number): string {
    if (lock?.expires_at == null) return 'no TTL';
    return `${Math.max(0, Math.ceil((Date.parse(lock.expires_at) - now) / 1000))}s left`;
  },

  /** Who holds it, their intent, and for how long. */
  whoHolds(conflicts: readonly Lock[], now: number): string {
    const first = conflicts[0];
    if (first === undefined) return 'someone else';
    const intent = first.intent ? `, "${first.intent}"` : '';
    const more = conflicts.length > 1 ? ` and ${conflicts.length - 1} more` : '';
    return `${first.agent_id}${intent}, ${lease.left(first, now)}${more}`;
  },

  acquire(outcome: Said, key: string, now: number): string {
    const lock = outcome.locks[0];
    if (outcome.status === 'acquired') return `acquired ${key} (fence ${lock?.fence}, token ${lock?.token})`;
    if (outcome.status === 'already_mine')
      return `acquired ${key} (already held by me: fence ${lock?.fence}, ${lease.left(lock, now)})`;
    // The sentence names why, as `acquire` does: a sub-agent's own parent is not "someone else".
    if (outcome.status === 'parent_scope')
      return `${key} held by your parent agent ${outcome.conflicts[0]?.agent_id ?? ''}`.trimEnd();
    if (outcome.status === 'interrupted')
      return `interrupted work on ${key}: take it over with the resume tool, or discard it with break`;
    return `${key} held by ${lease.whoHolds(outcome.conflicts, now)}`;
  },

  release(outcome: Said): string {
    return outcome.status === 'released' ? 'released' : lease.notHeld;
  },

  renew(outcome: Said, key: string, ttl: number): string {
    if (outcome.status === 'renewed') return `renewed ${key} for ${ttl}s`;
    // An expired lease is never revived: the holder must take it again, with a new fence.
    if (outcome.status === 'expired')
      return `${lease.notHeld}: the lease on ${key} expired, acquire it again`;
    return lease.notHeld;
  },

  /** `parent`: the caller's parent and its lock on exactly this key, which acquire would refuse. */
  status(outcome: Said, key: string, now: number, parent: { id: string; lock: Lock } | null): string {
    if (outcome.status === 'held')
      return `${key} held by another holder (${lease.whoHolds(outcome.conflicts, now)})`;
    if (outcome.status === 'free' && parent !== null)
      return `${key} held by your parent agent ${parent.id} (${lease.left(parent.lock, now)})`;
    if (outcome.status === 'free') return `${key} is free`;
    return `${key} held by me (${lease.left(outcome.locks[0], now)})`;
  },

  pathKey(file: string): string {
    return `error E_USAGE: key ${file} is a path in the tree; the lock tool locks named resources (use the acquire tool to claim ${file}, or key @${file} for a resource of that name)`;
  },

  error(code: string, message: string): string {
    return `error ${code}: ${message}`;
  },
};
