/**
 * The commit script's two exceptions to compare-and-set, for waiting in line: a new place in
 * line merged into a newer store (MERGE), and a hand-over rebased onto one (REBASE).
 */
import { describe, expect, it } from 'vitest';
import {
  type CommitArgs,
  client,
  describeScript,
  listed,
  rec,
  serverMicros,
  store,
} from './script-harness.js';

describeScript('the commit script: merges and rebases', () => {
  it('merges a commit of new tickets alone into a newer store, at a place the server gives', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const ticket = (id: string, fence: number) => JSON.stringify({ id, status: 'waiting', fence });
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 5, puts: [['lk', rec('lk')]] });
    // Made on version 0, which is old now: without the flag it is sent back, with it it goes in.
    const plain = await s.commit({
      epoch: epoch!,
      version: '0',
      fence: 6,
      puts: [['wt1', ticket('wt1', 6)]],
    });
    expect(plain[0]).toBe('sync');
    const before = await serverMicros(redis);
    const merged = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 6,
      puts: [['wt1', ticket('wt1', 6)]],
    });
    expect(merged.slice(0, 2)).toEqual(['merged', epoch]);
    // The answer is a sync that already shows the ticket, at a fence past every one before.
    const { locks, meta } = await s.state();
    expect(listed(merged)).toEqual(locks);
    const place = JSON.parse(locks.wt1!).fence as number;
    expect(place).toBeGreaterThanOrEqual(before);
    expect(Number(meta.fence)).toBe(place);
    expect(merged[4]).toBe(meta.fence);
    expect(merged[2]).toBe(meta.version);
    expect(merged[2]).not.toBe(first[2]);

    // A ticket already there (this commit sent again), a deletion, or another epoch: not merged.
    const again = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 7,
      puts: [['wt1', ticket('wt1', 7)]],
    });
    expect(again[0]).toBe('sync');
    const withDel = await s.commit({
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 7,
      puts: [['wt2', ticket('wt2', 7)]],
      dels: ['lk'],
    });
    expect(withDel[0]).toBe('sync');
    const otherEpoch = await s.commit({
      epoch: '1',
      version: '0',
      check: '0m',
      fence: 7,
      puts: [['wt3', ticket('wt3', 7)]],
    });
    expect(otherEpoch[0]).toBe('sync');
    expect(Object.keys((await s.state()).locks).sort()).toEqual(['lk', 'wt1']);
  });

  it('does not merge a resent ticket again after it was handed over', async () => {
    const redis = client();
    const s = store(redis);
    const [, epoch] = await s.sync();
    const ticket = JSON.stringify({ id: 'wt1', status: 'waiting', fence: 2 });
    const first = await s.commit({ epoch: epoch!, version: '0', fence: 1, puts: [['lk', rec('lk')]] });
    const merge = {
      epoch: epoch!,
      version: '0',
      check: '0m',
      fence: 2,
      id: 'merge-1',
      puts: [['wt1', ticket]],
    } as const;
    const merged = await s.commit({ ...merge, puts: [['wt1', ticket]] });
    expect(merged[0]).toBe('merged');
    // The ticket is handed its lock (wt1 gone), then the merge arrives again (a lost reply).
    const handed = await s.commit({
      epoch: epoch!,
      version: merged[2]!,
      fence: 3,
      puts: [['lk_1', rec('lk_1')]],
      dels: ['wt1', 'lk'],
    });
    expect(handed[0]).toBe('ok');
    const before = await s.state();
    const again = await s.commit({ ...merge, puts: [['wt1', ticket]] });
    expect(again[0]).toBe('merged');
    expect(await s.state()).toEqual(before);
    expect(first[0]).toBe('ok');
  });

  // A merge's time: the decision's (ARGV[4]) when the server checks the window; with a clock of the
  // client's own (ARGV[4] is then that clock's, here far from the server's), the send time after 'm'.
  const timings: [string, (serverMs: number) => Pick<CommitArgs, 'check' | 'at' | 'until'>][] = [
    ['in a window the server checks', (ms) => ({ check: '1m', at: ms, until: ms + 1000 })],
    ["on a clock of the client's own", (ms) => ({ check: `0m${ms}`, at: 5_000, until: 6_000 })],
  ];
  it.each(timings)(
    'takes a merge only fresh, %s: a resend after many commits is not applied again',
    async (_, timing) => {
      const redis = client();
      const s = store(redis);
      const [, epoch] = await s.sync();
      const ticket = JSON.stringify({ id: 'wt1', status: 'waiting', fence: 2 });
      await s.commit({ epoch: epoch!, version: '0', fence: 1, puts: [['lk', rec('lk')]] });
      // Decided and sent now. A machine that stalls past the 50 ms gets another try: a merge refused
      // as stale changes nothing.
      const mergeNow = async (args: CommitArgs) => {
        for (let attempt = 1; ; attempt++) {
          const at = Math.floor((await serverMicros(redis)) / 1000) - 1;
          const sent = { ...args, ...timing(at) };
          const reply = await s.commit(sent);
          if (reply[0] === 'merged' || attempt === 5) return { reply, sent, at };
        }
      };
      // On version 0: merged.
      const first = await mergeNow({
        epoch: epoch!,
        version: '0',
        fence: 2,
        id: 'merge-fresh',
        puts: [['wt1', ticket]],
      });
      const { reply: merged, sent: merge, at } = first;
      expect(merged[0]).toBe('merged');
      // The ticket is handed its lock, then more commits go by than a resend is looked for among.
      let version = (
        await s.commit({
          epoch: epoch!,
          version: merged[2]!,
          fence: 3,
          puts: [['lk_1', rec('lk_1')]],
          dels: ['wt1', 'lk'],
        })
      )[2]!;
      for (let k = 0; k < 40; k++) {
        const filler = await s.commit({ epoch: epoch!, version, fence: 3, puts: [[`f${k}`, rec(`f${k}`)]] });
        expect(filler[0]).toBe('ok');
        version = filler[2]!;
      }
      // The merge arrives again, still inside its window but older than a merge may be.
      while (Math.floor((await serverMicros(redis)) / 1000) - at < 60)
        await new Promise((r) => setTimeout(r, 10));
      const before = await s.state();
      const again = await s.commit(merge);
      // Answered as the first time (its delta finds the merge), and nothing applied.
      expect(again[0]).toBe('merged');
      expect(await s.state()).toEqual(before);
      expect(Object.keys(before.locks)).not.toContain('wt1');
      // The same merge decided just now goes in.
      const fresh = (await mergeNow({ ...merge, id: 'merge-now' })).reply;
      expect(fresh[0]).toBe('merged');
      expect(Object.keys((await s.state()).locks)).toContain('wt1');
    },
  );

  describe('rebases a hand-over onto a store that only gained new tickets since its snapshot', () => {
    const lock = (
      id: string,
      agent: string,
      status = 'active',
      parent: string | null = null,
      expires = 9e12,
    ) =>
      JSON.stringify({ id, agent_id: agent, parent_agent_id: parent, expires_at: expires, status, fence: 1 });
    /** A holds lk, B waits (wt_b): the snapshot at `v1` that A's hand-over to B is decided on. */
    async function line() {
      const redis = client();
      const s = store(redis);
      const [, epoch] = await s.sync();
      const first = await s.commit({
        epoch: epoch!,
        version: '0',
        fence: 2,
        puts: [
          ['lk', lock('lk', 'A')],
          ['wt_b', lock('wt_b', 'B', 'waiting')],
        ],
      });
      const v1 = first[2]!;
      const handOver = (extra: Partial<CommitArgs> = {}) =>
        s.commit({
          epoch: epoch!,
          version: v1,
          check: '0r\n"B"',
          fence: 3,
          id: 'hand-over',
          puts: [['lk_b', lock('lk_b', 'B')]],
          dels: ['wt_b', 'lk'],
          ...extra,
        });
      /** A ticket of `agent` committed on `version` (default: the snapshot's), as a queue step would. */
      const ticketSince = (
        id: string,
        agent: string,
        version = v1,
        parent: string | null = null,
        expires = 9e12,
      ) =>
        s.commit({
          epoch: epoch!,
          version,
          fence: 4,
          puts: [[id, lock(id, agent, 'waiting', parent, expires)]],
        });
      return { s, epoch: epoch!, v1, handOver, ticketSince };
    }

    it('applies it, answers rebased with the delta since the snapshot, and once only', async () => {
      const { s, epoch, handOver, ticketSince } = await line();
      expect((await ticketSince('wt_c', 'C'))[0]).toBe('ok');
      const answer = await handOver();
      expect(answer.slice(0, 2)).toEqual(['rebased', epoch]);
      const { locks, meta, changes } = await s.state();
      expect(Object.keys(locks).sort()).toEqual(['lk_b', 'wt_c']);
      expect(listed(answer)).toEqual({ lk: '', wt_b: '', lk_b: locks.lk_b, wt_c: locks.wt_c });
      expect(answer[2]).toBe(meta.version);
      // The fence only grows: the ticket's place (4) stays the store's.
      expect(meta.fence).toBe('4');
      // Sent again (a resend after a lost reply): the same answer, nothing applied twice.
      const again = await handOver();
      expect(again[0]).toBe('rebased');
      expect((await s.state()).changes).toEqual(changes);
    });

    it("applies it over another agent's ticket queued and then refreshed since", async () => {
      const { s, handOver, ticketSince } = await line();
      const queued = await ticketSince('wt_c', 'C');
      await ticketSince('wt_c', 'C', queued[2]!, null, 9.1e12);
      expect((await handOver())[0]).toBe('rebased');
      expect(Object.keys((await s.state()).locks).sort()).toEqual(['lk_b', 'wt_c']);
    });

    it('refuses it (a sync, nothing changed) when anything but new tickets of other agents came since', async () => {
      const cases: [string, (c: Awaited<ReturnType<typeof line>>) => Promise<unknown>][] = [
        [
          'a lock',
          (c) => c.s.commit({ epoch: c.epoch, version: c.v1, fence: 4, puts: [['lk_x', lock('lk_x', 'X')]] }),
        ],
        ['a ticket of the agent handed the lock', (c) => c.ticketSince('wt_c', 'B')],
        ["a ticket of that agent's child", (c) => c.ticketSince('wt_c', 'C', c.v1, 'B')],
        [
          'a ticket since gone',
          async (c) => {
            const put = await c.ticketSince('wt_c', 'C');
            await c.s.commit({ epoch: c.epoch, version: put[2]!, fence: 4, dels: ['wt_c'] });
          },
        ],
        ['a ticket that has lapsed', (c) => c.ticketSince('wt_c', 'C', c.v1, null, 1)],
        ['a refresh of the ticket handed over', (c) => c.ticketSince('wt_b', 'B', c.v1, null, 9.1e12)],
        [
          'more commits than it looks back over (9 tickets)',
          async (c) => {
            let version = c.v1;
            for (let k = 0; k < 9; k++) version = (await c.ticketSince(`wt_c${k}`, 'C', version))[2]!;
          },
        ],
        [
          'a ticket that is no longer waiting',
          (c) => c.s.commit({ epoch: c.epoch, version: c.v1, fence: 4, puts: [['wt_c', lock('wt_c', 'C')]] }),
        ],
        [
          'new tombstones',
          (c) =>
            c.s.commit({
              epoch: c.epoch,
              version: c.v1,
              fence: 4,
              tombstones: '[{"fence":1}]',
              puts: [['wt_c', lock('wt_c', 'C', 'waiting')]],
            }),
        ],
      ];
      for (const [what, since] of cases) {
        const c = await line();
        await since(c);
        const before = await c.s.state();
        const answer = await c.handOver();
        expect([what, answer[0]]).toEqual([what, 'sync']);
        expect(await c.s.state()).toEqual(before);
      }
      // Without the flag, or from another epoch, a new ticket alone is enough to refuse it.
      for (const extra of [{ check: '0' }, { epoch: '1' }]) {
        const c = await line();
        await c.ticketSince('wt_c', 'C');
        expect((await c.handOver(extra))[0]).toBe('sync');
        expect(Object.keys((await c.s.state()).locks).sort()).toEqual(['lk', 'wt_b', 'wt_c']);
      }
    });
  });
});
