/**
 * `alock ui` in a real browser: headless Chromium from the distribution (playwright-core driving
 * /usr/bin/chromium, nothing downloaded) against the dashboard a real `alock ui` process serves,
 * while other `alock` processes take, wait for, release and break locks.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeSandbox, type Sandbox } from '../cli/cli-harness.js';
import { openLocks, serveDashboard } from '../../src/index.js';

const CHROMIUM = '/usr/bin/chromium';
const bin = path.join(fileURLToPath(new URL('../../', import.meta.url)), 'bin', 'alock.js');
const hasChromium = existsSync(CHROMIUM);
if (!hasChromium && !process.env.CI) {
  process.stderr.write(
    '\nWARNING: /usr/bin/chromium is missing: the dashboard browser tests are SKIPPED (apt-get install -y chromium)\n\n',
  );
}
/** A machine shared with other work can take seconds to get a page drawn: poll for longer. */
const slowPoll = <T>(check: () => T) => expect.poll(check, { timeout: 20_000 });
const describeBrowser = hasChromium || process.env.CI ? describe : describe.skip;

let box: Sandbox;
beforeEach(() => {
  box = makeSandbox();
});
afterEach(() => {
  box.cleanup();
});

function env(agent: string): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(AGENT_|CLAUDE_|CODEX_|REDIS_URL$|NO_COLOR$)/.test(key)) clean[key] = value;
  }
  return { ...clean, AGENT_LOCK_DIR: box.store, AGENT_LOCK_REDIS_PROBE: 'off', AGENT_ID: agent };
}

