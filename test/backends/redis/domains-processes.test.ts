/**
 * Issue 19: decisions on unrelated scopes commit independently. Eight real processes, released
 * together at a gate, each acquire and release a scope no other wants, on one redis-server: no
 * commit is ever sent back for a conflict it did not have (the store counts the compare-and-set
 * failures it met), and fences still strictly increase across every grant of the store.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { requireBuild, uniquePrefix } from '../../race/helpers.js';
import { describeRedis, redisForSuite } from './server.js';

const WORKER = new URL('./fixtures/own-scope-worker.mjs', import.meta.url).pathname;
const WORKERS = 8;
const ROUNDS = 60;

interface Report {
  stats: { committed: number; conflicts: number; late: number; widened: number };
  fences: number[];
  refused: string[];
}

describeRedis('decisions on unrelated scopes (real processes, one redis-server)', () => {
  const server = redisForSuite();
  let root: string;

  beforeAll(() => {
    requireBuild();
    root = mkdtempSync(path.join(os.tmpdir(), 'alock-domains-'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** Starts a worker per scope, opens the gate once all are ready, and answers their reports. */
  async function race(name: string, scopes: readonly string[]): Promise<Report[]> {
    const prefix = uniquePrefix(name);
    const tree = path.join(root, name);
    mkdirSync(tree, { recursive: true });
    const workers = scopes.map((scope, i) => {
      const store = path.join(root, `${name}-store-${i}`);
      const child = spawn(
        process.execPath,
        [WORKER, server().url, prefix, tree, store, `agent-${i}`, scope, String(ROUNDS)],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      const lines = createInterface({ input: child.stdout });
      const ready = new Promise<void>((resolve) => lines.once('line', () => resolve()));
      const report = ready.then(
        () => new Promise<Report>((resolve) => lines.once('line', (line) => resolve(JSON.parse(line)))),
      );
      return { child, ready, report };
    });
    await Promise.all(workers.map((w) => w.ready));
    for (const w of workers) w.child.stdin.write('go\n');
    return Promise.all(workers.map((w) => w.report));
  }

  function expectIndependent(reports: Report[]): void {
    for (const report of reports) {
      expect(report.refused).toEqual([]);
      expect(report.stats.committed).toBe(2 * ROUNDS);
      // The point: another process's commit on another scope never sent this one's back.
      expect(report.stats.conflicts).toBe(0);
      expect(report.stats.widened).toBe(0);
    }
    // Every grant of the store got its own fence, and each process saw its own grow.
    const all = reports.flatMap((r) => r.fences);
    expect(new Set(all).size).toBe(all.length);
    for (const { fences } of reports) {
      for (let i = 1; i < fences.length; i += 1) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!);
    }
  }

  it('eight processes on eight @resources never lose a compare-and-set to each other', async () => {
    const reports = await race(
      'resources',
      Array.from({ length: WORKERS }, (_, i) => `@own-${i}`),
    );
    expectIndependent(reports);
  });

  it('eight processes on eight files of one tree never lose a compare-and-set to each other', async () => {
    const reports = await race(
      'files',
      Array.from({ length: WORKERS }, (_, i) => (i % 2 === 0 ? `src/w${i}.ts` : `src/lib/w${i}.ts`)),
    );
    expectIndependent(reports);
  });
});
