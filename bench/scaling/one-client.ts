// Section (k), part 2: one client, agent-lock @resource acquire+release (ttl 30 s) against a
// contract bound, the least a lock with agent-lock's contract costs: one EVALSHA that writes a
// holder record (JSON of the size of agent-lock's record, a random id and a token hash, made per
// call) under a lease and advances a fence counter, then one compare-and-delete EVALSHA. Beside it
// (d)'s bare bound (SET NX PX + compare-and-delete), for information. The contract bound's code is
// bench/scaling/contract.ts, shared with the workers of part 1, which run it at every N.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { openLocks } from '../../src/index.js';
import type { Verdict } from '../case.js';
import { atLeast, info } from '../case.js';
import type { Settings } from '../settings.js';
import { LEASE_MS, TARGETS } from '../settings.js';
import { averagedMedian, percentile, round } from '../stats.js';
import { agentLockRecord, COMPARE_AND_DELETE, openContract } from './contract.js';

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
    const record = await agentLockRecord(locks, await client(), prefix, '@res', ttl);
    const recordBytes = record.bytes;

    const ours = async () => {
      const got = await locks.acquire('@res', { ttl });
      if (got.status !== 'acquired') throw new Error(`acquire @res: ${got.status}`);
      const gone = await locks.release('@res');
      if (gone.status !== 'released') throw new Error(`release @res: ${gone.status}`);
    };

    const contract = await openContract(await client(), {
      key: 'bench:contract:res',
      fenceKey: 'bench:contract:fence',
      scope: '@res',
      agentId: 'scaling-one',
      leaseMs: LEASE_MS,
      recordBytes,
    });

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
      recordFound: record.found,
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
