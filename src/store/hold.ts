/**
 * `hold` and `withLock`: an acquire that hands back a lease renewing itself (lease.ts), and the
 * same around a piece of work, released however the work ends.
 */
import type { AcquireStatus, LeaseRef, Outcome } from '../core/decide.js';
import type { Lock } from '../core/lock.js';
import { instant, type Lease, type LeaseLostError, type LeaseStore, startLease } from './lease.js';
import type { AcquireOptions } from './session.js';

export interface HoldOptions extends AcquireOptions {
  /** Called once when the lease is lost, with the reason its signal aborts with. */
  onLost?: (error: LeaseLostError) => void;
}

/** `hold` hands back a lease when granted; any other answer is the acquire outcome, without one. */
export type HoldResult =
  | (Outcome<'acquired' | 'already_mine'> & { readonly lease: Lease })
  | (Outcome<Exclude<AcquireStatus, 'acquired' | 'already_mine'>> & { readonly lease?: undefined });

export type WithLockResult<T> =
  | (Outcome<'acquired' | 'already_mine'> & { readonly value: T })
  | (Outcome<Exclude<AcquireStatus, 'acquired' | 'already_mine'>> & { readonly value?: undefined });

/** The lease `hold` takes without a TTL given or configured. */
const HOLD_TTL_SECONDS = 30;

export interface Holding {
  acquire(scopes: string | readonly string[], options: AcquireOptions): Promise<Outcome<AcquireStatus>>;
  leaseStore: LeaseStore;
  refsOf(locks: readonly Lock[]): LeaseRef[];
  defaultTtlSeconds: number | null;
}

export async function hold(
  via: Holding,
  scopes: string | readonly string[],
  opts: HoldOptions,
): Promise<HoldResult> {
  const ttl = opts.ttl ?? via.defaultTtlSeconds ?? HOLD_TTL_SECONDS;
  const since = instant();
  // Times are taken before each attempt, so the lease's deadline never trails the store's.
  let granted = since;
  const outcome = await via.acquire(scopes, {
    ...opts,
    ttl,
    onWait: (conflicts) => {
      granted = instant();
      opts.onWait?.(conflicts);
    },
  });
  if (outcome.status !== 'acquired' && outcome.status !== 'already_mine') {
    return outcome as HoldResult;
  }
  const owned = outcome.status === 'acquired';
  const lease = await startLease(via.leaseStore, {
    locks: outcome.locks,
    refs: via.refsOf(outcome.locks),
    ttl: owned ? ttl : (outcome.locks[0]?.ttl_seconds ?? null),
    owned,
    since: granted,
    ...(opts.onLost ? { onLost: opts.onLost } : {}),
  });
  const { warnings } = outcome;
  return {
    status: outcome.status,
    locks: outcome.locks,
    conflicts: outcome.conflicts,
    lease,
    ...(warnings ? { warnings } : {}),
  };
}

export async function withLock<T>(
  via: Holding,
  scopes: string | readonly string[],
  opts: HoldOptions,
  work: (signal: AbortSignal, lease: Lease) => Promise<T>,
): Promise<WithLockResult<T>> {
  const held = await hold(via, scopes, opts);
  if (held.lease === undefined) return held;
  const { lease } = held;
  let value: T;
  try {
    value = await work(lease.signal, lease);
  } catch (error) {
    await lease.release().catch(() => {});
    throw error;
  }
  await lease.release();
  const { warnings } = held;
  return {
    status: held.status,
    locks: held.locks,
    conflicts: held.conflicts,
    value,
    ...(warnings ? { warnings } : {}),
  };
}
