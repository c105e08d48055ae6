/**
 * Crash safety and fences (docs/stores.md) on the file backend, with real processes killed
 * by SIGKILL: some at random moments while they acquire, note and release, some provably inside
 * the store's critical section (the worker announces it from inside, with the mutex held, and spins
 * until killed). Afterwards fresh processes must find a store that answers, holds no torn or
 * unreadable record, still has the lock a live survivor held throughout, and grants larger fences.
 */
import { spawn } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLI,
  churnPool,
  readLog,
  replayLog,
  requireBuild,
  scratch,
  sleep,
  startWorkers,
  type Worker,
} from './helpers.js';

const CHURNERS = 6;
const KILLS = 48;
/** Every this-many kills, one lands provably inside the critical section. */
const IN_SECTION_EVERY = 4;
/** The contract's "a few seconds": a fresh process waits this long for the mutex, then fails. */
const FEW_SECONDS = { AGENT_LOCK_MUTEX_TIMEOUT: '5' };

beforeAll(() => requireBuild());

function mutexOwnerPid(store: string): number | null {
  try {
    return (JSON.parse(readFileSync(path.join(store, 'mutex'), 'utf8')) as { pid: number }).pid;
  } catch {
    return null;
  }
}

describe('crash safety of the file store under SIGKILL', () => {
  const live: Worker[] = [];
  const dirsList: ReturnType<typeof scratch>[] = [];
  const dirs = (name: string) => {
    const made = scratch(name);
    mkdirSync(made.tree, { recursive: true });
    dirsList.push(made);
    return made;
  };
  const track = (worker: Worker) => {
    live.push(worker);
    return worker;
  };

  afterAll(async () => {
    await Promise.all(live.map((worker) => worker.kill()));
    for (const made of dirsList) made.cleanup();
  });

  it('random kills, some inside the critical section, never wedge the store or lose a live lock', async () => {
    const { store, tree } = dirs('crash');
    const opts = { store, tree };
    const [survivor] = (await startWorkers(['survivor'], opts)).map(track);
    const held = await survivor!.ask({
      op: 'acquire',
      scopes: ['survivor/**', '@survivor'],
      options: { intent: 'hold through the chaos' },
    });
    expect(held.status).toBe('acquired');
    expect((await survivor!.ask({ op: 'note', scope: 'survivor/**', text: 'still here' })).status).toBe(
      'noted',
    );
    const survivorIds = new Set(held.locks.map((lock) => lock.id));

    const pool = churnPool(track, opts);
    const { grants, errors } = pool;
    grants.push(...held.locks);
    const killedAgents = new Set<string>();
    const startChurner = pool.start;
    const harvest = pool.harvest;

    // Slots of churners; a killed one is replaced in the background so the kills need not wait.
    const churners: (Worker | null)[] = await Promise.all(Array.from({ length: CHURNERS }, startChurner));
    const refills: Promise<void>[] = [];
    const refill = (index: number) => {
      churners[index] = null;
      refills.push(
        startChurner().then((worker) => {
          churners[index] = worker;
        }),
      );
    };
    let inSection = 0;
    let randomKillsHoldingMutex = 0;
    for (let kill = 0; kill < KILLS; kill += 1) {
      let slots = churners.flatMap((worker, index) => (worker === null ? [] : [index]));
      while (slots.length === 0) {
        // Every slot is being refilled: wait for one (a macrotask, so their startups can proceed).
        await sleep(10);
        slots = churners.flatMap((worker, index) => (worker === null ? [] : [index]));
      }
      const index = slots[Math.floor(Math.random() * slots.length)]!;
      const victim = churners[index]!;
      if (kill % IN_SECTION_EVERY === IN_SECTION_EVERY - 1) {
        // Killed with the mutex held, mid-decision, while the other churners queue behind it.
        void victim.send({ op: 'spin-in-critical-section' }).catch(() => {});
        await victim.waitFor((event) => event.type === 'in-critical-section', 'the critical section');
        await victim.kill();
        inSection += 1;
      } else {
        // Let it run a random while (0 to 40 ms) first: kills land at arbitrary points of its loop.
        await sleep(Math.random() * 40);
        await victim.kill();
        if (mutexOwnerPid(store) === victim.pid) randomKillsHoldingMutex += 1;
      }
      killedAgents.add(victim.agentId);
      harvest(victim);
      refill(index);
    }
    await Promise.all(refills);
    await sleep(50);
    for (const worker of churners) {
      await worker!.kill();
      killedAgents.add(worker!.agentId);
      harvest(worker!);
    }
    expect(inSection).toBe(Math.floor(KILLS / IN_SECTION_EVERY));
    const churnGrants = grants.length - held.locks.length;
    expect(churnGrants, 'the churners must have made progress').toBeGreaterThan(20);
    const maxBefore = Math.max(...grants.map((lock) => lock.fence));

    // A fresh process: the store answers (no E_STORE_BUSY within a few seconds).
    const [fresh] = (await startWorkers(['fresh-1'], { ...opts, env: FEW_SECONDS })).map(track);
    const first = await fresh!.ask({ op: 'acquire', scopes: ['fresh/**'] });
    expect(first.status).toBe('acquired');
    const firstFence = first.locks[0]!.fence;
    expect(firstFence).toBeGreaterThan(maxBefore);
    grants.push(...first.locks);

    // After that decision the log has no torn trailing line and every line is a JSON record.
    const log = readLog(store);
    expect(log.text.endsWith('\n')).toBe(true);

    // Nothing unreadable; the survivor's locks are intact; every dead process's active lock is
    // gone (reaped), and only orphans (dead holders that left notes) remain of them.
    const listed = await fresh!.ask({ op: 'list' });
    for (const lock of listed.locks) {
      expect(lock.agent_id).not.toBe('<unknown>');
      if (survivorIds.has(lock.id)) continue;
      if (lock.agent_id === 'fresh-1') continue;
      expect(killedAgents, `lock ${lock.scope} of ${lock.agent_id}`).toContain(lock.agent_id);
      expect(lock.status, `dead holder's ${lock.scope} (${lock.agent_id})`).toBe('orphaned');
      expect(lock.notes).toBeGreaterThan(0);
    }
    const survivorLocks = listed.locks.filter((lock) => survivorIds.has(lock.id));
    expect(survivorLocks).toHaveLength(2);
    for (const lock of survivorLocks) expect(lock).toMatchObject({ agent_id: 'survivor', status: 'active' });
    expect(survivorLocks.find((lock) => lock.scope === 'survivor/**')?.notes).toBe(1);
    for (const scopes of [['@survivor'], ['survivor/deep/x.ts'], ['survivor/**']]) {
      const blocked = await fresh!.ask({ op: 'acquire', scopes });
      expect(blocked.status, scopes.join(' ')).toBe('held');
      expect(blocked.conflicts.map((lock) => lock.agent_id)).toEqual(['survivor']);
    }
    expect((await survivor!.ask({ op: 'check', scopes: ['survivor/**', '@survivor'] })).status).toBe('mine');

    // After a reopen (another fresh process), fences keep growing.
    await fresh!.stop();
    const [again] = (await startWorkers(['fresh-2'], { ...opts, env: FEW_SECONDS })).map(track);
    const second = await again!.ask({ op: 'acquire', scopes: ['@fresh-2', 'fresh2/**'] });
    expect(second.status).toBe('acquired');
    for (const lock of second.locks) expect(lock.fence).toBeGreaterThan(firstFence);
    grants.push(...second.locks);

    // No fence was ever granted twice, across all the processes and kills.
    const fences = grants.map((lock) => lock.fence);
    expect(new Set(fences).size).toBe(fences.length);
    expect(readLog(store).text.endsWith('\n')).toBe(true);
    // Contention is an outcome, never an error: no decision of the churners may have thrown.
    expect(errors).toEqual([]);
    console.log(
      `crash: ${KILLS} kills (${inSection} inside the critical section by construction, ${randomKillsHoldingMutex} random ones left the mutex held), ${churnGrants} grants`,
    );
  });

  it("reaps a SIGKILLed holder's lock without notes on the next decision, and orphans one with notes", async () => {
    const { store, tree } = dirs('reap');
    const opts = { store, tree };
    const [plain, noted, other] = (await startWorkers(['plain', 'noted', 'other'], opts)).map(track);
    const plainLock = (await plain!.ask({ op: 'acquire', scopes: ['reap/**'] })).locks[0]!;
    const notedLock = (await noted!.ask({ op: 'acquire', scopes: ['orphan/**'] })).locks[0]!;
    expect((await noted!.ask({ op: 'note', scope: 'orphan/**', text: 'step 1: parsed' })).status).toBe(
      'noted',
    );

    await plain!.kill();
    await noted!.kill();
    // Nobody has decided since: the log still says both are active.
    let records = replayLog(store);
    expect(records.get(plainLock.id)?.status).toBe('active');
    expect(records.get(notedLock.id)?.status).toBe('active');

    // The next decision, on an unrelated resource, reaps and orphans (and commits it).
    expect((await other!.ask({ op: 'check', scopes: ['@unrelated'] })).status).toBe('free');
    records = replayLog(store);
    expect(records.has(plainLock.id)).toBe(false);
    expect(records.get(notedLock.id)).toMatchObject({ status: 'orphaned', agent_id: 'noted' });
    expect(records.get(notedLock.id)?.notes).toHaveLength(1);

    // The orphan blocks nobody, but its exact scope answers `interrupted` until resumed.
    expect((await other!.ask({ op: 'acquire', scopes: ['reap/**'] })).status).toBe('acquired');
    expect((await other!.ask({ op: 'acquire', scopes: ['orphan/inner.ts'] })).status).toBe('acquired');
    const exact = await other!.ask({ op: 'acquire', scopes: ['orphan/**'] });
    expect(exact.status).toBe('interrupted');
    expect(exact.conflicts.map((lock) => lock.id)).toEqual([notedLock.id]);
    const resumed = await other!.ask({ op: 'resume', scope: 'orphan/**' });
    expect(resumed.status).toBe('resumed');
    expect(resumed.locks[0]).toMatchObject({ scope: 'orphan/**', agent_id: 'other', notes: 1 });
    expect(resumed.locks[0]!.fence).toBeGreaterThan(notedLock.fence);
  });

  it('a CLI process SIGKILLed inside the critical section does not wedge the store', async () => {
    const { store, tree } = dirs('cli-kill');
    const opts = { store, tree };
    // Many locks make a cold process's critical section (replaying the log) long enough to hit.
    const [big] = (await startWorkers(['big'], opts)).map(track);
    const scopes = Array.from({ length: 600 }, (_, i) => `big/f${i}.ts`);
    expect((await big!.ask({ op: 'acquire', scopes })).status).toBe('acquired');

    let landed = false;
    for (let attempt = 0; attempt < 20 && !landed; attempt += 1) {
      const child = spawn(process.execPath, [CLI, '--json', 'acquire', `@cli-${attempt}`], {
        cwd: tree,
        env: {
          PATH: process.env.PATH ?? '',
          AGENT_ID: `cli-${attempt}`,
          AGENT_LOCK_DIR: store,
          AGENT_LOCK_REDIS_PROBE: 'off',
        },
        stdio: 'ignore',
      });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      // Watch for the mutex without yielding, and kill the moment it appears (the CLI holds it).
      const guard = Date.now() + 5000;
      while (Date.now() < guard) {
        try {
          lstatSync(path.join(store, 'mutex'));
          child.kill('SIGKILL');
          break;
        } catch {
          // Not taken yet.
        }
      }
      child.kill('SIGKILL');
      await exited;
      landed = mutexOwnerPid(store) !== null;
    }
    expect(landed, 'no kill landed inside the critical section').toBe(true);

    // A fresh process must get an answer within a few seconds (docs/stores.md), not E_STORE_BUSY.
    const [after] = (await startWorkers(['after-cli'], { ...opts, env: FEW_SECONDS })).map(track);
    const reply = await after!.send({ op: 'acquire', scopes: ['@after-cli'] });
    expect(reply.ok ? reply.result.status : reply.error.code).toBe('acquired');
  });
});