function alock(agent: string, args: string[]) {
  const r = spawnSync(process.execPath, [bin, ...args], { cwd: box.tree, env: env(agent), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
}

/** A real `alock ui` process; resolves once it has printed its URL. */
async function serve(args: string[]): Promise<{ url: string; child: ChildProcessWithoutNullStreams }> {
  const child = spawn(process.execPath, [bin, 'ui', ...args], { cwd: box.tree, env: env('ui') });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  while (!/^UI (\S+)/m.test(out)) {
    if (child.exitCode !== null) throw new Error(`alock ui ended: ${out}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { url: /^UI (\S+)/m.exec(out)![1]!, child };
}

async function stop(child: ChildProcessWithoutNullStreams): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = once(child, 'exit');
  child.kill('SIGINT');
  const [code] = await exited;
  return code as number | null;
}

describeBrowser('alock ui in Chromium', () => {
  let profile: string;
  let browser: BrowserContext;
  beforeAll(async () => {
    profile = mkdtempSync(path.join(os.tmpdir(), 'alock-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
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
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    rmSync(profile, { recursive: true, force: true });
  });

  const lockRow = (page: Page, scope: string) => page.locator(`#locks .lock[data-scope="${scope}"]`);

  it('shows a lock taken through the CLI, the waiting line, the release, and breaks with the secret', async () => {
    const { url, child } = await serve(['--allow-break']);
    const page = await browser.newPage();
    try {
      await page.goto(url);
      await slowPoll(() => page.locator('#live').textContent()).toBe('● live');
      await slowPoll(() => page.locator('#locks').textContent()).toContain('no locks held');

      alock('B', ['acquire', '@deploy', '-m', 'ship it', '--ttl', '600']);
      await slowPoll(() => lockRow(page, '@deploy').textContent()).toContain('"ship it"');
      expect(await lockRow(page, '@deploy').textContent()).toMatch(/TTL \d+m/);
      const waiter = spawn(process.execPath, [bin, 'acquire', '@deploy', '--wait=60', '-m', 'after B'], {
        cwd: box.tree,
        env: env('C'),
      });
      await slowPoll(() => page.locator('#waiting li[data-scope="@deploy"]').textContent()).toContain('C');
      expect(await page.locator('#waiting li').count()).toBe(1);
      // Only with --allow-break and the URL's secret is there a break button.
      expect(await lockRow(page, '@deploy').locator('button.break').count()).toBe(1);
      const shot = path.join(
        process.env.ALOCK_ARTIFACTS ?? path.join(os.tmpdir(), 'alock-artifacts'),
        'dashboard.png',
      );
      mkdirSync(path.dirname(shot), { recursive: true });
      await page.screenshot({ path: shot, fullPage: true });
      process.stdout.write(`dashboard screenshot: ${shot}\n`);
      expect(statSync(shot).size).toBeGreaterThan(1000);

      alock('B', ['release', '@deploy']);
      expect((await once(waiter, 'exit'))[0]).toBe(0);
      await slowPoll(() => lockRow(page, '@deploy').textContent()).toContain('"after B"');
      await slowPoll(() => page.locator('#waiting li').count()).toBe(0);
      await slowPoll(() => page.locator('#events').textContent()).toContain('HANDED OVER @deploy C by B');

      page.once('dialog', (dialog) => dialog.accept('C is stuck'));
      await lockRow(page, '@deploy').locator('button.break').click();
      await slowPoll(() => page.locator('#locks').textContent()).toContain('no locks held');
      await expect
        .poll(() => page.locator('#events').textContent())
        .toContain('BROKEN @deploy C by ui: C is stuck');

      // What the page is sent never carries a token or its hash.
      alock('D', ['acquire', '@secret-check']);
      const body = await (await fetch(new URL('/api/state', url))).text();
      expect(body).toContain('@secret-check');
      expect(body).not.toMatch(/token/);
    } finally {
      await page.close();
      expect(await stop(child)).toBe(130);
    }
  }, 60_000);

  it('refuses a break without the secret, and offers none on a read-only dashboard', async () => {
    alock('A', ['acquire', '@keep']);
    const withBreak = await serve(['--allow-break']);
    const readOnly = await serve([]);
    const page = await browser.newPage();
    try {
      const secret = new URL(withBreak.url).searchParams.get('secret')!;
      const breakAt = (url: string, headers: Record<string, string>) =>
        fetch(new URL('/api/break', url), {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ id: 'lk_x', reason: 'test' }),
        });
      expect((await breakAt(withBreak.url, {})).status).toBe(403);
      expect((await breakAt(withBreak.url, { 'x-alock-secret': 'wrong' })).status).toBe(403);
      expect((await breakAt(readOnly.url, { 'x-alock-secret': secret })).status).toBe(403);
      // Without the secret in its URL the page shows the lock but no break button.
      await page.goto(new URL('/', withBreak.url).href);
      await slowPoll(() => lockRow(page, '@keep').count()).toBe(1);
      expect(await page.locator('button.break').count()).toBe(0);
      await page.goto(readOnly.url);
      await slowPoll(() => lockRow(page, '@keep').count()).toBe(1);
      expect(await page.locator('button.break').count()).toBe(0);
      // An agent's own page: its locks and events only.
      await page.goto(`${readOnly.url}#agent=Z`);
      await slowPoll(() => page.locator('#locks').textContent()).toContain('no locks held');
      expect(await page.locator('#events .event').count()).toBe(0);
      await page.goto(`${readOnly.url}#agent=A`);
      await slowPoll(() => lockRow(page, '@keep').count()).toBe(1);
      expect(await page.locator('#agent').textContent()).toContain('agent A');
      const list = spawnSync(process.execPath, [bin, '--json', 'list'], {
        cwd: box.tree,
        env: env('A'),
        encoding: 'utf8',
      });
      expect((JSON.parse(list.stdout) as { locks: { scope: string }[] }).locks.map((l) => l.scope)).toEqual([
        '@keep',
      ]);
    } finally {
      await page.close();
      await stop(withBreak.child);
      await stop(readOnly.child);
    }
  }, 60_000);
});

describeBrowser('alock ui against DNS rebinding and big stores', () => {
  it('refuses a page whose Host is a foreign name resolving to 127.0.0.1 (DNS rebinding)', async () => {
    alock('A', ['acquire', '@private', '-m', 'secret plans']);
    const { url, child } = await serve([]);
    const port = new URL(url).port;
    // Chromium resolves evil.example to this machine, as a rebinding DNS answer would.
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--host-resolver-rules=MAP evil.example 127.0.0.1'],
    });
    try {
      const page = await browser.newPage();
      for (const at of ['/', '/api/state', '/api/stream']) {
        const foreign = await page.goto(`http://evil.example:${port}${at}`);
        expect(foreign?.status()).toBe(421);
        expect(await page.content()).not.toContain('secret plans');
      }
      // The page of evil.example cannot read the state with fetch either.
      await page.goto(`http://evil.example:${port}/`);
      const read = await page.evaluate(async () => {
        const res = await fetch('/api/state');
        return { status: res.status, body: await res.text() };
      });
      expect(read.status).toBe(421);
      expect(read.body).not.toContain('@private');
      // The address it was started on, and localhost, still work.
      for (const host of ['127.0.0.1', 'localhost']) {
        const own = await page.goto(`http://${host}:${port}/api/state`);
        expect(own?.status()).toBe(200);
        expect(await own?.text()).toContain('secret plans');
      }
    } finally {
      await browser.close();
      await stop(child);
    }
  }, 60_000);

  it('sends a page the changes of a commit, not the whole state again', async () => {
    // 300 locks in one decision: the state is ~100 KB, the change of one more lock a few hundred bytes.
    const locks = await openLocks({ dir: box.tree, env: { ...env('bulk'), AGENT_ID: 'bulk' } });
    try {
      const scopes = Array.from({ length: 300 }, (_, i) => `f/${i}.ts`);
      expect((await locks.acquire(scopes)).status).toBe('acquired');
    } finally {
      await locks.close();
    }
    const { url, child } = await serve([]);
    const events: { type: string; size: number; data: string }[] = [];
    const controller = new AbortController();
    try {
      const res = await fetch(new URL('/api/stream', url), { signal: controller.signal });
      const reader = res.body!.getReader();
      let buffer = '';
      const read = (async () => {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          buffer += Buffer.from(value).toString('utf8');
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const type = /^event: (\S+)/m.exec(block)?.[1];
            const data = /^data: (.*)$/m.exec(block)?.[1] ?? '';
            if (type) events.push({ type, size: data.length, data });
            end = buffer.indexOf('\n\n');
          }
        }
      })().catch(() => {});
      await slowPoll(() => events.length).toBe(1);
      expect(events[0]).toMatchObject({ type: 'state' });
      expect(events[0]!.size).toBeGreaterThan(50_000);

      alock('B', ['acquire', '@one-more', '-m', 'small change']);
      await slowPoll(() => events.length).toBeGreaterThanOrEqual(2);
      const change = events[1]!;
      expect(change.type).toBe('changes');
      expect(change.size).toBeLessThan(3_000);
      const body = JSON.parse(change.data) as { locks: { put: { scope: string }[]; del: string[] } };
      expect(body.locks.put.map((l) => l.scope)).toEqual(['@one-more']);
      expect(body.locks.del).toEqual([]);
      process.stdout.write(
        `dashboard: whole state ${events[0]!.size} B, one commit's changes ${change.size} B\n`,
      );
      controller.abort();
      await read;
    } finally {
      await stop(child);
    }
  }, 60_000);

  it('keeps a page right through changes: a lock taken, one released', async () => {
    alock('A', ['acquire', '@first']);
    const { url, child } = await serve([]);
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox'],
    });
    try {
      const page = await browser.newPage();
      await page.goto(url);
      await slowPoll(() => page.locator('#locks .lock[data-scope="@first"]').count()).toBe(1);
      alock('B', ['acquire', '@second']);
      await slowPoll(() => page.locator('#locks .lock[data-scope="@second"]').count()).toBe(1);
      alock('A', ['release', '@first']);
      await slowPoll(() => page.locator('#locks .lock[data-scope="@first"]').count()).toBe(0);
      expect(await page.locator('#locks .lock').count()).toBe(1);
      await slowPoll(() => page.locator('#events').textContent()).toContain('RELEASED @first');
    } finally {
      await browser.close();
      await stop(child);
    }
  }, 60_000);
});

