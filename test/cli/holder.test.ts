/**
 * The process a lock without a TTL lives with, seen from real process trees: a wrapper that waits
 * for its command (`/usr/bin/time`) never holds the lock, and a short-lived holder (a perl or make
 * step) is named in the ACQUIRED answer, while an agent harness is not.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLI, requireBuild } from '../race/helpers.js';
import { makeSandbox, parseOneJson, type Sandbox } from './cli-harness.js';

let box: Sandbox;
beforeEach(() => {
  requireBuild();
  box = makeSandbox();
});
afterEach(() => box.cleanup());

function run(
  command: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(command, args, {
    cwd: box.tree,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...box.envFor('A', { AGENT_PARENT_ID: 'none' }),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

async function locks(): Promise<{ scope: string; pid: number }[]> {
  const r = await box.json('observer', ['list']);
  return r.body.locks as unknown as { scope: string; pid: number }[];
}

describe('the process a lock lives with', () => {
  it.skipIf(!existsSync('/usr/bin/time'))(
    'under /usr/bin/time the lock lives with the caller of time, not with time',
    async () => {
      const r = await run('/usr/bin/time', ['-f', '', process.execPath, CLI, 'acquire', '@timed']);
      expect(r.code, r.stderr).toBe(0);
      // time is gone now; before, it was the holder and the lock was reaped with it.
      expect(await locks()).toMatchObject([{ scope: '@timed', pid: process.pid }]);
      // This test's worker is no agent or terminal: the answer says the lock lives with it.
      expect(r.stdout).toContain(`  lives while `);
      expect(r.stdout).toContain(`(pid ${process.pid}) runs: released when it exits`);
    },
  );

  it('names a short-lived holder (a perl step) in ACQUIRED, and the lock ends with it', async () => {
    const r = await run('perl', ['-e', 'exit system(@ARGV) >> 8', process.execPath, CLI, 'acquire', '@step']);
    expect(r.code, r.stderr).toBe(0);
    const line = r.stdout.split('\n').find((l) => l.startsWith('  lives while '));
    expect(line).toMatch(/^ {2}lives while perl \(pid \d+\) runs: released when it exits \(--ttl SECONDS/);
    // The answer told the truth: perl has exited, and so has the lock.
    expect(await locks()).toEqual([]);
  });

  it('says nothing of the holder for an agent harness, nor for a lease', async () => {
    const asClaude = await run('perl', [
      '-e',
      '$0 = "claude"; exit system(@ARGV) >> 8',
      process.execPath,
      CLI,
      'acquire',
      '@agent',
    ]);
    expect(asClaude.code, asClaude.stderr).toBe(0);
    expect(asClaude.stdout).not.toContain('lives while');
    const lease = await run('perl', [
      '-e',
      'exit system(@ARGV) >> 8',
      process.execPath,
      CLI,
      'acquire',
      '@lease',
      '--ttl',
      '60',
    ]);
    expect(lease.code, lease.stderr).toBe(0);
    expect(lease.stdout).not.toContain('lives while');
    const json = await run('perl', [
      '-e',
      'exit system(@ARGV) >> 8',
      process.execPath,
      CLI,
      '--json',
      'acquire',
      '@quiet',
    ]);
    expect(parseOneJson(json.stdout).status).toBe('acquired');
  });
});
