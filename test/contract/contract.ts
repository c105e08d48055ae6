/**
 * The one behaviour suite every backend must pass (docs/concepts.md). Each case talks to the
 * store only through `openLocks`, as several agents would: A and B unrelated, C and D children of A.
 * `makeStore` gives a fresh, empty store per case; every `connect()` is a separate handle on it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import type { Holder, Lock } from '../../src/core/lock.js';
import { hostName, startStamp } from '../../src/host/process.js';
import { type Locks, openLocks } from '../../src/locks.js';

export interface ContractStore {
  /** A new handle on the same store, as another process would open it. */
  connect(): Backend;
  cleanup(): Promise<void>;
}

interface AgentOptions {
  parent?: string;
  holder?: Holder;
  env?: Record<string, string>;
  dir?: string;
}

const START = Date.UTC(2030, 0, 1);
const SECOND = 1000;

export function describeBackendContract(name: string, makeStore: () => Promise<ContractStore>): void {
  describe(`backend contract: ${name}`, () => {
    let store: ContractStore;
    let tree: string;
    let now: number;
    let opened: Locks[];
    let children: ChildProcess[];
    const clock = () => now;

    beforeEach(async () => {
      store = await makeStore();
      tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-contract-tree-')));
      mkdirSync(path.join(tree, 'src/lib'), { recursive: true });
      mkdirSync(path.join(tree, 'docs'));
      now = START;
      opened = [];
      children = [];
    });

    afterEach(async () => {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
      for (const locks of opened) await locks.close();
      await store.cleanup();
      rmSync(tree, { recursive: true, force: true });
    });

    async function agent(agentId: string, options: AgentOptions = {}): Promise<Locks> {
      const locks = await openLocks({
        dir: options.dir ?? tree,
        backend: store.connect(),
        identity: {
          agentId,
          parentAgentId: options.parent ?? null,
          ...(options.holder ? { holder: options.holder } : {}),
        },
        clock,
        env: options.env ?? {},
      });
      opened.push(locks);
      return locks;
    }

    /** A (top level), B (unrelated), C and D (children of A). */
    async function family() {
      return {
        a: await agent('A'),
        b: await agent('B'),
        c: await agent('C', { parent: 'A' }),
        d: await agent('D', { parent: 'A' }),
      };
    }

    /** Agent Z takes `scope` from a real process, writes `notes`, then that process is SIGKILLed. */
    async function lockOfDeadHolder(scope: string, notes: string[]): Promise<Lock> {
      const child = spawn('sleep', ['60'], { stdio: 'ignore' });
      children.push(child);
      await once(child, 'spawn');
      const pid = child.pid!;
      const z = await agent('Z', { holder: { host: hostName(), pid, started: startStamp(pid) } });
      const taken = await z.acquire(scope, { intent: 'half-done work' });
      expect(taken.status).toBe('acquired');
      for (const text of notes) expect((await z.note(scope, text)).status).toBe('noted');
      const exited = once(child, 'exit');
      child.kill('SIGKILL');
      await exited;
      return taken.locks[0]!;
    }

    const scopes = (locks: readonly Lock[]) => locks.map((lock) => lock.scope).sort();
    const holders = (locks: readonly Lock[]) => locks.map((lock) => lock.agent_id).sort();

    describe('acquire', () => {
      it('grants a free scope with a fence, a secret token and the holder', async () => {
        const { a } = await family();
        const result = await a.acquire('src/a.ts', { intent: 'edit login' });
        expect(result.status).toBe('acquired');
        expect(result.conflicts).toEqual([]);
        expect(result.locks).toHaveLength(1);
        const lock = result.locks[0]!;
        expect(lock).toMatchObject({
          scope: 'src/a.ts',
          kind: 'path',
          mode: 'exclusive',
          agent_id: 'A',
          parent_agent_id: null,
          intent: 'edit login',
          tree: a.tree.key,
          status: 'active',
          stale: false,
          notes: [],
          expires_at: null,
        });
        expect(Number.isSafeInteger(lock.fence) && lock.fence > 0).toBe(true);
        expect(typeof lock.token).toBe('string');
        expect(Buffer.from(lock.token!, 'base64url').length).toBeGreaterThanOrEqual(16);
        expect(lock.created_at).toBe(new Date(START).toISOString());
      });

      it('shows the token only to the taker', async () => {
        const { a, b } = await family();
        const { locks } = await a.acquire('@merge');
        expect(locks[0]!.token).toBeDefined();
        const listed = await b.list();
        expect(listed.locks).toHaveLength(1);
        expect(listed.locks[0]!.token).toBeUndefined();
        expect(JSON.stringify(listed)).not.toContain(locks[0]!.token!);
      });

      it('gives every grant its own token', async () => {
        const { a } = await family();
        const result = await a.acquire(['@one', '@two', 'src/a.ts']);
        const tokens = new Set(result.locks.map((lock) => lock.token));
        expect(tokens.size).toBe(3);
      });

      it('refuses an overlapping scope and names the holder', async () => {
        const { a, b } = await family();
        await a.acquire('src/**', { intent: 'refactor' });
        const result = await b.acquire('src/a.ts');
        expect(result.status).toBe('held');
        expect(result.locks).toEqual([]);
        expect(result.conflicts).toHaveLength(1);
        expect(result.conflicts[0]).toMatchObject({ scope: 'src/**', agent_id: 'A', intent: 'refactor' });
        expect((await b.mine()).locks).toEqual([]);
      });

      it('refuses the identical scope to another agent', async () => {
        const { a, b } = await family();
        await a.acquire('src/a.ts');
        expect((await b.acquire('src/a.ts')).status).toBe('held');
        expect((await b.acquire('./src//a.ts')).status).toBe('held');
      });

      it('matches a plain path against a glob exactly', async () => {
        const { a, b } = await family();
        await a.acquire('src/*.ts');
        expect((await b.acquire('src/b.ts')).status).toBe('held');
        expect((await b.acquire('src/lib/b.ts')).status).toBe('acquired');
        expect((await b.acquire('src/b.js')).status).toBe('acquired');
      });

      it('refuses glob against glob when some path matches both, and grants disjoint ones', async () => {
        const { a, b } = await family();
        await a.acquire('src/*.ts');
        expect((await b.acquire('src/**/*.ts')).status).toBe('held');
        expect((await b.acquire('src/a.*')).status).toBe('held');
        expect((await b.acquire('src/lib/**')).status).toBe('acquired'); // `*` stays out of src/lib
        expect((await b.acquire('docs/**')).status).toBe('acquired');
        expect((await b.acquire('srcx/**')).status).toBe('acquired');
      });

      it('grants globs of disjoint extensions side by side, at any depth', async () => {
        const { a, b } = await family();
        await a.acquire('src/*.ts');
        expect((await b.acquire('src/**/*.md')).status).toBe('acquired');
        await a.acquire('docs/*.md');
        expect((await b.acquire('docs/*.png')).status).toBe('acquired');
        await a.acquire('src/**/*.test.ts');
        expect((await b.acquire('src/**/*.tsx')).status).toBe('acquired');
        const held = await b.acquire('src/**/*.test.*');
        expect(held.status).toBe('held');
        expect(held.conflicts.map((l) => l.scope).sort()).toEqual(['src/**/*.test.ts', 'src/*.ts']);
      });

      it('grants disjoint folders under ** and refuses the one that meets', async () => {
        const { a, b } = await family();
        await a.acquire('**/test/**');
        expect((await b.acquire('src/*.ts')).status).toBe('acquired');
        expect((await b.acquire('packages/api/lib/*.js')).status).toBe('acquired');
        expect((await b.acquire('packages/*/lib/*.js')).status).toBe('held'); // packages/test/lib/a.js
        expect((await b.acquire('**/src/*.ts')).status).toBe('held'); // test/src/a.ts
      });

      it('decides braces and classes exactly: they meet or they do not', async () => {
        const { a, b } = await family();
        await a.acquire('src/{auth,billing}/**');
        expect((await b.acquire('src/{users,admin}/*.ts')).status).toBe('acquired');
        expect((await b.acquire('src/{admin,billing}/api/*.ts')).status).toBe('held');
        await a.acquire('docs/[a-m]*.md');
        expect((await b.acquire('docs/[n-z]*.md')).status).toBe('acquired');
        expect((await b.acquire('docs/[k-p]*')).status).toBe('held');
        expect((await b.check('docs/[n-z]*.md')).status).toBe('mine');
        expect((await b.check('docs/[a-m]*.png')).status).toBe('free');
        expect((await b.check('docs/[k-p]*')).status).toBe('held');
      });

      it('refuses a narrower glob inside a held folder, and the whole tree', async () => {
        const { a, b } = await family();
        await a.acquire('src/lib');
        expect((await b.acquire('src/lib/**/*.ts')).status).toBe('held');
        expect((await b.acquire('**')).status).toBe('held');
        // `src/*` matches the folder src/lib itself, which `src/lib/**` holds; `src/*.ts` does not.
        expect((await b.acquire('src/*')).status).toBe('held');
        expect((await b.acquire('src/*.ts')).status).toBe('acquired');
      });

      it('answers already_mine when the caller’s own lock covers every scope', async () => {
        const { a } = await family();
        const first = await a.acquire('src/**');
        for (const asked of ['src/a.ts', 'src/**', 'src/lib/**', 'src/lib/*.ts']) {
          const again = await a.acquire(asked);
          expect(again.status).toBe('already_mine');
          expect(again.locks.map((lock) => lock.id)).toEqual([first.locks[0]!.id]);
          expect(again.locks[0]!.fence).toBe(first.locks[0]!.fence);
        }
        expect((await a.acquire(['src/a.ts', 'src/lib/x.ts'])).status).toBe('already_mine');
        expect((await a.list()).locks).toHaveLength(1);
      });

      it('does not count a narrower own lock as covering a wider scope', async () => {
        const { a } = await family();
        await a.acquire('src/*.ts');
        const wider = await a.acquire('src/**');
        expect(wider.status).toBe('acquired');
        expect(wider.locks[0]!.scope).toBe('src/**');
      });

      it('is all or nothing over several scopes', async () => {
        const { a, b } = await family();
        await b.acquire('@merge');
        const refused = await a.acquire(['src/a.ts', '@merge', 'docs/**']);
        expect(refused.status).toBe('held');
        expect(refused.locks).toEqual([]);
        expect(refused.conflicts.map((lock) => [lock.scope, lock.agent_id])).toEqual([['@merge', 'B']]);
        expect(scopes((await a.list()).locks)).toEqual(['@merge']);

        await b.release('@merge');
        const granted = await a.acquire(['src/a.ts', '@merge', 'docs/**']);
        expect(granted.status).toBe('acquired');
        expect(scopes(granted.locks)).toEqual(['@merge', 'docs/**', 'src/a.ts']);
        expect(new Set(granted.locks.map((lock) => lock.fence)).size).toBe(3);
      });

      it('lists every blocking lock when several conflict', async () => {
        const { a, b } = await family();
        await a.acquire('src/a.ts');
        await b.acquire('src/lib/**');
        const e = await agent('E');
        const result = await e.acquire('src/**');
        expect(result.status).toBe('held');
        expect(holders(result.conflicts)).toEqual(['A', 'B']);
      });

      it('keeps resources and path scopes apart', async () => {
        const { a, b } = await family();
        await a.acquire('@src');
        expect((await b.acquire('src/**')).status).toBe('acquired');
        expect((await b.acquire('@merge')).status).toBe('acquired');
        const held = await a.acquire('@merge');
        expect(held.status).toBe('held');
        expect(held.conflicts[0]).toMatchObject({
          scope: '@merge',
          kind: 'resource',
          agent_id: 'B',
          tree: null,
        });
        expect((await a.acquire('@merge2')).status).toBe('acquired');
      });

      it('treats a file named like a resource as a path scope that the whole tree covers', async () => {
        const { a, b } = await family();
        const file = await a.acquire('./@merge');
        expect(file.status).toBe('acquired');
        expect(file.locks[0]).toMatchObject({ scope: '@merge', kind: 'path' });
        // The resource of the same name is another thing: free.
        expect((await b.acquire('@merge')).status).toBe('acquired');
        // But the path lock must still exclude every path scope that matches it.
        const whole = await b.acquire('**');
        expect(whole.status).toBe('held');
        expect(whole.conflicts.map((lock) => lock.kind)).toEqual(['path']);
      });

      it('grants shared with shared and refuses exclusive against shared', async () => {
        const { a, b } = await family();
        const first = await a.acquire('docs/**', { shared: true });
        expect(first.locks[0]!.mode).toBe('shared');
        expect((await b.acquire('docs/**', { shared: true })).status).toBe('acquired');
        const e = await agent('E');
        expect((await e.acquire('docs/a.md', { shared: true })).status).toBe('acquired');
        const f = await agent('F');
        const exclusive = await f.acquire('docs/a.md');
        expect(exclusive.status).toBe('held');
        expect(holders(exclusive.conflicts)).toEqual(['A', 'B', 'E']);
      });

      it('refuses shared against exclusive', async () => {
        const { a, b } = await family();
        await a.acquire('@db');
        const shared = await b.acquire('@db', { shared: true });
        expect(shared.status).toBe('held');
        expect(shared.conflicts[0]!.agent_id).toBe('A');
      });

      it('does not count an own shared lock as covering an exclusive request', async () => {
        const { a, b } = await family();
        await a.acquire('@db', { shared: true });
        await b.acquire('@db', { shared: true });
        const upgrade = await a.acquire('@db');
        expect(upgrade.status).toBe('held');
        expect(holders(upgrade.conflicts)).toEqual(['B']);
        expect((await a.acquire('@db', { shared: true })).status).toBe('already_mine');
      });

      it('compares path scopes only within one tree key, resources across trees', async () => {
        const other = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-contract-tree2-')));
        try {
          const a = await agent('A');
          const b = await agent('B', { dir: other });
          expect(a.tree.key).not.toBe(b.tree.key);
          await a.acquire(['src/**', '@merge']);
          expect((await b.acquire('src/**')).status).toBe('acquired');
          expect((await b.acquire('@merge')).status).toBe('held');

          // AGENT_LOCK_TREE gives both clones one key: their paths now conflict.
          const env = { AGENT_LOCK_TREE: 'shared-clone' };
          const c = await agent('C2', { dir: tree, env });
          const d = await agent('D2', { dir: other, env });
          expect(c.tree.key).toBe(d.tree.key);
          await c.acquire('docs/**');
          expect((await d.acquire('docs/a.md')).status).toBe('held');
        } finally {
          rmSync(other, { recursive: true, force: true });
        }
      });

      it('grants exactly one of many concurrent claims on one scope', async () => {
        const agents = await Promise.all(Array.from({ length: 8 }, (_, i) => agent(`racer-${i}`)));
        const pending = agents.map((locks) => locks.acquire('lib/**'));
        const results = await Promise.all(pending);
        expect(results.filter((r) => r.status === 'acquired')).toHaveLength(1);
        expect(results.filter((r) => r.status === 'held')).toHaveLength(7);
        expect((await agents[0]!.list()).locks).toHaveLength(1);
      });
    });

    describe('family', () => {
      it('lets a child claim inside its parent’s lock', async () => {
        const { a, c } = await family();
        await a.acquire('src/**');
        const result = await c.acquire('src/a.ts');
        expect(result.status).toBe('acquired');
        expect(result.locks[0]).toMatchObject({ agent_id: 'C', parent_agent_id: 'A' });
      });

      it('answers parent_scope to a child asking for its parent’s exact scope', async () => {
        const { a, c } = await family();
        const parent = await a.acquire('src/**');
        const result = await c.acquire('src/**');
        expect(result.status).toBe('parent_scope');
        expect(result.locks).toEqual([]);
        expect(result.conflicts.map((lock) => lock.id)).toEqual([parent.locks[0]!.id]);
        expect((await c.acquire(['docs/**', 'src'])).status).toBe('parent_scope');
        expect((await c.mine()).locks).toEqual([]);
      });

      it('lets a child’s lock block its parent', async () => {
        const { a, c } = await family();
        await c.acquire('src/a.ts');
        for (const asked of ['src/a.ts', 'src/**']) {
          const result = await a.acquire(asked);
          expect(result.status).toBe('held');
          expect(holders(result.conflicts)).toEqual(['C']);
        }
      });

      it('makes siblings block each other, also inside their parent’s lock', async () => {
        const { a, c, d } = await family();
        await a.acquire('src/**');
        await c.acquire('src/a.ts');
        const result = await d.acquire('src/a.ts');
        expect(result.status).toBe('held');
        expect(holders(result.conflicts)).toEqual(['C']);
        expect((await d.acquire('src/lib/x.ts')).status).toBe('acquired');
      });

      it('blocks an unrelated agent with both parent’s and child’s locks', async () => {
        const { a, b, c } = await family();
        await a.acquire('src/**');
        await c.acquire('src/a.ts');
        const result = await b.acquire('src/a.ts');
        expect(result.status).toBe('held');
        expect(holders(result.conflicts)).toEqual(['A', 'C']);
      });

      it('lets a parent see, note, renew and release its child’s lock', async () => {
        const { a, b, c } = await family();
        await c.acquire('src/a.ts', { ttl: 60 });
        expect(scopes((await a.mine()).locks)).toEqual(['src/a.ts']);
        expect((await b.mine()).locks).toEqual([]);

        const noted = await a.note('src/a.ts', 'parent checked in');
        expect(noted.status).toBe('noted');
        expect(noted.locks[0]!.notes.map((n) => n.text)).toEqual(['parent checked in']);

        now += 30 * SECOND;
        const renewed = await a.renew('src/a.ts');
        expect(renewed.status).toBe('renewed');
        expect(renewed.locks[0]!.expires_at).toBe(new Date(now + 60 * SECOND).toISOString());

        const released = await a.release('src/a.ts');
        expect(released.status).toBe('released');
        expect((await c.mine()).locks).toEqual([]);
      });

      it('does not let a child, a sibling or a stranger release locks it does not own', async () => {
        const { a, b, c, d } = await family();
        await a.acquire('@parent');
        await c.acquire('@child');
        expect((await c.release('@parent')).status).toBe('refused');
        expect((await d.release('@child')).status).toBe('refused');
        expect((await b.release('@child')).status).toBe('refused');
        expect((await d.note('@child', 'not mine')).status).toBe('refused');
        expect((await c.renew('@parent')).status).toBe('refused');
        expect(scopes((await a.list()).locks)).toEqual(['@child', '@parent']);
      });
    });

    describe('release', () => {
      it('answers released, not_found and refused', async () => {
        const { a, b } = await family();
        await a.acquire('src/a.ts');
        const refused = await b.release('src/a.ts');
        expect(refused.status).toBe('refused');
        expect(holders(refused.conflicts)).toEqual(['A']);
        expect((await b.acquire('src/a.ts')).status).toBe('held');

        expect((await a.release('docs/x.md')).status).toBe('not_found');

        const released = await a.release('src/a.ts');
        expect(released.status).toBe('released');
        expect(scopes(released.locks)).toEqual(['src/a.ts']);
        expect((await a.release('src/a.ts')).status).toBe('not_found');
        expect((await b.acquire('src/a.ts')).status).toBe('acquired');
      });

      it('releases by the exact scope, not by a scope that covers it', async () => {
        const { a } = await family();
        await a.acquire('src/**');
        expect((await a.release('src/a.ts')).status).toBe('not_found');
        expect((await a.list()).locks).toHaveLength(1);
      });

      it('releases all of the caller’s and its children’s locks with {all: true}', async () => {
        const { a, b, c } = await family();
        await a.acquire(['@one', 'src/**']);
        await c.acquire('docs/a.md');
        await b.acquire('@two');
        const result = await a.release({ all: true });
        expect(result.status).toBe('released');
        expect(scopes(result.locks)).toEqual(['@one', 'docs/a.md', 'src/**']);
        expect(scopes((await b.list()).locks)).toEqual(['@two']);
      });

      it('releases with the lease token from another identity', async () => {
        const { a, b } = await family();
        const taken = await a.acquire('@merge');
        const token = taken.locks[0]!.token!;
        expect((await b.release('@merge', { token: 'not-the-token' })).status).toBe('refused');
        const released = await b.release('@merge', { token });
        expect(released.status).toBe('released');
        expect((await a.list()).locks).toEqual([]);
      });
    });

    describe('renew and leases', () => {
      it('renews a live lease from now, with the same or a new TTL', async () => {
        const { a, b } = await family();
        const taken = await a.acquire('@lease', { ttl: 30 });
        expect(taken.locks[0]!.expires_at).toBe(new Date(START + 30 * SECOND).toISOString());
        now += 20 * SECOND;
        const renewed = await a.renew('@lease');
        expect(renewed.status).toBe('renewed');
        expect(renewed.locks[0]!.expires_at).toBe(new Date(now + 30 * SECOND).toISOString());
        expect(renewed.locks[0]!.fence).toBe(taken.locks[0]!.fence);
        now += 20 * SECOND;
        expect((await b.acquire('@lease')).status).toBe('held');
        const longer = await a.renew('@lease', { ttl: 120 });
        expect(longer.locks[0]!.expires_at).toBe(new Date(now + 120 * SECOND).toISOString());
      });

      it('answers expired once the lease has lapsed, and never revives it', async () => {
        const { a, b } = await family();
        const taken = await a.acquire('@lease', { ttl: 10 });
        now += 11 * SECOND;
        expect((await a.renew('@lease')).status).toBe('expired');
        expect((await a.renew('@lease')).status).toBe('expired');
        expect((await a.list()).locks).toEqual([]);
        expect((await b.check('@lease')).status).toBe('free');
        const again = await a.acquire('@lease', { ttl: 10 });
        expect(again.status).toBe('acquired');
        expect(again.locks[0]!.fence).toBeGreaterThan(taken.locks[0]!.fence);
      });

      it('answers expired to another identity renewing a lapsed lease with its token', async () => {
        const { a, b } = await family();
        const token = (await a.acquire('@lease', { ttl: 10 })).locks[0]!.token!;
        now += 10 * SECOND;
        expect((await b.renew('@lease', { token })).status).toBe('expired');
      });

      it('renews with the lease token from another identity', async () => {
        const { a, b } = await family();
        const token = (await a.acquire('@lease', { ttl: 10 })).locks[0]!.token!;
        now += 5 * SECOND;
        const renewed = await b.renew('@lease', { token });
        expect(renewed.status).toBe('renewed');
        expect(renewed.locks[0]!.agent_id).toBe('A');
        expect(renewed.locks[0]!.expires_at).toBe(new Date(now + 10 * SECOND).toISOString());
      });

      it('answers not_found for a scope nobody holds, refused for someone else’s', async () => {
        const { a, b } = await family();
        expect((await a.renew('@nothing')).status).toBe('not_found');
        await a.acquire('@lease', { ttl: 30 });
        const refused = await b.renew('@lease');
        expect(refused.status).toBe('refused');
        expect(holders(refused.conflicts)).toEqual(['A']);
      });

      it('frees the scope when the TTL passes', async () => {
        const { a, b } = await family();
        await a.acquire('src/**', { ttl: 5 });
        now += 4 * SECOND;
        expect((await b.acquire('src/a.ts')).status).toBe('held');
        now += 1 * SECOND;
        const after = await b.acquire('src/a.ts');
        expect(after.status).toBe('acquired');
        expect(holders((await a.list()).locks)).toEqual(['B']);
      });

      it('keeps an expired lease with notes as an orphan', async () => {
        const { a, b } = await family();
        await a.acquire('@job', { ttl: 5 });
        await a.note('@job', 'step 1 done');
        now += 6 * SECOND;
        const listed = await b.list();
        expect(listed.locks.map((lock) => [lock.scope, lock.status])).toEqual([['@job', 'orphaned']]);
        expect((await b.acquire('@job')).status).toBe('interrupted');
      });

      it('uses AGENT_LOCK_TTL_SECONDS as the default lease', async () => {
        const a = await agent('A', { env: { AGENT_LOCK_TTL_SECONDS: '15' } });
        const taken = await a.acquire('@lease');
        expect(taken.locks[0]!.ttl_seconds).toBe(15);
        expect(taken.locks[0]!.expires_at).toBe(new Date(START + 15 * SECOND).toISOString());
      });
    });

    describe('check', () => {
      it('answers free, mine and held, and takes nothing', async () => {
        const { a, b } = await family();
        expect((await a.check('src/a.ts')).status).toBe('free');
        expect((await a.list()).locks).toEqual([]);

        await a.acquire('src/**');
        const mine = await a.check('src/a.ts');
        expect(mine.status).toBe('mine');
        expect(scopes(mine.locks)).toEqual(['src/**']);

        const held = await b.check(['docs/a.md', 'src/a.ts']);
        expect(held.status).toBe('held');
        expect(holders(held.conflicts)).toEqual(['A']);
        expect((await b.check('docs/a.md')).status).toBe('free');
        expect((await b.list()).locks).toHaveLength(1);
      });

      it('answers free to a shared check against shared locks', async () => {
        const { a, b } = await family();
        await a.acquire('@db', { shared: true });
        expect((await b.check('@db', { shared: true })).status).toBe('free');
        expect((await b.check('@db')).status).toBe('held');
      });
    });

    describe('note', () => {
      it('answers noted, not_found and refused', async () => {
        const { a, b } = await family();
        await a.acquire('src/a.ts');
        expect((await a.note('src/a.ts', 'step 1')).status).toBe('noted');
        const second = await a.note('src/a.ts', 'step 2');
        expect(second.status).toBe('noted');
        expect(second.locks[0]!.notes.map((n) => n.text)).toEqual(['step 1', 'step 2']);

        const refused = await b.note('src/a.ts', 'mine now');
        expect(refused.status).toBe('refused');
        expect(holders(refused.conflicts)).toEqual(['A']);
        expect((await a.note('docs/x.md', 'nothing here')).status).toBe('not_found');

        const listed = (await b.list()).locks[0]!;
        expect(listed.notes.map((n) => n.text)).toEqual(['step 1', 'step 2']);
      });
    });

    describe('orphans', () => {
      it('orphans a lock with notes once its holder process is dead', async () => {
        const { b } = await family();
        const taken = await lockOfDeadHolder('src/lib/**', ['step 1', 'step 2']);
        const listed = await b.list();
        expect(listed.locks).toHaveLength(1);
        expect(listed.locks[0]).toMatchObject({
          id: taken.id,
          scope: 'src/lib/**',
          agent_id: 'Z',
          status: 'orphaned',
          fence: taken.fence,
          intent: 'half-done work',
        });
        expect(listed.locks[0]!.notes.map((n) => n.text)).toEqual(['step 1', 'step 2']);
      });

      it('lets an orphan block nobody, but answers interrupted on its exact scope', async () => {
        const { b, c } = await family();
        const taken = await lockOfDeadHolder('src/lib/**', ['step 1']);
        const exact = await b.acquire('src/lib/**');
        expect(exact.status).toBe('interrupted');
        expect(exact.locks).toEqual([]);
        expect(exact.conflicts.map((lock) => [lock.id, lock.status])).toEqual([[taken.id, 'orphaned']]);

        expect((await c.check('src/lib/a.ts')).status).toBe('free');
        expect((await c.acquire('src/lib/a.ts')).status).toBe('acquired');
        expect((await b.acquire('docs/**')).status).toBe('acquired');
      });

      it('resumes an orphan: the notes come along, with a new fence and token', async () => {
        const { a, b } = await family();
        const taken = await lockOfDeadHolder('src/lib/**', ['step 1', 'step 2']);
        await a.acquire('@unrelated');
        const resumed = await b.resume('src/lib/**');
        expect(resumed.status).toBe('resumed');
        const lock = resumed.locks[0]!;
        expect(lock).toMatchObject({ scope: 'src/lib/**', agent_id: 'B', status: 'active' });
        expect(lock.notes.map((n) => n.text)).toEqual(['step 1', 'step 2']);
        expect(lock.fence).toBeGreaterThan(taken.fence);
        expect(typeof lock.token).toBe('string');
        expect(lock.token).not.toBe(taken.token);

        const listed = (await a.list()).locks.filter((l) => l.scope === 'src/lib/**');
        expect(listed.map((l) => [l.agent_id, l.status])).toEqual([['B', 'active']]);
        expect((await b.note('src/lib/**', 'step 3')).status).toBe('noted');
        expect((await a.acquire('src/lib/a.ts')).status).toBe('held');
        expect((await b.resume('src/lib/**')).status).toBe('not_found');
      });

      it('answers not_found to resume without an orphan, held when a live lock conflicts', async () => {
        const { a, b } = await family();
        expect((await b.resume('src/lib/**')).status).toBe('not_found');
        await lockOfDeadHolder('src/lib/**', ['step 1']);
        await a.acquire('src/lib/a.ts');
        const held = await b.resume('src/lib/**');
        expect(held.status).toBe('held');
        expect(holders(held.conflicts)).toEqual(['A']);
        expect((await b.list()).locks.map((l) => l.status).sort()).toEqual(['active', 'orphaned']);
      });

      it('breaks an orphan and records who broke what', async () => {
        const { b } = await family();
        const taken = await lockOfDeadHolder('src/lib/**', ['step 1']);
        const broken = await b.breakLock('src/lib/**', { reason: 'abandoned' });
        expect(broken.status).toBe('broken');
        expect(broken.locks.map((l) => [l.id, l.status])).toEqual([[taken.id, 'orphaned']]);
        expect((await b.list()).locks).toEqual([]);
        expect((await b.acquire('src/lib/**')).status).toBe('acquired');

        const events = await b.events();
        expect(events.find((e) => e.type === 'broken')).toMatchObject({
          type: 'broken',
          by: 'B',
          reason: 'abandoned',
          lock_id: taken.id,
          scope: 'src/lib/**',
          agent_id: 'Z',
          fence: taken.fence,
        });
      });

      it('breaks any live lock without an ownership check, and answers not_found on a free scope', async () => {
        const { a, b } = await family();
        await a.acquire('@merge');
        expect((await b.breakLock('@nothing')).status).toBe('not_found');
        const broken = await b.breakLock('@merge');
        expect(broken.status).toBe('broken');
        expect(holders(broken.locks)).toEqual(['A']);
        expect((await b.acquire('@merge')).status).toBe('acquired');
        const events = await a.events();
        expect(events.map((e) => [e.type, e.agent_id, e.by, e.scope])).toEqual([
          ['acquired', 'A', null, '@merge'],
          ['broken', 'A', 'B', '@merge'],
          ['acquired', 'B', null, '@merge'],
        ]);
      });

      it('simply reaps a dead holder’s lock that has no notes', async () => {
        const { b } = await family();
        await lockOfDeadHolder('src/a.ts', []);
        expect((await b.list()).locks).toEqual([]);
        const result = await b.acquire('src/a.ts');
        expect(result.status).toBe('acquired');
      });

      it('reaps a dead holder’s lock at the next acquire of any scope', async () => {
        const { b } = await family();
        await lockOfDeadHolder('src/a.ts', []);
        expect((await b.acquire('src/a.ts')).status).toBe('acquired');
      });
    });

    describe('liveness', () => {
      it('counts a holder whose pid now runs another process (other start time) as gone', async () => {
        const { b } = await family();
        const reused = { host: hostName(), pid: process.pid, started: 'an-earlier-process' };
        const z = await agent('Z', { holder: reused });
        await z.acquire('src/a.ts');
        await z.acquire('@job');
        await z.note('@job', 'half done');
        const listed = await b.list();
        expect(listed.locks.map((l) => [l.scope, l.status])).toEqual([['@job', 'orphaned']]);
        expect((await b.acquire('src/a.ts')).status).toBe('acquired');
      });

      it('judges a holder on another host by age: kept inside the stale window, gone after it', async () => {
        const env = { AGENT_LOCK_STALE_MINUTES: '1' };
        const remote = { host: 'another-host.example', pid: 4242, started: 'boot:1' };
        const z = await agent('Z', { holder: remote, env });
        const b = await agent('B', { env });
        await z.acquire(['src/a.ts', '@job']);
        await z.note('@job', 'remote work');
        now += 30 * SECOND;
        expect((await b.acquire('src/a.ts')).status).toBe('held');
        now += 31 * SECOND;
        const listed = await b.list();
        expect(listed.locks.map((l) => [l.scope, l.status])).toEqual([['@job', 'orphaned']]);
        expect((await b.acquire('src/a.ts')).status).toBe('acquired');
      });
    });

    describe('stale', () => {
      it('flags a live holder’s untouched lock as stale, never removes it, and clears the flag on touch', async () => {
        const env = { AGENT_LOCK_STALE_MINUTES: '1' };
        const a = await agent('A', { env });
        const b = await agent('B', { env });
        await a.acquire('src/**');
        expect((await b.list()).locks[0]!.stale).toBe(false);

        now += 61 * SECOND;
        const listed = await b.list();
        expect(listed.locks).toHaveLength(1);
        expect(listed.locks[0]).toMatchObject({ stale: true, status: 'active', agent_id: 'A' });
        expect((await b.acquire('src/a.ts')).status).toBe('held');

        await a.note('src/**', 'still here');
        expect((await b.list()).locks[0]!.stale).toBe(false);

        now += 61 * SECOND;
        expect((await b.list()).locks[0]!.stale).toBe(true);
        expect((await a.acquire('src/a.ts')).status).toBe('already_mine');
        expect((await b.list()).locks[0]!.stale).toBe(false);
      });

      it('clears the stale flag on renew', async () => {
        const env = { AGENT_LOCK_STALE_MINUTES: '1' };
        const a = await agent('A', { env });
        await a.acquire('@lease', { ttl: 3600 });
        now += 61 * SECOND;
        expect((await a.list()).locks[0]!.stale).toBe(true);
        await a.renew('@lease');
        expect((await a.list()).locks[0]!.stale).toBe(false);
      });

      it('does not flag a lock before the default window of 120 minutes', async () => {
        const a = await agent('A');
        await a.acquire('src/**');
        now += 119 * 60 * SECOND;
        expect((await a.list()).locks[0]!.stale).toBe(false);
        now += 2 * 60 * SECOND;
        expect((await a.list()).locks[0]!.stale).toBe(true);
      });
    });

    describe('fences', () => {
      it('strictly increase across every grant of the store, whoever takes it', async () => {
        const { a, b, c } = await family();
        const fences: number[] = [];
        const take = (locks: readonly Lock[]) => {
          for (const lock of [...locks].sort((x, y) => x.fence - y.fence)) fences.push(lock.fence);
        };
        take((await a.acquire('src/a.ts')).locks);
        take((await b.acquire('@merge')).locks);
        take((await a.acquire(['docs/**', '@x', '@y'])).locks);
        take((await c.acquire('src/lib/a.ts')).locks);
        await a.release('src/a.ts');
        take((await b.acquire('src/a.ts')).locks);
        await b.release('@merge');
        take((await a.acquire('@merge', { ttl: 1 })).locks);
        now += 2 * SECOND;
        take((await b.acquire('@merge')).locks);
        await lockOfDeadHolder('@job', ['half']).then((lock) => fences.push(lock.fence));
        take((await b.resume('@job')).locks);

        // A new handle on the same store, as a later process would open it.
        const e = await agent('E');
        take((await e.acquire('@later')).locks);

        expect(fences).toHaveLength(12);
        for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
      });
    });

    describe('list and mine', () => {
      it('lists orphans and active locks of everyone, mine only the caller’s family', async () => {
        const { a, b, c } = await family();
        await lockOfDeadHolder('@job', ['half']);
        await a.acquire('src/**', { intent: 'refactor' });
        await c.acquire('src/a.ts');
        await b.acquire('@merge', { shared: true });

        const listed = await b.list();
        expect(listed.status).toBe('listed');
        expect(listed.locks.map((l) => [l.scope, l.agent_id, l.status]).sort()).toEqual([
          ['@job', 'Z', 'orphaned'],
          ['@merge', 'B', 'active'],
          ['src/**', 'A', 'active'],
          ['src/a.ts', 'C', 'active'],
        ]);
        for (const lock of listed.locks) expect(lock.token).toBeUndefined();

        expect(scopes((await a.mine()).locks)).toEqual(['src/**', 'src/a.ts']);
        expect(scopes((await b.mine()).locks)).toEqual(['@merge']);
        expect(scopes((await c.mine()).locks)).toEqual(['src/a.ts']);
      });

      it('sees locks taken through another handle on the same store', async () => {
        const a = await agent('A');
        await a.acquire('@merge');
        const later = await agent('B');
        expect(holders((await later.list()).locks)).toEqual(['A']);
      });
    });
  });
}
