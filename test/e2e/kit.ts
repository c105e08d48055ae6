/**
 * What every harness's end-to-end run shares: a scratch git repository, the built `alock` on the
 * harness's PATH (through a small wrapper that keeps a copy of each hook payload when recording),
 * a home folder of its own, and running the real binary with a time limit.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const ALOCK_JS = path.join(REPO_ROOT, 'bin', 'alock.js');
export const RECORDINGS = path.join(REPO_ROOT, 'test', 'e2e', 'recordings');

export const FILE_A = 'export const a = 1;\n';
export const FILE_B = 'export const b = 1;\n';

export interface Sandbox {
  readonly base: string;
  readonly repo: string;
  readonly home: string;
  readonly bin: string;
  /** Where the wrapper drops each hook payload (one file per call). */
  readonly payloads: string;
  readonly env: NodeJS.ProcessEnv;
}

/** A clean environment: nothing of ours or the machine's (no keys, no proxies) leaks in. */
function baseEnv(home: string, bin: string, payloads: string): NodeJS.ProcessEnv {
  const keep = ['LANG', 'LC_ALL', 'TERM', 'TMPDIR', 'SHELL', 'USER', 'LOGNAME'];
  const env: NodeJS.ProcessEnv = {};
  for (const k of keep) if (process.env[k] !== undefined) env[k] = process.env[k];
  env.HOME = home;
  env.XDG_CONFIG_HOME = path.join(home, '.config');
  env.XDG_DATA_HOME = path.join(home, '.local', 'share');
  env.XDG_CACHE_HOME = path.join(home, '.cache');
  env.XDG_STATE_HOME = path.join(home, '.local', 'state');
  env.PATH = `${bin}:${path.dirname(process.execPath)}:/usr/local/bin:/usr/bin:/bin`;
  env.AGENT_LOCK_E2E_PAYLOADS = payloads;
  env.NO_COLOR = '1';
  env.CI = process.env.CI ?? '';
  return env;
}

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

export function makeSandbox(harness: string): Sandbox {
  const base = realpathSync(mkdtempSync(path.join(os.tmpdir(), `alock-e2e-${harness}-`)));
  const repo = path.join(base, 'repo');
  const home = path.join(base, 'home');
  const bin = path.join(base, 'bin');
  const payloads = path.join(base, 'payloads');
  for (const d of [repo, home, bin, payloads, path.join(repo, 'src')]) mkdirSync(d, { recursive: true });
  writeFileSync(path.join(repo, 'src', 'a.ts'), FILE_A);
  writeFileSync(path.join(repo, 'src', 'b.ts'), FILE_B);
  writeFileSync(path.join(repo, 'README.md'), '# e2e\n');
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'config', 'user.email', 'e2e@example.invalid');
  git(repo, 'config', 'user.name', 'e2e');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'start');
  // `alock` as a user has it on PATH; `hooks ...` calls keep a copy of their stdin first.
  writeFileSync(
    path.join(bin, 'alock'),
    `#!/bin/sh
if [ "$1" = hooks ] && [ -n "$AGENT_LOCK_E2E_PAYLOADS" ] && [ -d "$AGENT_LOCK_E2E_PAYLOADS" ]; then
  f="$AGENT_LOCK_E2E_PAYLOADS/$(date +%s%N)-$2.json"
  cat > "$f"
  exec ${JSON.stringify(process.execPath)} ${JSON.stringify(ALOCK_JS)} "$@" < "$f"
fi
exec ${JSON.stringify(process.execPath)} ${JSON.stringify(ALOCK_JS)} "$@"
`,
  );
  chmodSync(path.join(bin, 'alock'), 0o755);
  // A hook that only records (post-tool and turn-end events, for the recordings); answers nothing.
  writeFileSync(
    path.join(bin, 'e2e-record'),
    `#!/bin/sh
f="$AGENT_LOCK_E2E_PAYLOADS/$(date +%s%N)-$1.json"
cat > "$f"
exit 0
`,
  );
  chmodSync(path.join(bin, 'e2e-record'), 0o755);
  // Login shells (Codex runs `bash -lc`) reset PATH from /etc/profile; a user's profile puts it back.
  writeFileSync(path.join(home, '.bash_profile'), `export PATH=${JSON.stringify(bin)}:"$PATH"\n`);
  writeFileSync(path.join(home, '.profile'), `export PATH=${JSON.stringify(bin)}:"$PATH"\n`);
  return { base, repo, home, bin, payloads, env: baseEnv(home, bin, payloads) };
}

