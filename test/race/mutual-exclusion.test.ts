/**
 * Mutual exclusion and fences (docs/concepts.md#leases-fences-and-tokens) on every backend that stores across processes (the file store and Redis),
 * with real processes: twenty workers, each its own agent and its own holder, are released
 * together at a gate (one stdin line to each, written in one synchronous loop while all of them
 * idle on stdin with the library loaded and the store open). Ten claim `lib/**`, ten claim
 * `lib/aN.rb`. Whatever the interleaving, the winners must be exactly one wide claim, or all ten
 * narrow ones; and every fence granted is larger than every earlier one, in the order the store
 * itself recorded the grants (the file store's log; the Redis store's list of commits).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { type Locks, openLocks } from '../../src/index.js';
import { describeRedis, type RedisServer, startRedis } from '../backends/redis/server.js';
import {
  type Shaped,
  type Worker,
  readLog,
  readRedisStore,
  requireBuild,
  scratch,
  startWorkers,
  uniquePrefix,
} from './helpers.js';

const ROUNDS = Number(process.env.RACE_ROUNDS ?? 20);
const WIDE = 'lib/**';

interface Contender {
  worker: Worker;
  scope: string;
  wide: boolean;
}

function shuffle<T>(list: readonly T[]): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The fences of `ids` in the order the log granted them (first appearance of each record). */
function fencesInLogOrder(store: string, ids: ReadonlySet<string>): number[] {
  const seen = new Set<string>();
  const fences: number[] = [];
  for (const line of readLog(store).lines) {
    for (const record of [...(line.locks ?? []), ...(line.put ?? [])]) {
      if (!ids.has(record.id) || seen.has(record.id)) continue;
      seen.add(record.id);
      fences.push(record.fence);
    }
  }
  return fences;
}

/** A store the race runs on: the environment its processes need, and its own record of grants. */
interface RaceStore {
  env: Record<string, string>;
  /** The fences of `ids`, in the order the store committed their grants. */
  grantedInOrder(ids: ReadonlySet<string>): Promise<number[]>;
  close(): Promise<void>;
}

interface RaceBackend {
  name: string;
  describe: (name: string, body: () => void) => void;
  open(dirs: ReturnType<typeof scratch>): Promise<RaceStore>;
}

const BACKENDS: RaceBackend[] = [
  {
    name: 'the file store',
    describe,
    open: async (dirs) => ({
      env: {},
      grantedInOrder: async (ids) => fencesInLogOrder(dirs.store, ids),
      close: async () => {},
    }),
  },
  {
    // A real redis-server of its own, and a prefix of its own; the store folder keeps the marker.
    name: 'Redis',
    describe: describeRedis,
    open: async () => {
      const server: RedisServer = await startRedis();
      const prefix = uniquePrefix('race');
      // Commits already read: each round reads the ones after, in the server's commit order.
      let readUpTo = 0;
      return {
        env: {
          AGENT_LOCK_BACKEND: 'redis',
          AGENT_LOCK_REDIS_URL: server.url,
          AGENT_LOCK_REDIS_PREFIX: prefix,
        },
        async grantedInOrder(ids) {
          const { locks, commits } = await readRedisStore(server.url, prefix);
          const fresh = commits.filter((commit) => commit.version > readUpTo);
          // The list keeps the last 128 commits: a round makes at most 20, so none was dropped.
          expect(fresh.length).toBeLessThan(128);
          readUpTo = commits.at(-1)?.version ?? readUpTo;
          const seen = new Set<string>();
          const fences: number[] = [];
          for (const commit of fresh) {
            for (const id of commit.ids) {
              if (!ids.has(id) || seen.has(id)) continue;
              seen.add(id);
              const record = locks.get(id);
              if (record) fences.push(record.fence);
            }
          }
          return fences;
        },
        close: () => server.stop(),
      };
    },
  },
];

