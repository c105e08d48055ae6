// (i) the history and the dashboard (figures, no target).
//   events written per second: acquire+release of one @resource on the file store (two events
//   each), the events counted back from the store; beside it the same loop's decisions per second.
//   dashboard: time from a commit (acquire through another handle on the store) to the browser's
//   page showing the lock, measured in the page (a MutationObserver stamps when the row appears,
//   on the same wall clock as the commit's start), median and p99. Runs the distribution's Chromium
//   (/usr/bin/chromium) through playwright-core; without it, NOT RUN.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { type Locks, openLocks, serveDashboard } from '../../src/index.js';
import type { BenchCase } from '../case.js';

const CHROMIUM = '/usr/bin/chromium';
const now = () => performance.timeOrigin + performance.now();

/** This section's percentile: the sample at floor(p% of n), as it always was. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * What the page's own scripts see (the bench has no DOM types: it runs on Node). Functions run in
 * the page reach everything through it: the bundler renames module-level names such as
 * `performance` (imported from node:perf_hooks), and a renamed one does not exist in the page.
 */
interface PageGlobals {
  __seen: Record<string, number>;
  performance: { timeOrigin: number; now(): number };
  document: {
    getElementById(id: string): { textContent: string | null } | null;
    querySelectorAll(selector: string): Iterable<{ getAttribute(name: string): string | null }>;
    querySelector(selector: string): unknown;
  };
  MutationObserver: new (
    callback: () => void,
  ) => { observe(target: unknown, options: { childList: boolean; subtree: boolean }): void };
}

async function open(scratch: string, agentId: string): Promise<Locks> {
  const tree = path.join(scratch, 'tree');
  mkdirSync(path.join(tree, '.git'), { recursive: true });
  return openLocks({
    dir: tree,
    storeDir: path.join(scratch, 'store'),
    identity: { agentId },
    env: { AGENT_LOCK_REDIS_PROBE: 'off' },
  });
}

interface EventsRate {
  ops: number;
  events: number;
  eventsPerSec: number;
  opsPerSec: number;
}

async function eventsRate(scratch: string, ops: number): Promise<EventsRate> {
  const locks = await open(scratch, 'rate');
  for (let i = 0; i < 200; i++) {
    await locks.acquire('@rate');
    await locks.release('@rate');
  }
  const before = (await locks.events(1))[0]?.id;
  const start = performance.now();
  for (let i = 0; i < ops; i++) {
    await locks.acquire('@rate');
    await locks.release('@rate');
  }
  const ms = performance.now() - start;
  const written = (
    await locks.events({ limit: 2 * ops + 10, ...(before === undefined ? {} : { after: before }) })
  ).length;
  await locks.close();
  return {
    ops,
    events: written,
    eventsPerSec: Math.round((written / ms) * 1000),
    opsPerSec: Math.round((ops / ms) * 1000),
  };
}

type DashboardLatency =
  | { ran: true; samples: number; medianMs: number; p99Ms: number }
  | { ran: false; reason: string };

async function dashboardLatency(scratch: string, samples: number): Promise<DashboardLatency> {
  if (!existsSync(CHROMIUM))
    return { ran: false, reason: `${CHROMIUM} is not installed (apt-get install -y chromium)` };
  const { chromium } = await import('playwright-core');
  const viewer = await open(scratch, 'viewer');
  const writer = await open(scratch, 'writer');
  const dashboard = await serveDashboard(viewer, {});
  const profile = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage();
    await page.goto(dashboard.url);
    await page.waitForFunction(
      () => (globalThis as unknown as PageGlobals).document.getElementById('live')?.textContent === '● live',
    );
    // Stamps, on the page's wall clock, when a lock row first appears.
    await page.evaluate(() => {
      const window = globalThis as unknown as PageGlobals;
      window.__seen = {};
      new window.MutationObserver(() => {
        for (const row of window.document.querySelectorAll('#locks .lock')) {
          const scope = row.getAttribute('data-scope')!;
          if (!(scope in window.__seen))
            window.__seen[scope] = window.performance.timeOrigin + window.performance.now();
        }
      }).observe(window.document.getElementById('locks'), { childList: true, subtree: true });
    });
    const latencies: number[] = [];
    for (let i = 0; i < samples + 5; i++) {
      const scope = `@g${i}`;
      const start = now();
      await writer.acquire(scope);
      await page.waitForFunction((s) => s in (globalThis as unknown as PageGlobals).__seen, scope, {
        polling: 'raf',
      });
      const seen = await page.evaluate((s) => (globalThis as unknown as PageGlobals).__seen[s]!, scope);
      if (i >= 5) latencies.push(seen - start);
      await writer.release(scope);
      await page.waitForFunction(
        (s) =>
          !(globalThis as unknown as PageGlobals).document.querySelector(`#locks .lock[data-scope="${s}"]`),
        scope,
        { polling: 'raf' },
      );
    }
    return {
      ran: true,
      samples: latencies.length,
      medianMs: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
    };
  } finally {
    await browser.close();
    await dashboard.close();
    await viewer.close();
    await writer.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

export interface Events {
  rate: EventsRate;
  dashboard: DashboardLatency;
}

export const events: BenchCase<Events> = {
  id: 'i',
  key: 'events',
  title: 'the history and the dashboard',
  target: 'figures, no target',
  async run(ctx) {
    const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-events-'));
    let i: Events;
    try {
      const rate = await eventsRate(path.join(scratch, 'rate'), ctx.quick ? 300 : 3000);
      let dashboard: DashboardLatency;
      try {
        dashboard = await dashboardLatency(path.join(scratch, 'ui'), ctx.quick ? 20 : 200);
      } catch (error) {
        dashboard = { ran: false, reason: (error as Error).message.split('\n')[0]! };
      }
      i = { rate, dashboard };
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    const lines = [
      '(i) the history and the dashboard (figures, no target)',
      `  events written: ${i.rate.eventsPerSec}/s (${i.rate.events} events for ${i.rate.ops} acquire+release on the file store, ${i.rate.opsPerSec} acquire+release/s)`,
      i.dashboard.ran
        ? `  dashboard, commit to page update in Chromium: median ${i.dashboard.medianMs.toFixed(1)} ms, p99 ${i.dashboard.p99Ms.toFixed(1)} ms (${i.dashboard.samples} commits)`
        : `  dashboard: NOT RUN (${i.dashboard.reason})`,
      '',
    ];
    return { data: i, blocks: [{ kind: 'lines', lines }], summary: {}, summaryText: 'figures' };
  },
};
