// Section (k)'s contract bound: the least a lock with agent-lock's contract costs. One EVALSHA takes
// the lock if free: it advances a fence counter and writes a holder record (JSON of the size of
// agent-lock's record, with a random id and a token hash, made per call) under a lease; one
// compare-and-delete EVALSHA releases it. One client runs it in bench/scaling/one-client.ts, and
// every worker of bench/scaling-worker.ts on a key of its own: both run this code.
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Redis } from 'ioredis';
import type { Locks } from '../../src/index.js';

/** Takes the lock if free: advances the fence and writes the holder record under a lease. */
export const CONTRACT_ACQUIRE = `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence`;
export const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
/** The record size assumed when agent-lock's could not be found (said in the result). */
export const ASSUMED_RECORD_BYTES = 600;

/** The size of agent-lock's record, and whether it was found (else ASSUMED_RECORD_BYTES). */
export interface AgentLockRecord {
  bytes: number;
  found: boolean;
}

/** The JSON of the record agent-lock wrote for `lockId`, wherever the store keeps it (any layout). */
async function recordJsonOf(client: Redis, prefix: string, lockId: string): Promise<string | null> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 100);
    cursor = next;
    for (const key of keys) {
      const type = await client.type(key);
      const values =
        type === 'hash'
          ? Object.values(await client.hgetall(key))
          : type === 'string'
            ? [await client.get(key)]
            : [];
      for (const value of values) {
        if (!value?.includes(lockId)) continue;
        try {
          if ((JSON.parse(value) as { id?: unknown }).id === lockId) return value;
        } catch {
          // not a record
        }
      }
    }
  } while (cursor !== '0');
  return null;
}

/**
 * The size of the record agent-lock writes for `scope` with a lease of `ttl` seconds: `locks` (a
 * Redis store under `prefix`) takes it, `inspector` finds the record, `locks` releases it.
 */
export async function agentLockRecord(
  locks: Locks,
  inspector: Redis,
  prefix: string,
  scope: string,
  ttl: number,
): Promise<AgentLockRecord> {
  const probe = await locks.acquire(scope, { ttl });
  if (probe.status !== 'acquired') throw new Error(`acquire ${scope}: ${probe.status}`);
  const json = await recordJsonOf(inspector, prefix, probe.locks[0]!.id);
  const released = await locks.release(scope);
  if (released.status !== 'released') throw new Error(`release ${scope}: ${released.status}`);
  return json === null
    ? { bytes: ASSUMED_RECORD_BYTES, found: false }
    : { bytes: Buffer.byteLength(json), found: true };
}

export interface ContractLock {
  /** The lock's key and its fence counter's key. */
  key: string;
  fenceKey: string;
  /** What the record says: the scope and the holder's agent id. */
  scope: string;
  agentId: string;
  leaseMs: number;
  /** The record's size in bytes: agent-lock's (AgentLockRecord.bytes). */
  recordBytes: number;
}

/** Loads the two scripts on `client`; the step is one acquire+release of the bound on `lock`. */
export async function openContract(client: Redis, lock: ContractLock): Promise<() => Promise<void>> {
  const acquireSha = (await client.script('LOAD', CONTRACT_ACQUIRE)) as string;
  const cadSha = (await client.script('LOAD', COMPARE_AND_DELETE)) as string;
  const holder = { agent_id: lock.agentId, host: os.hostname(), pid: process.pid };
  // Made per call, as agent-lock makes its record: a random id, a random token and its hash;
  // padded to the size of agent-lock's (every field but the padding has a fixed length).
  const recordOf = (pad: string) => {
    const token = randomBytes(16).toString('hex');
    const now = Date.now();
    return JSON.stringify({
      id: `lk_${randomBytes(8).toString('hex')}`,
      scope: lock.scope,
      ...holder,
      created_at: now,
      expires_at: now + lock.leaseMs,
      token_hash: createHash('sha256').update(token).digest('hex'),
      pad,
    });
  };
  // Worked out once, so that the bound pays one JSON.stringify per call, like agent-lock.
  const pad = 'x'.repeat(Math.max(0, lock.recordBytes - Buffer.byteLength(recordOf(''))));
  return async () => {
    const value = recordOf(pad);
    const fence = (await client.evalsha(
      acquireSha,
      2,
      lock.key,
      lock.fenceKey,
      value,
      lock.leaseMs,
    )) as number;
    if (!(fence > 0)) throw new Error(`contract: acquire answered ${fence}`);
    const deleted = await client.evalsha(cadSha, 1, lock.key, value);
    if (deleted !== 1) throw new Error(`contract: compare-and-delete answered ${deleted}`);
  };
}
