// Bench section (g): the history and the dashboard.
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
import { openLocks, serveDashboard } from '../dist/index.js';

const CHROMIUM = '/usr/bin/chromium';
const now = () => performance.timeOrigin + performance.now();

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function open(scratch, agentId) {
  const tree = path.join(scratch, 'tree');
  mkdirSync(path.join(tree, '.git'), { recursive: true });
  return openLocks({
    dir: tree,
    storeDir: path.join(scratch, 'store'),
    identity: { agentId },
    env: { AGENT_LOCK_REDIS_PROBE: 'off' },
  });
}

async function eventsRate(scratch, ops) {
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
  const written = (await locks.events({ limit: 2 * ops + 10, after: before })).length;
  await locks.close();
  return {
    ops,
    events: written,
    eventsPerSec: Math.round((written / ms) * 1000),
    opsPerSec: Math.round((ops / ms) * 1000),
  };
}

async function dashboardLatency(scratch, samples) {
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
    await page.waitForFunction(() => document.getElementById('live')?.textContent === '● live');
    // Stamps, on the page's wall clock, when a lock row first appears.
    await page.evaluate(() => {
      window.__seen = {};
      new MutationObserver(() => {
        for (const row of document.querySelectorAll('#locks .lock')) {
          const scope = row.getAttribute('data-scope');
          if (!(scope in window.__seen)) window.__seen[scope] = performance.timeOrigin + performance.now();
        }
      }).observe(document.getElementById('locks'), { childList: true, subtree: true });
    });
    const latencies = [];
    for (let i = 0; i < samples + 5; i++) {
      const scope = `@g${i}`;
      const start = now();
      await writer.acquire(scope);
      await page.waitForFunction((s) => s in window.__seen, scope, { polling: 'raf' });
      const seen = await page.evaluate((s) => window.__seen[s], scope);
      if (i >= 5) latencies.push(seen - start);
      await writer.release(scope);
      await page.waitForFunction((s) => !document.querySelector(`#locks .lock[data-scope="${s}"]`), scope, {
        polling: 'raf',
      });
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

export async function eventsSection(quick) {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'alock-bench-events-'));
  try {
    const rate = await eventsRate(path.join(scratch, 'rate'), quick ? 300 : 3000);
    let dashboard;
    try {
      dashboard = await dashboardLatency(path.join(scratch, 'ui'), quick ? 20 : 200);
    } catch (error) {
      dashboard = { ran: false, reason: error.message.split('\n')[0] };
    }
    return { rate, dashboard };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
