/**
 * The commit script's DOMAINS and FENCES branches: a decision on some scopes commits on a store
 * whose version moved while the domain versions it read did not; commits move the versions they
 * write; an older client's commit raises the floor; new fences move past grants made meanwhile.
 */
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { client, describeScript, rec, store } from './script-harness.js';

describeScript('the commit script: conflict domains', () => {
  const domainsOf = (redis: Redis, prefix: string) => redis.hgetall(`{${prefix}}:domains`);

  it('commits when what it read did not move, whatever else did; moves what it writes', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch, v0] = await s.sync();
    const mine = ['o*', 's@a'] as const;
    // Another decision, elsewhere, moves the store's version and @b's.
    const b = await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 1,
      puts: [['lk_b', rec('lk_b')]],
      writes: ['o@b', 's@b'],
    });
    expect(b[0]).toBe('ok');
    expect(await domainsOf(redis, s.prefix)).toEqual({ 'o@b': b[2], 's@b': b[2] });
    const a = await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 1,
      reads: mine.map((key) => [key, v0!]),
      writes: ['o@a', 's@a'],
      puts: [['lk_a', rec('lk_a')]],
    });
    // Committed on B's version: the answer says which, and that no fence moved.
    expect(a.slice(0, 1)).toEqual(['ok']);
    expect(a[4]).toBe(b[2]);
    expect(a[5]).toBe('0');
    const meta = await redis.hmget(`{${s.prefix}}:store`, '#version', '#dv');
    expect(meta).toEqual([a[2], a[2]]);
    // Now @a moved past v0: a decision on it from v0 is sent back with a sync.
    const late = await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 1,
      reads: mine.map((key) => [key, v0!]),
      writes: ['o@a', 's@a'],
      puts: [['lk_a2', rec('lk_a2')]],
    });
    expect(late[0]).toBe('sync');
    expect(await redis.hget(`{${s.prefix}}:store`, 'lk_a2')).toBeNull();
  });

  it('answers a domain commit sent again after a lost reply as committed, and applies it once', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch, v0] = await s.sync();
    // The store moves past the client's version elsewhere, then the client commits on @a.
    expect(
      (
        await s.commit({
          epoch: epoch!,
          version: v0!,
          fence: 5,
          puts: [['lk_b', rec('lk_b')]],
          writes: ['o@b', 's@b'],
        })
      )[0],
    ).toBe('ok');
    const sent = {
      epoch: epoch!,
      version: v0!,
      fence: 1,
      id: 'resent-1',
      seenFence: 0,
      reads: [
        ['o*', v0!],
        ['s@a', v0!],
      ] as [string, string][],
      writes: ['o@a', 's@a'],
      puts: [['lk_a', rec('lk_a')]] as [string, string][],
    };
    const first = await s.commit(sent);
    expect(first[0]).toBe('ok');
    // The same commit again (ioredis resends it after reconnecting): committed, as the first time,
    // with '?' for the fences (the client reads them back), never 'merged' (decide again).
    const again = await s.commit(sent);
    expect(again.slice(0, 3)).toEqual(['ok', epoch, first[2]]);
    expect(again[5]).toBe('?');
    expect(await redis.hget(`{${s.prefix}}:store`, '#version')).toBe(first[2]);
  });

  it('voids every domain version known from before a commit of an older client (the floor)', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch, v0] = await s.sync();
    const one = await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 1,
      puts: [['lk_1', rec('lk_1')]],
      writes: ['o@b', 's@b'],
    });
    // An older client's commit: #version moves, #dv and the domain versions do not.
    const older = String(Number(one[2]) + 5);
    await redis.hset(`{${s.prefix}}:store`, '#version', older);
    const stale = await s.commit({
      epoch: epoch!,
      version: one[2]!,
      fence: 1,
      reads: [
        ['o*', one[2]!],
        ['s@a', one[2]!],
      ],
      writes: ['o@a', 's@a'],
      puts: [['lk_a', rec('lk_a')]],
    });
    expect(stale[0]).toBe('sync');
    // Known as of the older commit's version, the same decision goes in, and the floor is kept.
    const fresh = await s.commit({
      epoch: epoch!,
      version: older,
      fence: 1,
      reads: [
        ['o*', older],
        ['s@a', older],
      ],
      writes: ['o@a', 's@a'],
      puts: [['lk_a', rec('lk_a')]],
    });
    expect(fresh[0]).toBe('ok');
    expect(await redis.hmget(`{${s.prefix}}:store`, '#dv', '#floor')).toEqual([fresh[2], older]);
  });

  it('moves new fences past those granted meanwhile, in records and events, and says by how much', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch, v0] = await s.sync();
    await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 500,
      puts: [['lk_b', JSON.stringify({ id: 'lk_b', fence: 500 })]],
    });
    const answer = await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 102,
      seenFence: 100,
      reads: [['s@a', v0!]],
      writes: ['o@a', 's@a'],
      puts: [
        ['lk_a', JSON.stringify({ id: 'lk_a', fence: 101 })],
        ['lk_c', JSON.stringify({ id: 'lk_c', fence: 7 })],
      ],
      events: JSON.stringify([
        { type: 'acquired', fence: 101 },
        { type: 'released', fence: 7 },
        { type: 'queued', fence: null },
      ]),
    });
    expect(answer[0]).toBe('ok');
    expect(answer[5]).toBe('400');
    expect(JSON.parse((await redis.hget(`{${s.prefix}}:store`, 'lk_a'))!).fence).toBe(501);
    // A record the decision did not grant keeps its fence.
    expect(JSON.parse((await redis.hget(`{${s.prefix}}:store`, 'lk_c'))!).fence).toBe(7);
    expect(await redis.hget(`{${s.prefix}}:store`, '#fence')).toBe('502');
    const entries = (await redis.xrevrange(`{${s.prefix}}:history`, '+', '-', 'COUNT', 1)) as [
      string,
      string[],
    ][];
    const fields = entries[0]![1];
    expect(JSON.parse(fields[1]!)).toEqual([
      { type: 'acquired', fence: 501 },
      { type: 'released', fence: 7 },
      { type: 'queued', fence: null },
    ]);
  });

  it('takes thousands of domain versions moved in one commit (sliced under the Lua stack)', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch, v0] = await s.sync();
    const writes = Array.from({ length: 5000 }, (_, i) => `s/d${i}`);
    const answer = await s.commit({
      epoch: epoch!,
      version: v0!,
      fence: 1,
      puts: [['lk_x', rec('lk_x')]],
      writes,
    });
    expect(answer[0]).toBe('ok');
    // Past 4096 domains the hash starts over, and the floor rises to this commit.
    expect(await redis.hlen(`{${s.prefix}}:domains`)).toBe(0);
    expect(await redis.hget(`{${s.prefix}}:store`, '#floor')).toBe(answer[2]);
  });
});
