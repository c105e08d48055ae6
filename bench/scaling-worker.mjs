// One worker process of bench section (k) (bench/scaling.mjs): forked up to eight times, it opens a
// handle per contender the parent asks for and, on the parent's word, loops acquire+release of a
// lock no other worker wants, timing each pair. Commands (IPC, parent -> worker):
//   {type:'warm', contender, ms}  open the contender's handle (once), loop for `ms` untimed, answer
//                                 'warm'; then wait for
//   {type:'go', seconds}          loop for `seconds`, answer 'result' with the pairs done, the
//                                 window's length and each pair's time (ms)
//   {type:'hold', leases}         close every handle, open one on the messages store, take `leases`
//                                 leases (locks.hold, so each listens for changes), answer 'held'
//   {type:'churn', seconds}       acquire+release other resources of its own for `seconds`, answer
//                                 'churned' with the pairs done
//   {type:'count'}                answer 'counted' with the pub/sub messages this process received
//                                 since the last 'count' (on every connection of the process)
// The worker exits when its IPC channel closes, so a dying parent leaves none behind.
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { openLocks } from '../dist/index.js';

const config = JSON.parse(process.env.BENCH_SCALING_CONFIG ?? '{}');
const { index, redisUrl, tree, stores, prefixes, leaseMs } = config;
const ttl = leaseMs / 1000;

process.on('disconnect', () => process.exit(0));

// The library loads ioredis from node_modules (CommonJS, not bundled): this is the same class.
const require = createRequire(import.meta.url);
const { Redis } = require('ioredis');

// Deliveries, counted where they land. The installed redis-server (7.0) has no INFO field that
// counts messages delivered to subscribers (INFO commandstats counts PUBLISH calls, not receivers),
// so every pub/sub message any connection of this process receives is counted here, whatever
// channel or connection the store uses for it. ioredis emits the *Buffer events for every message
// (the string events only when something listens to them), once per message each.
let messages = 0;
const emit = Redis.prototype.emit;
Redis.prototype.emit = function countMessages(event, ...args) {
  if (event === 'messageBuffer' || event === 'pmessageBuffer' || event === 'smessageBuffer') messages += 1;
  return emit.call(this, event, ...args);
};

const expect = (outcome, status, what) => {
  if (outcome.status !== status) throw new Error(`${what}: ${status} expected, got ${outcome.status}`);
};

const openAgentLock = (backend, storeDir, prefix, agentId) =>
  openLocks({
    backend,
    ...(backend === 'redis' ? { redisUrl } : {}),
    dir: tree,
    storeDir,
    identity: { agentId },
    env: { ...config.env, ...(prefix ? { AGENT_LOCK_REDIS_PREFIX: prefix } : {}) },
  });

/** The contender's step: one acquire+release of this worker's own lock. Opened once, kept. */
async function openContender(contender) {
  const agentId = `scaling-${index}`;
  if (contender === 'semaphore') {
    const { Mutex } = require('redis-semaphore');
    const client = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await client.connect();
    const key = `bench:scaling:semaphore:w${index}`;
    // As in run.mjs (d): a lease of LEASE_MS, no waiting (the lock is always free).
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
  const [backend, what] = {
    redisResource: ['redis', 'resource'],
    fileResource: ['file', 'resource'],
    redisPath: ['redis', 'path'],
    filePath: ['file', 'path'],
  }[contender] ?? [null, null];
  if (backend === null) throw new Error(`unknown contender ${contender}`);
  const locks = await openAgentLock(backend, stores[contender], prefixes[contender], agentId);
  const scope = what === 'resource' ? `@w${index}` : `src/w${index}.ts`;
  return {
    async step() {
      expect(await locks.acquire(scope, { ttl }), 'acquired', `acquire ${scope}`);
      expect(await locks.release(scope), 'released', `release ${scope}`);
    },
    close: () => locks.close(),
  };
}

const handles = new Map();
let current = null;
let goSeconds = null;
let onGo = null;
let messagesLocks = null;
let leases = [];

async function closeAll() {
  for (const handle of handles.values()) await handle.close();
  handles.clear();
}

async function warm(contender, ms) {
  if (!handles.has(contender)) handles.set(contender, await openContender(contender));
  current = handles.get(contender);
  const until = performance.now() + ms;
  while (performance.now() < until) await current.step();
  process.send({ type: 'warm', index });
  const seconds = goSeconds ?? (await new Promise((resolve) => (onGo = resolve)));
  goSeconds = null;
  onGo = null;
  const samples = [];
  const start = performance.now();
  const deadline = start + seconds * 1000;
  let t = start;
  while (t < deadline) {
    await current.step();
    const now = performance.now();
    samples.push(now - t);
    t = now;
  }
  process.send({ type: 'result', index, ops: samples.length, ms: t - start, samples });
}

async function hold(count) {
  await closeAll();
  messagesLocks = await openAgentLock('redis', stores.messages, prefixes.messages, `messages-${index}`);
  for (let k = 0; k < count; k++) {
    const held = await messagesLocks.hold(`@w${index}-lease${k}`, { ttl });
    expect(held, 'acquired', `hold @w${index}-lease${k}`);
    leases.push(held.lease);
  }
  process.send({ type: 'held', index });
}

async function churn(seconds) {
  let pairs = 0;
  const deadline = performance.now() + seconds * 1000;
  while (performance.now() < deadline) {
    const scope = `@w${index}-churn${pairs % 4}`;
    expect(await messagesLocks.acquire(scope), 'acquired', `acquire ${scope}`);
    expect(await messagesLocks.release(scope), 'released', `release ${scope}`);
    pairs += 1;
  }
  process.send({ type: 'churned', index, pairs });
}

async function shutdown() {
  for (const lease of leases) await lease.release();
  leases = [];
  await messagesLocks?.close();
  await closeAll();
  process.send({ type: 'closed', index }, () => process.disconnect());
}

const fail = (error) => {
  process.send?.({ type: 'error', index, message: String(error?.stack ?? error) }, () => process.exit(1));
  setTimeout(() => process.exit(1), 1000).unref();
};

process.on('message', (message) => {
  if (message.type === 'go') {
    if (onGo) onGo(message.seconds);
    else goSeconds = message.seconds;
  } else if (message.type === 'warm') warm(message.contender, message.ms).catch(fail);
  else if (message.type === 'hold') hold(message.leases).catch(fail);
  else if (message.type === 'churn') churn(message.seconds).catch(fail);
  else if (message.type === 'count') {
    process.send({ type: 'counted', index, messages });
    messages = 0;
  } else if (message.type === 'close') shutdown().catch(fail);
});
process.send({ type: 'started', index });
