/**
 * The README's quick start, run as written: every line of every shell block under "## Quick start",
 * in a fresh copy of this repository (its files as git sees them, in a new git repository, with no
 * node_modules and no dist), with npm's global prefix in the temporary folder so that
 * `npm install -g .` installs there. Then the claim it makes once installed is run in a second,
 * empty git repository with the installed `alock`. `npm test` is the one line not run: it is the
 * suite this test belongs to.
 *
 * It installs and builds for real (about a minute on a quiet machine): the install the README
 * promises is the thing under test, so nothing here is stubbed.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(path.join(os.tmpdir(), 'alock-quick-start-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The lines of the shell blocks in the README's "## Quick start" section. */
function quickStartLines(readme: string): string[] {
  const section = readme.split(/^## /m).find((s) => s.startsWith('Quick start\n'));
  if (section === undefined) throw new Error('README.md has no "## Quick start" section');
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```/gm)].flatMap(([, body]) =>
    body!.split('\n').filter((line) => line.trim() !== '' && !line.trim().startsWith('#')),
  );
}

const lines = quickStartLines(readFileSync(path.join(repo, 'README.md'), 'utf8'));
const prefix = path.join(work, 'prefix');
// npm's own cache stays where it is (so an offline machine with a warm cache can run this); the
// global prefix, the agent's identity and the store's backend are the test's.
const cache = execFileSync('npm', ['config', 'get', 'cache'], { encoding: 'utf8' }).trim();
// What lets npm reach its registry on this machine (a proxy, its certificate) is the user's too.
const network = Object.fromEntries(
  Object.entries(process.env).filter(
    ([key, value]) =>
      value !== undefined &&
      /^(NODE_EXTRA_CA_CERTS|(HTTPS?|NO)_PROXY|npm_config_(cafile|proxy|https_proxy|registry))$/i.test(key),
  ),
);
const env = {
  ...network,
  PATH: `${path.join(prefix, 'bin')}:${process.env.PATH}`,
  HOME: path.join(work, 'home'),
  npm_config_prefix: prefix,
  npm_config_cache: cache,
  npm_config_prefer_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  AGENT_ID: 'quickstart',
  AGENT_PARENT_ID: 'none',
  AGENT_LOCK_REDIS_PROBE: 'off',
};

function sh(line: string, cwd: string) {
  const r = spawnSync('bash', ['-euo', 'pipefail', '-c', line], { cwd, env, encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('the README quick start', () => {
  it('is two lines: one that installs and claims, and npm test', () => {
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/npm install -g \. && alock acquire /);
    expect(lines[1]).toBe('npm test');
  });

  it('installs alock from a fresh clone and claims src/** with it; the claim works in any repository', () => {
    const clone = path.join(work, 'clone');
    mkdirSync(clone);
    mkdirSync(env.HOME);
    const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: repo,
      encoding: 'utf8',
    });
    for (const file of files.split('\0').filter((f) => f !== '' && existsSync(path.join(repo, f)))) {
      cpSync(path.join(repo, file), path.join(clone, file), { recursive: true });
    }
    execFileSync('git', ['init', '-q'], { cwd: clone });

    for (const line of lines.filter((l) => l !== 'npm test')) {
      const r = sh(line, clone);
      expect(r.code, `${line}\n${r.out}`).toBe(0);
      expect(r.out).toMatch(/^ACQUIRED src\/\*\*/m);
      expect(r.out).toMatch(/^LISTED 1 lock \(file store .*\.git\/agent-locks\)/m);
    }
    expect(existsSync(path.join(prefix, 'bin', 'alock'))).toBe(true);
    expect(existsSync(path.join(clone, '.git', 'agent-locks', 'locks.log'))).toBe(true);

    // "Once installed, the same claim works in any git repository": the alock commands of the line.
    const other = path.join(work, 'other');
    mkdirSync(other);
    execFileSync('git', ['init', '-q'], { cwd: other });
    const claim = lines[0]!.slice(lines[0]!.indexOf('alock acquire'));
    const r = sh(claim, other);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/^LISTED 1 lock \(file store .*other\/\.git\/agent-locks\)/m);
  }, 900_000);
});
