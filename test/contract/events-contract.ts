/**
 * The store's history on every backend: each kind of event is recorded by the decision that makes
 * the change, in the same commit, so it is there as soon as the decision has answered. Runs on the
 * real clock shifted by hand (waits need real time; leases need time to pass).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import type { StoreEvent } from '../../src/core/events.js';
import type { Holder } from '../../src/core/lock.js';
import { hostName, startStamp } from '../../src/host/process.js';
import { type Locks, openLocks, openStore } from '../../src/locks.js';

export interface EventStore {
  connect(): Backend;
  cleanup(): Promise<void>;
}

/** Polls `check` until it holds; the test's timeout is the hang guard. */
async function until(check: () => Promise<boolean>): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 10));
}

export function describeEventContract(name: string, makeStore: () => Promise<EventStore>): void {
  describe(`events: ${name}`, () => {
    let store: EventStore;
    let tree: string;
    let opened: Locks[];
    let children: ChildProcess[];
    let shift: number;
    const clock = () => Date.now() + shift;

    beforeEach(async () => {
      store = await makeStore();
      tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-events-tree-')));
      mkdirSync(path.join(tree, 'src'), { recursive: true });
      opened = [];
      children = [];
      shift = 0;
    });

    afterEach(async () => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
      for (const locks of opened) await locks.close().catch(() => {});
      await store.cleanup();
      rmSync(tree, { recursive: true, force: true });
    });

    async function agent(
      agentId: string,
      options: { parent?: string; holder?: Holder } = {},
    ): Promise<Locks> {
      const locks = await openLocks({
        dir: tree,
        backend: store.connect(),
        identity: {
          agentId,
          parentAgentId: options.parent ?? null,
          ...(options.holder ? { holder: options.holder } : {}),
        },
        clock,
        env: {},
      });
      opened.push(locks);
      return locks;
    }

    /** Agent Z takes `scope` from a real process, writes `notes`, then that process is SIGKILLed. */
    async function deadHolder(scope: string, notes: string[]): Promise<void> {
      const child = spawn('sleep', ['60'], { stdio: 'ignore' });
      children.push(child);
      await once(child, 'spawn');
      const pid = child.pid!;
      const z = await agent('Z', { holder: { host: hostName(), pid, started: startStamp(pid) } });
      expect((await z.acquire(scope, { intent: 'half-done work' })).status).toBe('acquired');
      for (const text of notes) expect((await z.note(scope, text)).status).toBe('noted');
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
    }

    const kinds = (events: readonly StoreEvent[]) => events.map((e) => `${e.type} ${e.scope} ${e.agent_id}`);

    it('records acquired, already_mine, renewed, noted and released, each with its lock', async () => {
      const a = await agent('A');
      const before = clock();
      const taken = await a.acquire('src/a.ts', { intent: 'edit login', ttl: 60 });
      expect(taken.status).toBe('acquired');
      expect((await a.acquire('src/a.ts')).status).toBe('already_mine');
      expect((await a.renew('src/a.ts', { ttl: 90 })).status).toBe('renewed');
      expect((await a.note('src/a.ts', 'half way')).status).toBe('noted');
      expect((await a.release('src/a.ts')).status).toBe('released');
      const events = await a.events();
      expect(kinds(events)).toEqual([
        'acquired src/a.ts A',
        'already_mine src/a.ts A',
        'renewed src/a.ts A',
        'noted src/a.ts A',
        'released src/a.ts A',
      ]);
      const lock = taken.locks[0]!;
      for (const event of events) {
        expect(event).toMatchObject({
          agent_id: 'A',
          parent_agent_id: null,
          by: null,
          kind: 'path',
          tree: a.tree.key,
          mode: 'exclusive',
          fence: lock.fence,
          lock_id: lock.id,
          intent: 'edit login',
        });
        expect(event.at).toBeGreaterThanOrEqual(before);
        expect(event.at).toBeLessThanOrEqual(clock());
        expect(typeof event.id).toBe('string');
      }
      expect(events[3]!.reason).toBe('half way');
      // The history names no token, nor its hash.
      expect(JSON.stringify(events)).not.toContain(lock.token!);
      expect(JSON.stringify(events)).not.toMatch(/token/);
    });

    it('names the parent, and who released a child’s lock', async () => {
      const a = await agent('A');
      const c = await agent('C', { parent: 'A' });
      await c.acquire('@deploy');
      expect((await a.release('@deploy')).status).toBe('released');
      const events = await a.events();
      expect(events.map((e) => [e.type, e.agent_id, e.parent_agent_id, e.by, e.kind, e.tree])).toEqual([
        ['acquired', 'C', 'A', null, 'resource', null],
        ['released', 'C', 'A', 'A', 'resource', null],
      ]);
    });

    it('records queued, then handed_over by the release that freed the way, and timeout', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const d = await agent('D');
      await a.acquire('@merge');
      const waiting = b.acquire('@merge', { wait: 60, intent: 'merge it' });
      await until(async () => (await a.events()).some((e) => e.type === 'queued'));
      await a.release('@merge');
      const granted = await waiting;
      expect(granted.status).toBe('acquired');
      expect((await d.acquire('@merge', { wait: 0.2 })).status).toBe('timeout');
      const events = await a.events();
      expect(events.map((e) => [e.type, e.agent_id, e.by])).toEqual([
        ['acquired', 'A', null],
        ['queued', 'B', null],
        ['released', 'A', null],
        ['handed_over', 'B', 'A'],
        ['queued', 'D', null],
        ['timeout', 'D', null],
      ]);
      expect(events[1]).toMatchObject({ intent: 'merge it', fence: null });
      expect(events[3]).toMatchObject({ intent: 'merge it', fence: granted.locks[0]!.fence });
    });

    it('records expired for a lapsed lease, by the decision that found it', async () => {
      const a = await agent('A');
      const b = await agent('B');
      await a.acquire('@lease', { ttl: 10 });
      shift += 11_000;
      await b.list();
      const last = (await b.events()).at(-1)!;
      expect(last).toMatchObject({
        type: 'expired',
        agent_id: 'A',
        by: 'B',
        scope: '@lease',
        reason: 'lease expired',
      });
    });

    it('records reaped for a dead holder’s lock, orphaned for one with notes, and resumed', async () => {
      const b = await agent('B');
      await deadHolder('src/gone.ts', []);
      await b.list();
      await deadHolder('src/half.ts', ['step 1']);
      await b.list();
      const resumed = await b.resume('src/half.ts');
      expect(resumed.status).toBe('resumed');
      const events = (await b.events()).filter((e) => e.type !== 'acquired' && e.type !== 'noted');
      expect(events.map((e) => [e.type, e.scope, e.agent_id, e.by, e.reason])).toEqual([
        ['reaped', 'src/gone.ts', 'Z', 'B', 'holder gone'],
        ['orphaned', 'src/half.ts', 'Z', 'B', 'holder gone'],
        ['resumed', 'src/half.ts', 'B', null, null],
      ]);
      expect(events[2]!.fence).toBe(resumed.locks[0]!.fence);
    });

    it('records broken with who broke it and why', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const taken = await a.acquire('@stuck');
      await b.breakLock('@stuck', { reason: 'A is stuck' });
      expect((await a.events()).at(-1)).toMatchObject({
        type: 'broken',
        agent_id: 'A',
        by: 'B',
        reason: 'A is stuck',
        fence: taken.locks[0]!.fence,
      });
    });

    it('records frozen with the files, and thawed when the lock lets go of them', async () => {
      const file = path.join(tree, 'src', 'frozen.ts');
      writeFileSync(file, 'x');
      const a = await agent('A');
      expect((await a.acquire('src/frozen.ts', { enforce: true })).status).toBe('acquired');
      expect(statSync(file).mode & 0o222).toBe(0);
      await a.release('src/frozen.ts');
      const events = await a.events();
      expect(events.map((e) => [e.type, e.files ?? null])).toEqual([
        ['acquired', null],
        ['frozen', [file]],
        ['released', null],
        ['thawed', [file]],
      ]);
    });

    it("records trespassed about the holder's lock, by the agent whose command changed the file", async () => {
      const a = await agent('A');
      const taken = await a.acquire('src/**', { intent: 'rework src' });
      await a.acquire('@elsewhere');
      const b = await openStore({ dir: tree, backend: store.connect(), clock, env: {} });
      try {
        const session = b.as({ agentId: 'B', parentAgentId: null });
        // What B's shell command could trespass on: A's path locks in this tree, not its resource.
        const held = await session.heldByOthers();
        expect(held.map((l) => l.scope)).toEqual(['src/**']);
        expect(await b.as({ agentId: 'A', parentAgentId: null }).heldByOthers()).toEqual([]);
        const recorded = await session.recordTrespass([{ file: 'src/x.ts', lock: held[0]! }], 'make gen');
        expect(recorded).toHaveLength(1);
      } finally {
        await b.close();
      }
      expect((await a.events()).at(-1)).toMatchObject({
        type: 'trespassed',
        agent_id: 'A',
        by: 'B',
        scope: 'src/**',
        files: ['src/x.ts'],
        reason: 'make gen',
        intent: 'rework src',
        fence: taken.locks[0]!.fence,
      });
    });

    it('reads only what came after a given event, and narrows by agent, scope and time', async () => {
      const a = await agent('A');
      const b = await agent('B');
      await a.acquire('src/a.ts');
      const [first] = await a.events();
      shift += 60_000;
      const later = clock();
      await b.acquire('@x');
      await a.acquire('src/b.ts');
      expect(kinds(await a.events({ after: first!.id! }))).toEqual(['acquired @x B', 'acquired src/b.ts A']);
      expect(kinds(await a.events({ agent: 'B' }))).toEqual(['acquired @x B']);
      expect(kinds(await a.events({ scopes: ['src/**'] }))).toEqual([
        'acquired src/a.ts A',
        'acquired src/b.ts A',
      ]);
      expect(kinds(await a.events({ since: later }))).toEqual(['acquired @x B', 'acquired src/b.ts A']);
      expect(kinds(await a.events(1))).toEqual(['acquired src/b.ts A']);
    });
  });
}
