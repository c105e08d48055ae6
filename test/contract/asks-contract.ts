/**
 * Asking a holder, on every store: a request left on the locks that hold a scope reaches their
 * holder once (marked delivered in the step that hands it over, so two calls of the holder at once
 * take it once and another agent never does), the holder's reply reaches the asker once, and a
 * lock that ends tells its askers. Over a cap, nothing is left anywhere.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import type { StoreEvent } from '../../src/core/events.js';
import { type Locks, openLocks } from '../../src/locks.js';
import { MAX_ASKS_WAITING } from '../../src/store/checks.js';

export interface AskStore {
  connect(): Backend;
  cleanup(): Promise<void>;
}

const LEASE = 15 * 60_000;

export function describeAskContract(name: string, makeStore: () => Promise<AskStore>): void {
  describe(`asks: ${name}`, () => {
    let store: AskStore;
    let tree: string;
    let opened: Locks[];

    beforeEach(async () => {
      store = await makeStore();
      tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-asks-tree-')));
      mkdirSync(path.join(tree, 'src'), { recursive: true });
      opened = [];
    });

    afterEach(async () => {
      for (const locks of opened) await locks.close().catch(() => {});
      await store.cleanup();
      rmSync(tree, { recursive: true, force: true });
    });

    /** An agent on a handle of its own, as another process (or host) would open the store. */
    async function agent(agentId: string, parent: string | null = null): Promise<Locks> {
      const locks = await openLocks({
        dir: tree,
        backend: store.connect(),
        identity: { agentId, parentAgentId: parent },
        env: {},
      });
      opened.push(locks);
      return locks;
    }

    const edit = (locks: Locks, file: string) => locks.claim(file, { tool: 'Edit', leaseMs: LEASE });
    const kinds = (events: readonly StoreEvent[]) =>
      events.map((e) => `${e.type} ${e.scope} ${e.agent_id}${e.by ? ` by ${e.by}` : ''}`);
    const said = (mail: Awaited<ReturnType<Locks['takeMail']>>) =>
      mail.map((m) => `${m.type} ${m.scope} from ${m.from}: ${m.text}`);

    it("leaves a request on the holder's claim, seen in the check's own read, and hands it over once", async () => {
      const holder = await agent('A');
      const asker = await agent('B');
      expect((await edit(holder, 'src/a.ts')).status).toBe('claimed');
      // Nothing waits: the answer says nothing of mail.
      expect((await edit(holder, 'src/a.ts')).mail).toBeUndefined();
      const asked = await asker.ask('src/a.ts', 'please finish');
      expect(asked.status).toBe('asked');
      expect(asked.locks.map((l) => [l.scope, l.agent_id])).toEqual([['src/a.ts', 'A']]);
      // The holder's next check or claim, of any file, sees it waiting in the same read. A hook
      // call opens the store afresh (a Redis handle then reads it whole; a long-lived one may be
      // behind on domains it did not decide on): so does this look.
      expect((await (await agent('A')).check('src/other.ts')).mail).toBe(true);
      expect((await edit(await agent('A'), 'src/a.ts')).mail).toBe(true);
      expect(said(await holder.takeMail())).toEqual(['ask src/a.ts from B: please finish']);
      expect(await holder.takeMail()).toEqual([]);
      expect((await holder.check('src/other.ts')).mail).toBeUndefined();
      expect(kinds(await holder.events())).toEqual(['claimed src/a.ts A', 'asked src/a.ts A by B']);
      expect((await holder.events()).at(-1)?.reason).toBe('please finish');
    });

    it('two calls of the holder at once take a request once', async () => {
      const holder = await agent('A');
      const again = await agent('A');
      const asker = await agent('B');
      await edit(holder, 'src/a.ts');
      await asker.ask('src/a.ts', 'one');
      await asker.ask('src/a.ts', 'two');
      const [x, y] = await Promise.all([holder.takeMail(), again.takeMail()]);
      expect(said([...x, ...y]).sort()).toEqual(['ask src/a.ts from B: one', 'ask src/a.ts from B: two']);
      // All of them went to one call: each delivery is one step that takes everything waiting.
      expect([x.length, y.length].sort()).toEqual([0, 2]);
    });

    it("another agent's call never takes a request meant for the holder", async () => {
      const holder = await agent('A');
      const asker = await agent('B');
      const other = await agent('C');
      const child = await agent('A-sub', 'A');
      await edit(holder, 'src/a.ts');
      await asker.ask('src/a.ts', 'please finish');
      expect((await other.check('src/a.ts')).mail).toBeUndefined();
      expect(await other.takeMail()).toEqual([]);
      expect(await asker.takeMail()).toEqual([]);
      expect(await child.takeMail()).toEqual([]);
      expect(said(await holder.takeMail())).toEqual(['ask src/a.ts from B: please finish']);
    });

    it("the holder's reply reaches the asker once", async () => {
      const holder = await agent('A');
      const asker = await agent('B');
      await edit(holder, 'src/a.ts');
      await asker.ask('src/a.ts', 'please finish');
      await holder.takeMail();
      const replied = await holder.reply('B', 'two minutes');
      expect(replied.status).toBe('replied');
      expect(replied.locks.map((l) => l.scope)).toEqual(['src/a.ts']);
      expect(await holder.takeMail()).toEqual([]);
      expect((await (await agent('B')).check('src/b.ts')).mail).toBe(true);
      expect(said(await asker.takeMail())).toEqual(['reply src/a.ts from A: two minutes']);
      expect(await asker.takeMail()).toEqual([]);
      expect(kinds(await holder.events()).at(-1)).toBe('replied src/a.ts A');
      expect((await holder.events()).at(-1)?.reason).toBe('to B: two minutes');
      // Nobody else asked: a reply to them has nothing to answer.
      expect((await holder.reply('C', 'hello')).status).toBe('not_found');
    });

    it('a released lock tells its askers that the scope is free, with a reply they had not read', async () => {
      const holder = await agent('A');
      const asker = await agent('B');
      const other = await agent('C');
      expect((await holder.acquire('src/**', { intent: 'refactor' })).status).toBe('acquired');
      await asker.ask('src/a.ts', 'may I?');
      await other.ask('src/b.ts', 'and I?');
      await holder.takeMail();
      await holder.reply('B', 'releasing now');
      expect((await holder.release('src/**')).status).toBe('released');
      expect((await (await agent('B')).check('src/a.ts')).mail).toBe(true);
      const told = await asker.takeMail();
      expect(told.map((m) => [m.type, m.scope, m.from])).toEqual([
        ['reply', 'src/**', 'A'],
        ['freed', 'src/**', 'A'],
      ]);
      expect(told[0]?.text).toBe('releasing now');
      expect(await asker.takeMail()).toEqual([]);
      expect(said(await other.takeMail()).map((l) => l.split(':')[0])).toEqual(['freed src/** from A']);
      expect(await other.takeMail()).toEqual([]);
      // Nothing is left waiting for anyone.
      expect((await (await agent('A')).check('src/a.ts')).mail).toBeUndefined();
    });

    it("a claim that ends with the holder's turn tells its askers", async () => {
      const holder = await agent('A');
      const asker = await agent('B');
      await edit(holder, 'src/a.ts');
      await asker.ask('src/a.ts', 'please finish');
      await holder.endClaims('turn ended (claude Stop)');
      const told = await asker.takeMail();
      expect(told.map((m) => [m.type, m.scope, m.text])).toEqual([
        ['freed', 'src/a.ts', 'turn ended (claude Stop)'],
      ]);
    });

    it('asking about a free scope, or one only the caller holds, leaves nothing', async () => {
      const asker = await agent('B');
      expect((await asker.ask('src/a.ts', 'anyone?')).status).toBe('free');
      await edit(asker, 'src/a.ts');
      expect((await asker.ask('src/a.ts', 'me?')).status).toBe('mine');
      expect(kinds(await asker.events())).toEqual(['claimed src/a.ts B']);
    });

    it('refuses a request over the caps and leaves everything as it was', async () => {
      const holder = await agent('A');
      const asker = await agent('B');
      await edit(holder, 'src/a.ts');
      await expect(asker.ask('src/a.ts', 'x'.repeat(1001))).rejects.toMatchObject({ code: 'E_USAGE' });
      await expect(asker.ask('src/a.ts', '   ')).rejects.toMatchObject({ code: 'E_USAGE' });
      for (let i = 0; i < MAX_ASKS_WAITING; i++) await asker.ask('src/a.ts', `request ${i}`);
      const before = await holder.events();
      await expect(asker.ask('src/a.ts', 'one more')).rejects.toMatchObject({
        code: 'E_USAGE',
        message: expect.stringContaining(`already has ${MAX_ASKS_WAITING} messages`),
      });
      expect(await holder.events()).toEqual(before);
      const taken = await holder.takeMail();
      expect(taken).toHaveLength(MAX_ASKS_WAITING);
      expect(taken.map((m) => m.text)).not.toContain('one more');
      // Once read, there is room again.
      expect((await asker.ask('src/a.ts', 'one more')).status).toBe('asked');
      await expect(holder.reply('not an id', 'x')).rejects.toMatchObject({ code: 'E_USAGE' });
    });
  });
}
