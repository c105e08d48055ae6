// One contender process of bench section (f): forked four times by bench/cases/f-handoff.ts, each
// with its own store handle or Redis connection, looping acquire (waiting) -> brief busy hold ->
// release on one resource until the parent says stop. Per grant it records, on
// process.hrtime.bigint() (the monotonic clock, comparable across processes on Linux):
//   order   agent-lock: the grant's fence (grant order in the store); libraries: null (the parent
//           orders their grants by granted time)
//   granted when acquire resolved
//   relStart / relEnd  just before release was called / when it resolved
//   attempts  store decisions the acquire took (agent-lock: 1 + refused attempts; redlock: its
//             attempts; redis-semaphore: not exposed, null)
//   trace   agent-lock only: wake-ups (store notifications) during the acquire, the last one's time,
//           and how long its watchWaiter() set-up took (0 when it was granted at once);
//           the commits (Redis: round trips of the commit script; file: log appends) of the acquire
//           and of the release, and on the file store the time spent waiting for its mutex
// Records go to the parent in batches over IPC (advanced serialization, so bigints pass), outside
// the timed section. The worker exits when its IPC channel closes, so a dying parent leaves none.
import { createRequire } from 'node:module';
import { PerformanceObserver } from 'node:perf_hooks';
import type { Redis as RedisClient } from 'ioredis';
import type { GrantRecord, GrantTrace, HandoffConfig, WorkerMessage } from './handoff-stats.js';

// Each worker loads only what its contender needs: a file-store worker that also loaded the Redis
// libraries would pay for their start-up work (below) inside its measured hand-offs. ioredis is
// CommonJS: it is required, as the agent-lock library does, because an ESM import of it makes
// Node lex its source and then compile that lexer on a background thread during the first rounds.

const config = JSON.parse(process.env.BENCH_HANDOFF_CONFIG ?? '{}') as HandoffConfig & { index: number };
const { contender, resource, holdUs, leaseMs, index } = config;
const BATCH = 20;

process.on('disconnect', () => process.exit(0));

const send = (message: WorkerMessage, callback?: () => void) =>
  callback ? process.send!(message, callback) : process.send!(message);

// Garbage-collection pauses of this process, on the records' clock (performance.now() and hrtime are
// both monotonic, so one offset converts): a pause inside a hand-off delays it, whoever contends,
// and the parent says how many hand-offs overlap one.
const gcPauses: [bigint, number][] = [];
const hrAtStart = process.hrtime.bigint();
const nowAtStart = performance.now();
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    gcPauses.push([hrAtStart + BigInt(Math.round((entry.startTime - nowAtStart) * 1e6)), entry.duration]);
  }
}).observe({ entryTypes: ['gc'] });

interface Granted {
  granted: bigint;
  order: number | null;
  attempts: number | null;
  trace?: GrantTrace;
}

interface Steps {
  /** null: stopped while waiting for its turn (the floor only). */
  acquire(): Promise<Granted | null>;
  release(): Promise<unknown>;
  stop?: () => void;
  close(): Promise<void>;
}

let stopping = false;
let go: () => void = () => {};
const started = new Promise<void>((resolve) => {
  go = resolve;
});
let steps: Steps | null = null;
process.on('message', (message: { type?: string } | null) => {
  if (message?.type === 'go') go();
  if (message?.type === 'stop') {
    stopping = true;
    go();
    steps?.stop?.();
  }
});

const fail = (error: unknown) => {
  const message = String((error as Error | undefined)?.stack ?? error);
  send({ type: 'error', index, message }, () => process.exit(1));
  setTimeout(() => process.exit(1), 1000).unref();
};

/** Busy work inside the critical section (no event-loop turn, so it cannot hide a wake-up). */
function hold() {
  if (holdUs <= 0) return;
  const until = process.hrtime.bigint() + BigInt(holdUs) * 1000n;
  while (process.hrtime.bigint() < until) {
    // spin
  }
}

