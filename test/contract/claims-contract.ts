/**
 * Claims on edit, on every store: an agent's hook checks the files an edit writes and claims the
 * free ones for it in one decision; the claim lives by an idle lease renewed by edits (written only
 * when due), by its harness process, and until the agent's turn ends. The race runs real hook
 * processes (an in-process race on the memory store, which no other process can open).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backends/backend.js';
import type { StoreEvent } from '../../src/core/events.js';
import type { Holder } from '../../src/core/lock.js';
import { hostName, startStamp } from '../../src/host/process.js';
import { type Locks, openLocks } from '../../src/locks.js';

export interface ClaimStore {
  connect(): Backend;
  cleanup(): Promise<void>;
}

const bin = path.resolve(import.meta.dirname, '../../bin/alock.js');
const LEASE = 15 * 60_000;

/**
 * The environment of a real hook process on this kind of store (AGENT_LOCK_DIR is added), or null
 * for a store no other process can open (memory).
 */
export type ProcessEnv = (() => Record<string, string>) | null;

export function describeClaimContract(
  name: string,
  makeStore: () => Promise<ClaimStore>,
  processEnv: ProcessEnv,
): void {
  describe(`claims: ${name}`, () => {
    let store: ClaimStore;
    let tree: string;
    let opened: Locks[];
    let children: ChildProcess[];
    let shift: number;
    const clock = () => Date.now() + shift;

    beforeEach(async () => {
      store = await makeStore();
      tree = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'alock-claims-tree-')));
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

    const edit = (locks: Locks, file: string, tool = 'Edit') => locks.claim(file, { tool, leaseMs: LEASE });
    const kinds = (events: readonly StoreEvent[]) => events.map((e) => `${e.type} ${e.scope} ${e.agent_id}`);

    it('claims a free file in the decision that checks it, and refuses another agent naming the claim', async () => {
      const a = await agent('A');
      const b = await agent('B');
      const first = await edit(a, 'src/a.ts');
      expect(first.status).toBe('claimed');
      expect(first.locks[0]).toMatchObject({
        scope: 'src/a.ts',
        agent_id: 'A',
        mode: 'exclusive',
        ttl_seconds: LEASE / 1000,
        claim: { tool: 'Edit' },
      });
      const refused = await edit(b, 'src/a.ts', 'Write');
      expect(refused.status).toBe('held');
      expect(refused.conflicts.map((l) => [l.agent_id, l.claim?.tool])).toEqual([['A', 'Edit']]);
      // A claim is a lock like any other: check, acquire and list see it.
      expect((await b.check('src/a.ts')).status).toBe('held');
      expect((await b.acquire('src/a.ts')).status).toBe('held');
      expect((await b.list()).locks.map((l) => [l.scope, l.claim?.tool ?? null])).toEqual([
        ['src/a.ts', 'Edit'],
      ]);
      expect(kinds(await a.events())).toEqual(['claimed src/a.ts A']);
    });

    it("takes no claim where the agent's or its parent's own lock covers the file", async () => {
      const a = await agent('A');
      const child = await agent('A-sub', { parent: 'A' });
      expect((await a.acquire('src/**', { intent: 'refactor' })).status).toBe('acquired');
      const own = await edit(a, 'src/a.ts');
      expect(own.status).toBe('mine');
      expect(own.locks.map((l) => [l.scope, l.claim])).toEqual([['src/**', null]]);
      const sub = await edit(child, 'src/b.ts');
      expect(sub.status).toBe('mine');
      expect((await a.list()).locks).toHaveLength(1);
      expect(kinds(await a.events())).toEqual(['acquired src/** A']);
    });

    it("a sub-agent's claim does not block its parent, and blocks its sibling", async () => {
      await agent('P');
      const parent = await agent('P');
      const one = await agent('P-1', { parent: 'P' });
      const two = await agent('P-2', { parent: 'P' });
      expect((await edit(one, 'src/a.ts')).status).toBe('claimed');
      const sibling = await edit(two, 'src/a.ts');
      expect(sibling.status).toBe('held');
      expect(sibling.conflicts.map((l) => l.agent_id)).toEqual(['P-1']);
      // The parent edits on: its child's edit is under way on its behalf; nothing new is claimed.
      const own = await edit(parent, 'src/a.ts');
      expect(own.status).toBe('mine');
      expect(own.locks.map((l) => l.agent_id)).toEqual(['P-1']);
      expect((await parent.check('src/a.ts')).status).not.toBe('held');
      // A claim of the parent's does not block its children (as any lock of a parent).
      expect((await edit(parent, 'src/b.ts')).status).toBe('claimed');
      expect((await edit(one, 'src/b.ts')).status).toBe('mine');
    });

    it('renews the idle lease only once half of it has passed: most edits write nothing', async () => {
      const a = await agent('A');
      const taken = await edit(a, 'src/a.ts');
      const claimedUntil = Date.parse(taken.locks[0]!.expires_at!);
      // Ten edits within the first half of the lease: no write, no event.
      for (let i = 1; i <= 10; i++) {
        shift = i * 30_000;
        const again = await edit(a, 'src/a.ts');
        expect(again.status).toBe('mine');
        expect(Date.parse(again.locks[0]!.expires_at!)).toBe(claimedUntil);
      }
      expect(kinds(await a.events())).toEqual(['claimed src/a.ts A']);
      // Past half the lease: one edit moves it on, the next ones write nothing again.
      shift = LEASE / 2 + 1000;
      const renewed = await edit(a, 'src/a.ts');
      const newUntil = Date.parse(renewed.locks[0]!.expires_at!);
      expect(newUntil).toBeGreaterThan(claimedUntil);
      expect(renewed.locks[0]!.claim!.last_edit_at).toBe(renewed.locks[0]!.updated_at);
      shift += 60_000;
      expect(Date.parse((await edit(a, 'src/a.ts')).locks[0]!.expires_at!)).toBe(newUntil);
      const events = await a.events();
      expect(kinds(events)).toEqual(['claimed src/a.ts A', 'renewed src/a.ts A']);
      expect(events[1]!.reason).toBe('edited (Edit)');
    });

    it('lapses after the idle lease with no edit, recorded as expired with the reason', async () => {
      const a = await agent('A');
      const b = await agent('B');
      expect((await edit(a, 'src/a.ts')).status).toBe('claimed');
      shift = LEASE + 1000;
      expect((await edit(b, 'src/a.ts')).status).toBe('claimed');
      const events = await b.events();
      expect(kinds(events)).toEqual(['claimed src/a.ts A', 'expired src/a.ts A', 'claimed src/a.ts B']);
      expect(events[1]!.reason).toBe('no edit within its idle lease');
    });

    it('ends when the harness process that made it is gone, before its lease', async () => {
      const harness = spawn('sleep', ['60'], { stdio: 'ignore' });
      children.push(harness);
      await once(harness, 'spawn');
      const pid = harness.pid!;
      const a = await agent('A', { holder: { host: hostName(), pid, started: startStamp(pid) } });
      const b = await agent('B');
      expect((await edit(a, 'src/a.ts')).status).toBe('claimed');
      expect((await edit(b, 'src/a.ts')).status).toBe('held');
      const exited = once(harness, 'exit');
      harness.kill('SIGKILL');
      await exited;
      expect((await edit(b, 'src/a.ts')).status).toBe('claimed');
      const events = await b.events();
      expect(kinds(events).slice(-2)).toEqual(['reaped src/a.ts A', 'claimed src/a.ts B']);
      expect(events.at(-2)!.reason).toBe('holder gone');
    });

    it("turn end releases only that agent's claims (and its children's), never a lock or another's claim", async () => {
      const a = await agent('A');
      const aSub = await agent('A-sub', { parent: 'A' });
      const b = await agent('B');
      expect((await edit(a, 'src/a.ts')).status).toBe('claimed');
      expect((await edit(aSub, 'src/sub.ts')).status).toBe('claimed');
      expect((await a.acquire('@deploy', { intent: 'ship' })).status).toBe('acquired');
      expect((await edit(b, 'src/b.ts')).status).toBe('claimed');
      // A sub-agent's end takes its own claims only.
      const subEnd = await aSub.endClaims('turn ended (test SubagentStop)');
      expect(subEnd.locks.map((l) => l.scope)).toEqual(['src/sub.ts']);
      const end = await a.endClaims('turn ended (test Stop)');
      expect(end.locks.map((l) => l.scope)).toEqual(['src/a.ts']);
      expect((await b.list()).locks.map((l) => `${l.scope} ${l.agent_id}`).sort()).toEqual([
        '@deploy A',
        'src/b.ts B',
      ]);
      const released = (await b.events()).filter((e) => e.type === 'released');
      expect(released.map((e) => [e.scope, e.reason])).toEqual([
        ['src/sub.ts', 'turn ended (test SubagentStop)'],
        ['src/a.ts', 'turn ended (test Stop)'],
      ]);
      // Nothing of A's left to end: no write, no event.
      const count = (await b.events()).length;
      expect((await a.endClaims('turn ended (test Stop)')).locks).toEqual([]);
      expect(await b.events()).toHaveLength(count);
      // release --all and break end claims as any lock.
      expect((await b.breakLock('src/b.ts', { reason: 'stuck' })).status).toBe('broken');
      expect((await edit(b, 'src/c.ts')).status).toBe('claimed');
      expect((await b.release({ all: true })).locks.map((l) => l.scope)).toEqual(['src/c.ts']);
    });

    it('claim and check are one decision: of 20 agents editing one free file at once, exactly one wins', async () => {
      const env = processEnv?.();
      let results: { allowed: boolean; agent: string }[];
      if (env === undefined) {
        // The memory store lives in this process: 20 sessions claim at once through one event loop.
        const agents = await Promise.all(Array.from({ length: 20 }, (_, i) => agent(`racer-${i}`)));
        const outcomes = await Promise.all(agents.map((a) => edit(a, 'src/race.ts')));
        results = outcomes.map((o, i) => ({ allowed: o.status === 'claimed', agent: `racer-${i}` }));
      } else {
        // A checkout of its own, as agents have: the tree is this folder whatever lies above it.
        expect(spawnSync('git', ['init', '-q'], { cwd: tree }).status).toBe(0);
        results = await raceHooks(tree, { ...env, AGENT_LOCK_DIR: path.join(tree, '.store') }, 20, children);
      }
      const winners = results.filter((r) => r.allowed);
      // On a failure, what the file store recorded for the file (its tree and scope) says why.
      const log = path.join(tree, '.store', 'locks.log');
      const recorded = existsSync(log)
        ? readFileSync(log, 'utf8')
            .split('\n')
            .filter((line) => line.includes('race.ts'))
            .join('\n')
        : '';
      expect(winners, `${JSON.stringify(winners)}\n${recorded}`).toHaveLength(1);
      const watcher = env === undefined ? await agent('watcher') : null;
      if (watcher !== null) {
        const held = (await watcher.list()).locks;
        expect(held.map((l) => [l.scope, l.agent_id])).toEqual([['src/race.ts', winners[0]!.agent]]);
      }
    });
  });
}

