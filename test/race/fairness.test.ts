/**
 * Fair waiting across real processes: four workers contend for one resource over many rounds,
 * each asking again the moment it lets go. Fences order every grant of the store, so the grants
 * sorted by fence are the hand-off sequence; in arrival order the owner changes at (nearly) every
 * hand-off, where a free-for-all lets the releaser take it again and again.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { describeRedis, redisForSuite } from '../backends/redis/server.js';
import { requireBuild, scratch } from './helpers.js';

const WORKER = fileURLToPath(new URL('./fixtures/fair-worker.mjs', import.meta.url));
const WORKERS = 4;
const ROUNDS = Number(process.env.FAIR_ROUNDS ?? 15);

interface Grant {
  agent: string;
  fence: number;
}

async function contend(env: Record<string, string>): Promise<Grant[]> {
  requireBuild();
  const dirs = scratch('fair');
  mkdirSync(dirs.tree, { recursive: true });
  try {
    const grants: Grant[] = [];
    const workers = Array.from({ length: WORKERS }, (_, i) => {
      const proc = spawn(process.execPath, [WORKER], {
        cwd: dirs.tree,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? os.tmpdir(),
          AGENT_ID: `fair-${i}`,
          AGENT_LOCK_DIR: dirs.store,
          AGENT_LOCK_REDIS_PROBE: 'off',
          ROUNDS: String(ROUNDS),
          ...env,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      proc.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const ready = new Promise<void>((resolve) => {
        createInterface({ input: proc.stdout }).on('line', (line) => {
          const event = JSON.parse(line) as { type: string; agent: string; fence: number };
          if (event.type === 'ready') resolve();
          if (event.type === 'grant') grants.push({ agent: event.agent, fence: event.fence });
        });
      });
      const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
      return { proc, ready, exited, stderr: () => stderr };
    });
    await Promise.all(workers.map((w) => w.ready));
    // The gate: every worker starts contending at once.
    for (const w of workers) w.proc.stdin.write('go\n');
    const codes = await Promise.all(workers.map((w) => w.exited));
    for (const [i, code] of codes.entries()) {
      expect(code, `worker ${i}: ${workers[i]!.stderr()}`).toBe(0);
    }
    return grants.sort((a, b) => a.fence - b.fence);
  } finally {
    dirs.cleanup();
  }
}

function expectFair(grants: Grant[]): void {
  expect(grants).toHaveLength(WORKERS * ROUNDS);
  let changes = 0;
  for (let i = 1; i < grants.length; i++) if (grants[i]!.agent !== grants[i - 1]!.agent) changes++;
  // Perfect round-robin changes owner at every hand-off.
  expect(changes).toBeGreaterThanOrEqual(Math.floor(0.9 * (grants.length - 1)));
}

describe('fair waiting: file store', () => {
  it('hands one resource round the four contenders in arrival order', async () => {
    expectFair(await contend({}));
  });
});

describeRedis('fair waiting: redis store', () => {
  const server = redisForSuite();

  it('hands one resource round the four contenders in arrival order', async () => {
    expectFair(
      await contend({
        AGENT_LOCK_BACKEND: 'redis',
        AGENT_LOCK_REDIS_URL: server().url,
        AGENT_LOCK_REDIS_PREFIX: `fair-${randomBytes(4).toString('hex')}`,
      }),
    );
  });
});
