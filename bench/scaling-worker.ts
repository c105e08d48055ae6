// One worker process of bench section (k) (bench/cases/k-scaling.ts): forked up to eight times, it
// opens a handle per contender the parent asks for and, on the parent's word, loops acquire+release
// of a lock no other worker wants, timing each pair. What the parent says and what it answers are in
// bench/scaling/protocol.ts. The worker exits when its IPC channel closes, so a dying parent leaves
// none behind.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import type * as IORedis from 'ioredis';
import type * as RedisSemaphore from 'redis-semaphore';
import { type Lease, type Locks, openLocks } from '../src/index.js';
import { openContract } from './scaling/contract.js';
import {
  type Command,
  type ContenderKey,
  type Reply,
  type ScalingConfig,
  workerAgentId,
  workerResource,
} from './scaling/protocol.js';

const config = JSON.parse(process.env.BENCH_SCALING_CONFIG ?? '{}') as ScalingConfig;
const { index, redisUrl, tree, stores, prefixes, leaseMs } = config;
const ttl = leaseMs / 1000;

process.on('disconnect', () => process.exit(0));

const send = (reply: Reply, callback?: () => void) =>
  callback ? process.send!(reply, callback) : process.send!(reply);

// The library loads ioredis from node_modules (CommonJS, not bundled): this is the same class.
const require = createRequire(import.meta.url);
const { Redis } = require('ioredis') as typeof IORedis;

// Deliveries, counted where they land. The installed redis-server (7.0) has no INFO field that
// counts messages delivered to subscribers (INFO commandstats counts PUBLISH calls, not receivers),
// so every pub/sub message any connection of this process receives is counted here, whatever
// channel or connection the store uses for it. ioredis emits the *Buffer events for every message
// (the string events only when something listens to them), once per message each.
let messages = 0;
const emit = Redis.prototype.emit;
Redis.prototype.emit = function countMessages(
  this: IORedis.Redis,
  event: string | symbol,
  ...args: unknown[]
) {
  if (event === 'messageBuffer' || event === 'pmessageBuffer' || event === 'smessageBuffer') messages += 1;
  return emit.call(this, event, ...args);
};

const expect = (outcome: { status: string }, status: string, what: string) => {
  if (outcome.status !== status) throw new Error(`${what}: ${status} expected, got ${outcome.status}`);
};

const openAgentLock = (backend: 'redis' | 'file', storeDir: string, prefix: string, agentId: string) =>
  openLocks({
    backend,
    ...(backend === 'redis' ? { redisUrl: redisUrl! } : {}),
    dir: tree,
    storeDir,
    identity: { agentId },
    env: { ...config.env, ...(prefix ? { AGENT_LOCK_REDIS_PREFIX: prefix } : {}) },
  });

interface Handle {
  step(): Promise<void>;
  close(): Promise<void>;
}

const AGENT_LOCK_CONTENDERS: Record<
  Exclude<ContenderKey, 'semaphore' | 'contract'>,
  ['redis' | 'file', 'resource' | 'path']
> = {
  redisResource: ['redis', 'resource'],
  fileResource: ['file', 'resource'],
  redisPath: ['redis', 'path'],
  filePath: ['file', 'path'],
};

