/**
 * The commit script after the server lost its data (FLUSHALL, a restart): a new epoch, and old
 * snapshots refused.
 */
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { client, describeScript, rec, store } from './script-harness.js';
import { type RedisServer, startRedis } from './server.js';

describeScript('the commit script: lost data', () => {
  describe('after the server lost its data', () => {
    let own: RedisServer;
    beforeAll(async () => {
      own = await startRedis();
    });
    afterAll(async () => {
      await own?.stop();
    });

    for (const how of ['FLUSHALL', 'a restart'] as const) {
      it(`after ${how} the store gets a new epoch and old snapshots are refused`, async () => {
        let redis = client(own.url);
        let s = store(redis);
        const [, epoch] = await s.sync();
        const ok = await s.commit({ epoch: epoch!, version: '0', fence: 50, puts: [['a', rec('a')]] });
        const version = ok[2]!;
        if (how === 'FLUSHALL') await redis.flushall();
        else {
          redis.disconnect();
          await own.restart();
          redis = client(own.url);
          s = store(redis, s.prefix);
        }
        expect(await s.state()).toEqual({ locks: {}, meta: {}, changes: [], events: [] });

        // The old snapshot's commit is refused with a full sync of the new, empty store.
        const answer = await s.commit({ epoch: epoch!, version, fence: 60, puts: [['b', rec('b')]] });
        expect(answer).toHaveLength(7);
        const newEpoch = answer[1]!;
        expect(answer[0]).toBe('sync');
        expect(newEpoch).not.toBe(epoch);
        expect(Number(newEpoch)).toBeGreaterThan(Number(epoch));
        expect(answer.slice(2)).toEqual(['0', answer[3], '0', '[]', 'full']);
        expect(await s.state()).toEqual({
          locks: {},
          meta: { epoch: newEpoch, version: '0', fence: '0', tomb_v: '0' },
          changes: [],
          events: [],
        });

        // At the new epoch it commits, and versions still grow past the old ones (server clock).
        const again = await s.commit({ epoch: newEpoch, version: '0', fence: 60, puts: [['b', rec('b')]] });
        expect(again[0]).toBe('ok');
        expect(Number(again[2])).toBeGreaterThan(Number(version));
      });
    }
  });
});