describe('serveDashboard on loopback', () => {
  it('binds any 127.x address without allowRemote: the whole range is this machine', async () => {
    const locks = await openLocks({ dir: box.tree, backend: 'memory', env: { AGENT_ID: 'A' } });
    try {
      const ui = await serveDashboard(locks, { host: '127.0.0.2', port: 0 });
      expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.2:\d+\//);
      await ui.close();
      await expect(serveDashboard(locks, { host: '10.0.0.1', port: 0 })).rejects.toMatchObject({
        code: 'E_USAGE',
      });
    } finally {
      await locks.close();
    }
  });
});

describe('alock ui bad input', () => {
  it('refuses --host 0.0.0.0 without --allow-remote, a port in use and a bad port: one line, exit 2', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as net.AddressInfo).port;
    try {
      for (const [args, message] of [
        [
          ['--host', '0.0.0.0'],
          /^ERROR: alock: --host 0\.0\.0\.0 would show the store to other machines \(add --allow-remote/,
        ],
        [
          ['--port', String(port)],
          new RegExp(`^ERROR: alock: port ${port} on 127\\.0\\.0\\.1 is in use \\(pick another`),
        ],
        [['--port', 'http'], /^ERROR: alock: --port must be a whole number from 0 to 65535/],
      ] as const) {
        const r = await box.run('A', ['ui', ...args]);
        expect({ args, code: r.code, stdout: r.stdout }).toEqual({ args, code: 2, stdout: '' });
        expect(r.stderr).toMatch(message);
        expect(r.stderr.split('\n')).toHaveLength(2);
      }
    } finally {
      taken.close();
    }
  });
});