/** The store internals the instrumentation wraps (not part of the library's interface). */
interface Instrumentable {
  watchWaiter(waiter: string, listener: (touched: unknown) => void): Promise<() => Promise<void>>;
  commit?: (...args: unknown[]) => Promise<unknown>;
  mutex?: { lock(): Promise<unknown> };
}

async function contenderSteps(): Promise<Steps> {
  if (contender === 'agentLockRedis' || contender === 'agentLockFile') {
    const { openLocks } = await import('../src/index.js');
    const locks = await openLocks({
      backend: contender === 'agentLockRedis' ? 'redis' : 'file',
      ...(contender === 'agentLockRedis' ? { redisUrl: config.redisUrl! } : {}),
      dir: config.dir!,
      storeDir: config.storeDir!,
      identity: { agentId: `handoff-${index}` },
      env: config.env!,
    });
    const ttl = leaseMs / 1000;
    // The store keeps its backend under a registered symbol (src/store/store.ts backendOf).
    const store = (locks.store as unknown as Record<symbol, Instrumentable>)[
      Symbol.for('agent-lock.backend')
    ] as Instrumentable;
    // Instrumentation only: count the store's wake-ups (notifications that name this waiter) a
    // waiting acquire gets, the time its watchWaiter() set-up took, and when the last one came.
    let wakes = 0;
    let lastWake: bigint | null = null;
    let subscribeNs = 0n;
    const watchWaiter = store.watchWaiter.bind(store);
    store.watchWaiter = async (waiter, listener) => {
      const t0 = process.hrtime.bigint();
      const stop = await watchWaiter(waiter, (touched) => {
        wakes += 1;
        lastWake = process.hrtime.bigint();
        listener(touched);
      });
      subscribeNs += process.hrtime.bigint() - t0;
      return stop;
    };
    // Redis round trips: every decision commits through RedisStore.commit (one EVALSHA each).
    let trips = 0;
    if (typeof store.commit === 'function') {
      const commit = store.commit.bind(store);
      store.commit = (...args) => {
        trips += 1;
        return commit(...args);
      };
    }
    // File store: time spent waiting for the store's internal mutex (it backs off 0.2 ms doubling
    // to 1 ms while another process holds it).
    let mutexNs = 0n;
    const mutex = store.mutex;
    if (mutex && typeof mutex.lock === 'function') {
      const lock = mutex.lock.bind(mutex);
      mutex.lock = async () => {
        const t0 = process.hrtime.bigint();
        try {
          return await lock();
        } finally {
          mutexNs += process.hrtime.bigint() - t0;
        }
      };
    }
    return {
      async acquire() {
        let attempts = 1;
        trips = 0;
        mutexNs = 0n;
        wakes = 0;
        lastWake = null;
        subscribeNs = 0n;
        const outcome = await locks.acquire(resource, {
          wait: 120,
          ttl,
          onWait: () => {
            attempts += 1;
          },
        });
        const granted = process.hrtime.bigint();
        if (outcome.status !== 'acquired') throw new Error(`acquire answered ${outcome.status}`);
        return {
          granted,
          order: outcome.locks[0]!.fence,
          attempts,
          trace: {
            wakes,
            lastWake,
            subscribeMs: Number(subscribeNs) / 1e6,
            acquireTrips: trips,
            acquireMutexMs: Number(mutexNs) / 1e6,
          },
        };
      },
      async release() {
        trips = 0;
        mutexNs = 0n;
        const outcome = await locks.release(resource);
        if (outcome.status !== 'released') throw new Error(`release answered ${outcome.status}`);
        return { releaseTrips: trips, releaseMutexMs: Number(mutexNs) / 1e6 };
      },
      close: () => locks.close(),
    };
  }
  const require = createRequire(import.meta.url);
  const { Redis } = require('ioredis') as typeof import('ioredis');
  const client: RedisClient = new Redis(config.redisUrl!, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  if (contender === 'semaphore') {
    // CommonJS too (redlock's ESM build imports a CommonJS module): required, like ioredis.
    const { Mutex } = require('redis-semaphore') as typeof import('redis-semaphore');
    const options = { lockTimeout: leaseMs, ...config.semaphoreOptions };
    let mutex: InstanceType<typeof Mutex> | null = null;
    return {
      async acquire() {
        mutex = new Mutex(client, resource, options);
        await mutex.acquire();
        return { granted: process.hrtime.bigint(), order: null, attempts: null };
      },
      release: () => mutex!.release(),
      close: async () => client.disconnect(),
    };
  }
  if (contender === 'floor') {
    // The machine's floor for a fair hand-off between processes, not a lock anyone should use:
    // the workers pass the lock round in a fixed ring. A release deletes the key (if still ours)
    // and publishes to the next worker in the same script; that worker, told, takes the key with
    // SET NX PX. Nothing decides, queues or waits on a timer: one round trip to release, one
    // message, one round trip to take.
    const token = `floor-${index}-${process.pid}`;
    client.defineCommand('floorRelease', {
      numberOfKeys: 1,
      lua: "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end return redis.call('PUBLISH', ARGV[2], '1')",
    });
    const floorRelease = (
      client as unknown as { floorRelease(key: string, token: string, channel: string): Promise<number> }
    ).floorRelease.bind(client);
    const subscriber = client.duplicate();
    let told = index === 0 ? 1 : 0;
    let notify: (() => void) | null = null;
    subscriber.on('message', () => {
      told += 1;
      notify?.();
    });
    await subscriber.subscribe(`${resource}:turn:${index}`);
    return {
      async acquire() {
        while (told === 0 && !stopping) await new Promise<void>((resolve) => (notify = resolve));
        notify = null;
        if (told === 0) return null;
        told -= 1;
        const taken = await client.set(resource, token, 'PX', leaseMs, 'NX');
        if (taken !== 'OK') throw new Error('floor: the key was not free on my turn');
        return { granted: process.hrtime.bigint(), order: null, attempts: 1 };
      },
      release: () => floorRelease(resource, token, `${resource}:turn:${(index + 1) % config.workers}`),
      // Stopping: a worker waiting for its turn gives up at once.
      stop: () => notify?.(),
      close: async () => {
        subscriber.disconnect();
        client.disconnect();
      },
    };
  }
  if (contender === 'redlock') {
    const { default: Redlock } = require('redlock') as typeof import('redlock');
    const redlock = new Redlock([client], config.redlockSettings);
    // Redlock reports every refused attempt as an 'error' event; they are expected here.
    redlock.on('error', () => {});
    let lock: Awaited<ReturnType<typeof redlock.acquire>> | null = null;
    return {
      async acquire() {
        lock = await redlock.acquire([resource], leaseMs);
        return { granted: process.hrtime.bigint(), order: null, attempts: lock.attempts.length };
      },
      release: () => lock!.release(),
      close: async () => client.disconnect(),
    };
  }
  throw new Error(`unknown contender ${contender}`);
}

try {
  steps = await contenderSteps();
  send({ type: 'ready', index });
  await started;
  const cpuAtGo = process.cpuUsage();
  let grants = 0;
  let batch: GrantRecord[] = [];
  const flush = () => {
    if (batch.length === 0) return;
    send({ type: 'records', index, records: batch });
    batch = [];
  };
  while (!stopping) {
    const got = await steps.acquire();
    // Only the floor answers null: stopped while waiting for its turn.
    if (got === null) break;
    const { granted, order, attempts, trace = null } = got;
    hold();
    const relStart = process.hrtime.bigint();
    const released = await steps.release();
    const relEnd = process.hrtime.bigint();
    if (trace && released) Object.assign(trace, released);
    batch.push({ order, granted, relStart, relEnd, attempts, trace });
    grants += 1;
    if (batch.length >= BATCH) flush();
  }
  const cpu = process.cpuUsage(cpuAtGo);
  flush();
  await steps.close();
  // CPU of the loop only (from 'go' to the last release), not of start-up.
  // Entries reach the observer a moment after each pause: let the last ones in.
  await new Promise((resolve) => setImmediate(resolve));
  send({ type: 'done', index, cpuMs: (cpu.user + cpu.system) / 1000, grants, gcPauses }, () =>
    process.disconnect(),
  );
} catch (error) {
  fail(error);
}
