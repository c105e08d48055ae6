// Section (k), part 2: one client, agent-lock @resource acquire+release (ttl 30 s) against a
// contract bound, the least a lock with agent-lock's contract costs: one EVALSHA that writes a
// holder record (JSON of the size of agent-lock's record, a random id and a token hash, made per
// call) under a lease and advances a fence counter, then one compare-and-delete EVALSHA. Beside it
// (d)'s bare bound (SET NX PX + compare-and-delete), for information.
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { openLocks } from '../../src/index.js';
import type { Verdict } from '../case.js';
import { atLeast, info } from '../case.js';
import type { Settings } from '../settings.js';
import { LEASE_MS, TARGETS } from '../settings.js';
import { averagedMedian, percentile, round } from '../stats.js';

/** Takes the lock if free: advances the fence and writes the holder record under a lease. */
const CONTRACT_ACQUIRE = `if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local fence = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence`;
const COMPARE_AND_DELETE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
/** The record size assumed when agent-lock's could not be found (said in the result). */
const ASSUMED_RECORD_BYTES = 600;

export interface OneClientRow {
  key: string;
  name: string;
  ops: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
}

export interface OneClient {
  ran: true;
  rounds: number;
  recordBytes: number;
  recordFound: boolean;
  rows: OneClientRow[];
  verdicts: Verdict[];
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

export async function oneClient(
  redisUrl: string,
  where: { tree: string; store: string },
  prefix: string,
  env: NodeJS.ProcessEnv,
  settings: Settings,
): Promise<OneClient> {
  const locks = await openLocks({
    backend: 'redis',
    redisUrl,
    dir: where.tree,
    storeDir: where.store,
    identity: { agentId: 'scaling-one' },
    env: { ...env, AGENT_LOCK_REDIS_PREFIX: prefix },
  });
  const clients: Redis[] = [];
  const client = async () => {
    const c = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await c.connect();
    clients.push(c);
    return c;
  };
  try {
    const ttl = LEASE_MS / 1000;
    const probe = await locks.acquire('@res', { ttl });
    if (probe.status !== 'acquired') throw new Error(`acquire @res: ${probe.status}`);
    const inspector = await client();
    const json = await recordJsonOf(inspector, prefix, probe.locks[0]!.id);
    await locks.release('@res');
    const recordBytes = json === null ? ASSUMED_RECORD_BYTES : Buffer.byteLength(json);

    const ours = async () => {
      const got = await locks.acquire('@res', { ttl });
      if (got.status !== 'acquired') throw new Error(`acquire @res: ${got.status}`);
      const gone = await locks.release('@res');
      if (gone.status !== 'released') throw new Error(`release @res: ${gone.status}`);
    };

    const contractClient = await client();
    const acquireSha = (await contractClient.script('LOAD', CONTRACT_ACQUIRE)) as string;
    const cadSha = (await contractClient.script('LOAD', COMPARE_AND_DELETE)) as string;
    const holder = { agent_id: 'scaling-one', host: os.hostname(), pid: process.pid };
    // Made per call, as agent-lock makes its record: a random id, a random token and its hash;
    // padded to the size of agent-lock's (every field but the padding has a fixed length).
    const recordOf = (pad: string) => {
      const token = randomBytes(16).toString('hex');
      const now = Date.now();
      return JSON.stringify({
        id: `lk_${randomBytes(8).toString('hex')}`,
        scope: '@res',
        ...holder,
        created_at: now,
        expires_at: now + LEASE_MS,
        token_hash: createHash('sha256').update(token).digest('hex'),
        pad,
      });
    };
    // Worked out once, so that the bound pays one JSON.stringify per call, like agent-lock.
    const pad = 'x'.repeat(Math.max(0, recordBytes - Buffer.byteLength(recordOf(''))));
    const contract = async () => {
      const value = recordOf(pad);
      const fence = (await contractClient.evalsha(
        acquireSha,
        2,
        'bench:contract:res',
        'bench:contract:fence',
        value,
        LEASE_MS,
      )) as number;
      if (!(fence > 0)) throw new Error(`contract: acquire answered ${fence}`);
      const deleted = await contractClient.evalsha(cadSha, 1, 'bench:contract:res', value);
      if (deleted !== 1) throw new Error(`contract: compare-and-delete answered ${deleted}`);
    };

    const boundClient = await client();
    const boundCad = (await boundClient.script('LOAD', COMPARE_AND_DELETE)) as string;
    const bound = async () => {
      const token = randomBytes(16).toString('hex');
      const set = await boundClient.set('bench:bound:res', token, 'PX', LEASE_MS, 'NX');
      if (set !== 'OK') throw new Error(`bound: SET NX answered ${set}`);
      const deleted = await boundClient.evalsha(boundCad, 1, 'bench:bound:res', token);
      if (deleted !== 1) throw new Error(`bound: compare-and-delete answered ${deleted}`);
    };

    const contenders = [
      { key: 'agentLock', name: `agent-lock acquire+release @res (ttl ${ttl} s)`, step: ours },
      {
        key: 'contract',
        name: `contract bound: record (${recordBytes} B) + fence EVALSHA, CAD EVALSHA`,
        step: contract,
      },
      { key: 'bound', name: 'bare bound: SET NX PX + EVALSHA compare-and-delete', step: bound },
    ].map((c) => ({ ...c, rates: [] as number[], samples: [] as number[], ops: 0 }));
    const rounds = Math.max(3, settings.scalingRounds * 2);
    for (const c of contenders) {
      const until = performance.now() + settings.scalingWarmupMs;
      while (performance.now() < until) await c.step();
    }
    for (let r = 0; r < rounds; r++) {
      for (let j = 0; j < contenders.length; j++) {
        const c = contenders[(r + j) % contenders.length]!;
        const start = performance.now();
        const deadline = start + (settings.scalingOneClientSeconds * 1000) / rounds;
        let t = start;
        let ops = 0;
        while (t < deadline) {
          await c.step();
          const now = performance.now();
          c.samples.push(now - t);
          t = now;
          ops += 1;
        }
        c.rates.push((ops / (t - start)) * 1000);
        c.ops += ops;
      }
    }
    const rows: OneClientRow[] = contenders.map((c) => ({
      key: c.key,
      name: c.name,
      ops: c.ops,
      opsPerSec: Math.round(averagedMedian(c.rates)),
      p50Ms: round(percentile(c.samples, 50), 3),
      p99Ms: round(percentile(c.samples, 99), 3),
    }));
    const rate = (key: string) => rows.find((r) => r.key === key)!.opsPerSec;
    return {
      ran: true,
      rounds,
      recordBytes,
      recordFound: json !== null,
      rows,
      verdicts: [
        atLeast(
          'agent-lock / contract bound',
          round(rate('agentLock') / rate('contract')),
          TARGETS.scaling.oneClientVsContractMin,
        ),
        info('agent-lock / bare bound', round(rate('agentLock') / rate('bound'))),
      ],
    };
  } finally {
    await locks.close();
    for (const c of clients) c.disconnect();
  }
}