for (const backend of BACKENDS) {
  backend.describe(`mutual exclusion on ${backend.name} (20 real processes per round)`, () => {
    const dirs = scratch('mutex-race');
    let contenders: Contender[] = [];
    let observer: Locks;
    let store: RaceStore;

    beforeAll(async () => {
      requireBuild();
      mkdirSync(dirs.tree, { recursive: true });
      store = await backend.open(dirs);
      const ids = Array.from({ length: 20 }, (_, i) => (i < 10 ? `wide-${i}` : `narrow-${i - 10}`));
      const workers = await startWorkers(ids, { store: dirs.store, tree: dirs.tree, env: store.env });
      contenders = workers.map((worker, i) => ({
        worker,
        scope: i < 10 ? WIDE : `lib/a${i - 10}.rb`,
        wide: i < 10,
      }));
      observer = await openLocks({
        dir: dirs.tree,
        storeDir: dirs.store,
        env: { AGENT_ID: 'observer', ...store.env },
      });
    });

    afterAll(async () => {
      await observer?.close();
      await Promise.all(contenders.map(({ worker }) => worker.stop()));
      await store?.close();
      dirs.cleanup();
    });

    it(`grants exactly one wide claim or all ten narrow ones, ${ROUNDS} rounds, fences strictly increasing`, async () => {
      expect(ROUNDS).toBeGreaterThanOrEqual(1);
      const grantOrder: number[] = [];
      const outcomes = { wide: 0, narrow: 0 };

      for (let round = 0; round < ROUNDS; round += 1) {
        // Odd rounds open a fresh handle at the gate: a cold cache (the file store replays its log
        // inside the mutex; a Redis handle first loads the whole snapshot) decides at the gate.
        const fresh = round % 2 === 1;
        const order = shuffle(contenders);
        // The gate: every worker is idle on stdin; these writes release all twenty at once.
        const pending = order.map((c) => c.worker.send({ op: 'acquire', scopes: [c.scope], fresh }));
        const replies = await Promise.all(pending);

        const answers: { contender: Contender; result: Shaped }[] = replies.map((reply, i) => {
          const contender = order[i]!;
          if (!reply.ok) {
            throw new Error(
              `round ${round}: ${contender.worker.agentId} failed: ${reply.error.code} ${reply.error.message}`,
            );
          }
          return { contender, result: reply.result };
        });
        for (const { contender, result } of answers) {
          expect(['acquired', 'held'], `${contender.worker.agentId} in round ${round}`).toContain(
            result.status,
          );
        }
        const winners = answers.filter((a) => a.result.status === 'acquired');
        const wide = winners.filter((a) => a.contender.wide).length;
        const narrow = winners.filter((a) => !a.contender.wide).length;
        expect(
          (wide === 1 && narrow === 0) || (wide === 0 && narrow === 10),
          `round ${round}: ${wide} wide and ${narrow} narrow winners`,
        ).toBe(true);
        if (wide === 1) outcomes.wide += 1;
        else outcomes.narrow += 1;

        // Each winner holds exactly its scope, as itself, with one lock.
        const winnerIds = new Set<string>();
        for (const { contender, result } of winners) {
          expect(result.locks).toHaveLength(1);
          expect(result.locks[0]).toMatchObject({
            scope: contender.scope,
            agent_id: contender.worker.agentId,
          });
          winnerIds.add(result.locks[0]!.id);
        }
        // Every loser was refused by a lock that won this round (nothing else exists).
        for (const { contender, result } of answers.filter((a) => a.result.status === 'held')) {
          expect(result.conflicts.length, `${contender.worker.agentId} refused by nobody`).toBeGreaterThan(0);
          for (const conflict of result.conflicts) expect(winnerIds).toContain(conflict.id);
        }

        // While the winners still hold (their processes live), the store shows exactly them.
        const listed = await observer.list();
        expect(new Set(listed.locks.map((lock) => lock.id))).toEqual(winnerIds);
        expect(listed.locks.every((lock) => lock.status === 'active')).toBe(true);
        const probe = await observer.check(['lib/a3.rb']);
        expect(probe.status).toBe('held');

        // The store's record (log or commit list) holds every winner's grant; the replies carry the
        // same fences.
        const logged = await store.grantedInOrder(winnerIds);
        expect(logged).toHaveLength(winnerIds.size);
        const replyFences = winners.map((w) => w.result.locks[0]!.fence).sort((a, b) => a - b);
        expect([...logged].sort((a, b) => a - b)).toEqual(replyFences);
        grantOrder.push(...logged);

        const released = await Promise.all(
          winners.map(({ contender }) => contender.worker.ask({ op: 'release', scopes: [contender.scope] })),
        );
        for (const result of released) expect(result.status).toBe('released');
        expect((await observer.list()).locks).toEqual([]);
      }

      // Fences: in grant order (the store's order) every fence exceeds every earlier one.
      for (let i = 1; i < grantOrder.length; i += 1) {
        expect(grantOrder[i]!, `grant ${i} of ${grantOrder.length}`).toBeGreaterThan(grantOrder[i - 1]!);
      }
      expect(new Set(grantOrder).size).toBe(grantOrder.length);
      expect(outcomes.wide + outcomes.narrow).toBe(ROUNDS);
      console.log(
        `mutual exclusion on ${backend.name}: ${outcomes.wide} wide and ${outcomes.narrow} narrow rounds`,
      );
    });
  });
}
