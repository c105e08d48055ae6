/**
 * Several suites run the built CLI and library (real processes need real files). The build runs
 * here, once, before any suite starts, and only when dist/ is missing or older than its sources:
 * a suite that rebuilt on its own would delete dist/ under the suites running beside it.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const repo = path.resolve(import.meta.dirname, '..');

function newest(paths: string[]): number {
  let latest = 0;
  for (const entry of paths) {
    const full = path.join(repo, entry);
    const stat = statSync(full);
    if (!stat.isDirectory()) latest = Math.max(latest, stat.mtimeMs);
    else {
      for (const file of readdirSync(full, { recursive: true, encoding: 'utf8' })) {
        latest = Math.max(latest, statSync(path.join(full, file)).mtimeMs);
      }
    }
  }
  return latest;
}

function oldestBuilt(): number {
  try {
    return Math.min(
      ...['dist/cli.js', 'dist/index.js'].map((file) => statSync(path.join(repo, file)).mtimeMs),
    );
  } catch {
    return 0;
  }
}

export default function setup(): () => void {
  if (oldestBuilt() < newest(['src', 'assets', 'scripts/build.mjs', 'package.json'])) {
    execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: repo, stdio: 'inherit' });
  }
  // The hooks the suites run write their code cache (bin/alock.js) under XDG_CACHE_HOME: a folder
  // of the run's own, not the user's ~/.cache.
  const cache = mkdtempSync(path.join(os.tmpdir(), 'alock-test-cache-'));
  process.env.XDG_CACHE_HOME = cache;
  return () => rmSync(cache, { recursive: true, force: true });
}
