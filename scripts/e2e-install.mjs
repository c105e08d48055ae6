#!/usr/bin/env node
// Installs the pinned harness versions the end-to-end suite runs, each in its own folder of a cache
// outside the repository (~/.cache/agent-lock-e2e/<pkg>@<version>, or $AGENT_LOCK_E2E_CACHE). A
// folder that already holds the binary is reused, so a second run costs nothing. Prints one line per
// harness; a harness that cannot be installed is said loudly, and the suite decides (CI fails it).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HARNESSES, binaryPath, cacheRoot, installDir } from './e2e-harnesses.mjs';

const only = process.argv.slice(2);
let failed = 0;
for (const h of HARNESSES) {
  if (only.length > 0 && !only.includes(h.id)) continue;
  const dir = installDir(h);
  const bin = binaryPath(h);
  if (existsSync(bin)) {
    console.log(`ok     ${h.id.padEnd(9)} ${h.pkg}@${h.version} (cached in ${dir})`);
    continue;
  }
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), '{"private":true}\n');
  const started = Date.now();
  // --ignore-scripts stays off: Codex, OpenCode and Claude Code pick their platform binary in a
  // postinstall step or by optional dependency; --engine-strict stays off (Claude Code says node>=22
  // yet its shipped binary is native and runs under any Node).
  const run = spawnSync(
    'npm',
    ['install', '--no-audit', '--no-fund', '--no-save', '--loglevel=error', `${h.pkg}@${h.version}`],
    { cwd: dir, encoding: 'utf8', env: { ...process.env, npm_config_engine_strict: 'false' } },
  );
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (run.status !== 0 || !existsSync(bin)) {
    failed++;
    const why = (run.stderr || run.stdout || run.error?.message || '')
      .trim()
      .split('\n')
      .slice(-3)
      .join(' | ');
    console.log(`FAILED ${h.id.padEnd(9)} ${h.pkg}@${h.version} after ${seconds}s: ${why || `no ${bin}`}`);
    rmSync(dir, { recursive: true, force: true });
    continue;
  }
  console.log(`ok     ${h.id.padEnd(9)} ${h.pkg}@${h.version} installed in ${seconds}s (${dir})`);
}
if (failed > 0) console.log(`${failed} harness(es) not installed; cache: ${cacheRoot()}`);
// Not an error by itself: the suite fails a missing binary under CI and skips it loudly elsewhere.
if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = 0;