/**
 * `count` real hook processes (`alock hooks claude-pre-tool-use`, each its own Claude session) edit
 * one file: each is held at a gate (its payload is written only once all have started) and released
 * together. Allowed: no output; refused: a deny.
 */
async function raceHooks(
  tree: string,
  env: Record<string, string>,
  count: number,
  children: ChildProcess[],
): Promise<{ allowed: boolean; agent: string }[]> {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$)/.test(key)) continue;
    clean[key] = value;
  }
  const runs = Array.from({ length: count }, (_, i) => {
    const child = spawn(process.execPath, [bin, 'hooks', 'claude-pre-tool-use'], {
      cwd: tree,
      env: { ...clean, AGENT_LOCK_REDIS_PROBE: 'off', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    children.push(child);
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
    });
    child.stderr!.on('data', (chunk) => {
      err += chunk;
    });
    const exited = once(child, 'exit');
    const session = `racer${String(i).padStart(2, '0')}x`;
    return { child, session, done: exited.then(([code]) => ({ out, err, code })) };
  });
  await Promise.all(runs.map((r) => once(r.child, 'spawn')));
  // The gate: every hook is up and reading its stdin; all payloads go now.
  for (const { child, session } of runs) {
    child.stdin!.end(
      JSON.stringify({
        session_id: session,
        hook_event_name: 'PreToolUse',
        tool_name: 'Edit',
        tool_input: { file_path: path.join(tree, 'src', 'race.ts'), old_string: 'a', new_string: 'b' },
        cwd: tree,
      }),
    );
  }
  const outs = await Promise.all(runs.map((r) => r.done));
  return outs.map(({ out, err, code }, i) => {
    const denied = out.includes('"permissionDecision":"deny"');
    if (!denied) expect({ out, err, code }).toEqual({ out: '', err: '', code: 0 });
    return { allowed: !denied, agent: `claude-${runs[i]!.session.slice(0, 8)}` };
  });
}