/** The contender's step: one acquire+release of this worker's own lock. Opened once, kept. */
async function openContender(contender: ContenderKey): Promise<Handle> {
  const agentId = workerAgentId(index);
  if (contender === 'contract') {
    if (config.contractRecordBytes === null) throw new Error('contract: no record size (no Redis)');
    const client = new Redis(redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    // The same code as one-client.ts's contract bound, on a key and fence of this worker's own.
    const step = await openContract(client, {
      key: `bench:contract:${index}`,
      fenceKey: `bench:contract:${index}:fence`,
      scope: workerResource(index),
      agentId,
      leaseMs,
      recordBytes: config.contractRecordBytes,
    });
    return { step, close: async () => client.disconnect() };
  }
  if (contender === 'semaphore') {
    const { Mutex } = require('redis-semaphore') as typeof RedisSemaphore;
    const client = new Redis(redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    const key = `bench:scaling:semaphore:w${index}`;
    // As in (d): a lease of LEASE_MS, no waiting (the lock is always free).
    const options = { lockTimeout: leaseMs, acquireTimeout: 1000, retryInterval: 10 };
    return {
      async step() {
        const mutex = new Mutex(client, key, options);
        await mutex.acquire();
        await mutex.release();
      },
      close: async () => client.disconnect(),
    };
  }
  const found = AGENT_LOCK_CONTENDERS[contender];
  if (found === undefined) throw new Error(`unknown contender ${contender}`);
  const [backend, what] = found;
  const locks = await openAgentLock(backend, stores[contender], prefixes[contender], agentId);
  const scope = what === 'resource' ? workerResource(index) : `src/w${index}.ts`;
  return {
    async step() {
      expect(await locks.acquire(scope, { ttl }), 'acquired', `acquire ${scope}`);
      expect(await locks.release(scope), 'released', `release ${scope}`);
    },
    close: () => locks.close(),
  };
}

const handles = new Map<ContenderKey, Handle>();
let goSeconds: number | null = null;
let onGo: ((seconds: number) => void) | null = null;
let messagesLocks: Locks | null = null;
let leases: Lease[] = [];

async function closeAll() {
  for (const handle of handles.values()) await handle.close();
  handles.clear();
}

async function warm(contender: ContenderKey, ms: number) {
  let current = handles.get(contender);
  if (current === undefined) {
    current = await openContender(contender);
    handles.set(contender, current);
  }
  const until = performance.now() + ms;
  while (performance.now() < until) await current.step();
  send({ type: 'warm', index });
  const seconds =
    goSeconds ??
    (await new Promise<number>((resolve) => {
      onGo = resolve;
    }));
  goSeconds = null;
  onGo = null;
  const samples: number[] = [];
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let t = start;
  while (t < deadline) {
    await current.step();
    const now = performance.now();
    samples.push(now - t);
    t = now;
  }
  const cpu = process.cpuUsage(cpuStart);
  send({ type: 'result', index, ops: samples.length, ms: t - start, samples, cpuUs: cpu.user + cpu.system });
}

async function hold(count: number) {
  await closeAll();
  messagesLocks = await openAgentLock('redis', stores.messages, prefixes.messages, `messages-${index}`);
  for (let k = 0; k < count; k++) {
    const held = await messagesLocks.hold(`@w${index}-lease${k}`, { ttl });
    expect(held, 'acquired', `hold @w${index}-lease${k}`);
    leases.push(held.lease!);
  }
  send({ type: 'held', index });
}

async function churn(seconds: number) {
  const locks = messagesLocks!;
  let pairs = 0;
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline) {
    const scope = `@w${index}-churn${pairs % 4}`;
    expect(await locks.acquire(scope), 'acquired', `acquire ${scope}`);
    expect(await locks.release(scope), 'released', `release ${scope}`);
    pairs += 1;
  }
  send({ type: 'churned', index, pairs });
}

async function shutdown() {
  for (const lease of leases) await lease.release();
  leases = [];
  await messagesLocks?.close();
  await closeAll();
  send({ type: 'closed', index }, () => process.disconnect());
}

const fail = (error: unknown) => {
  const message = String((error as Error | undefined)?.stack ?? error);
  process.send?.({ type: 'error', index, message } satisfies Reply, () => process.exit(1));
  setTimeout(() => process.exit(1), 1000).unref();
};

process.on('message', (message: Command) => {
  if (message.type === 'go') {
    if (onGo) onGo(message.seconds);
    else goSeconds = message.seconds;
  } else if (message.type === 'warm') warm(message.contender, message.ms).catch(fail);
  else if (message.type === 'hold') hold(message.leases).catch(fail);
  else if (message.type === 'churn') churn(message.seconds).catch(fail);
  else if (message.type === 'count') {
    send({ type: 'counted', index, messages });
    messages = 0;
  } else if (message.type === 'close') shutdown().catch(fail);
});
send({ type: 'started', index });