/** An executable hook script that only records its payload (for harnesses that run hook files). */
export function makeRecorderScript(file: string, event: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\nexec e2e-record ${event}\n`);
  chmodSync(file, 0o755);
}

export function alock(sb: Sandbox, args: string[], env: NodeJS.ProcessEnv = {}): string {
  return execFileSync(process.execPath, [ALOCK_JS, ...args], {
    cwd: sb.repo,
    encoding: 'utf8',
    env: { ...sb.env, AGENT_LOCK_E2E_PAYLOADS: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** One event of the store's log (`alock log --json`), the fields the e2e cases read. */
export interface LogEvent {
  readonly type: string;
  readonly agent_id: string;
  readonly by: string | null;
  readonly scope: string;
  readonly reason: string | null;
}

export function events(sb: Sandbox): LogEvent[] {
  return alock(sb, ['log', '--json'])
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as LogEvent);
}

export function read(sb: Sandbox, file: string): string {
  return readFileSync(path.join(sb.repo, file), 'utf8');
}

export function writeJson(file: string, value: unknown): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

export function readJsonFile(file: string): Record<string, unknown> {
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
}

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
  readonly timedOut: boolean;
}

/** Runs the real harness binary; killed (its whole group) after `limitMs`. */
export function runHarness(
  cmd: string,
  args: string[],
  sb: Sandbox,
  env: NodeJS.ProcessEnv,
  limitMs = 90_000,
): Promise<RunResult> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(cmd, args, {
      cwd: sb.repo,
      env: { ...sb.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }, limitMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started, timedOut });
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: -1, stdout, stderr: `${stderr}${error.message}`, ms: Date.now() - started, timedOut });
    });
  });
}

/**
 * Copies the payloads this run's hooks received into test/e2e/recordings/<harness>-<version>/, one
 * file per event kind and tool (the first of each kind is enough to learn its shape). Only when
 * asked (AGENT_LOCK_E2E_RECORD=1): a plain run must leave the checkout as it found it.
 */
export function keepRecordings(sb: Sandbox, harness: string, version: string): void {
  if (process.env.AGENT_LOCK_E2E_RECORD !== '1' || !existsSync(sb.payloads)) return;
  const dir = path.join(RECORDINGS, `${harness}-${version}`);
  mkdirSync(dir, { recursive: true });
  const seen = new Set<string>();
  for (const name of readdirSync(sb.payloads).sort()) {
    const text = readFileSync(path.join(sb.payloads, name), 'utf8');
    const event = name.replace(/^\d+-/, '').replace(/\.json$/, '');
    let tool = 'call';
    try {
      const value = JSON.parse(text) as Record<string, unknown>;
      const nested = (key: string) => {
        const v = value[key];
        return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {};
      };
      const t =
        value.tool_name ??
        value.toolName ??
        value.tool ??
        nested('preToolUse').toolName ??
        nested('tool_call').name ??
        nested('tool_result').name ??
        value.name;
      if (typeof t === 'string') tool = t.replace(/[^\w.-]/g, '_');
    } catch {
      tool = 'unparsed';
    }
    const out = path.join(dir, `${event}--${tool}.json`);
    // The newest run's payload of each kind (a run of a few cases leaves the others as they were).
    if (!seen.has(out)) writeFileSync(out, text.endsWith('\n') ? text : `${text}\n`);
    seen.add(out);
  }
  // Kept in the repository's own JSON format, so `npm run format:check` stays clean after a run.
  try {
    execFileSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', dir], {
      stdio: 'ignore',
    });
  } catch {
    // an unformatted recording is still a true one
  }
}

/**
 * Ends what a harness left running in this sandbox (Cline CLI starts a hub daemon that outlives the
 * session), found by the sandbox's own path in its command line, each by its process id.
 */
function endLeftovers(sb: Sandbox): void {
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
  } catch {
    return;
  }
  for (const pid of pids) {
    if (Number(pid) === process.pid) continue;
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.includes(sb.base)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

export function cleanup(sb: Sandbox): void {
  endLeftovers(sb);
  rmSync(sb.base, { recursive: true, force: true });
}
