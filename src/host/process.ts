/**
 * Process facts from the operating system: the ancestor chain, start times and liveness.
 * Linux reads /proc (no child process, so the CLI starts fast); elsewhere `ps` answers.
 */
import { createRequire } from 'node:module';
import { readFileSync, readlinkSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isPassThrough, type ProcessFacts } from '../core/identity.js';

// `ps` is only needed off Linux: loading child_process lazily keeps it out of the CLI's start-up.
function execFileSync(file: string, args: string[], options: { encoding: 'utf8' }): string {
  const cp = createRequire(import.meta.url)('node:child_process') as typeof import('node:child_process');
  // lstart is printed in the locale's words: one fixed locale keeps every agent's stamps comparable.
  return cp.execFileSync(file, args, { ...options, env: { ...process.env, LC_ALL: 'C' } });
}

const INTERPRETERS = new Set(['node', 'nodejs', 'bun', 'deno', 'python', 'python3', 'ruby', 'perl']);
const onLinux = process.platform === 'linux';

let bootId: string | undefined;
function linuxBootId(): string {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().slice(0, 8);
    } catch {
      bootId = 'boot';
    }
  }
  return bootId;
}

interface StatLine {
  ppid: number;
  state: string;
  started: string;
  comm: string;
}

/**
 * The start stamp is the boot id plus the start time in clock ticks since boot: unlike a wall-clock
 * time derived from btime, it does not move when the clock is stepped, so a live holder is never
 * mistaken for a reused pid.
 */
function readStat(pid: number): StatLine | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const fields = text.slice(close + 2).split(' ');
  return {
    state: fields[0] ?? '?',
    ppid: Number(fields[1]),
    started: `${linuxBootId()}:${fields[19]}`,
    comm,
  };
}

function commandName(argv: string[], fallback: string): string {
  const first = argv[0];
  if (first === undefined || first === '') return fallback;
  let name = path.basename(first.split(' ')[0] ?? first);
  const script = argv[1];
  if (INTERPRETERS.has(name.replace(/[\d.]+$/, '')) && script !== undefined && !script.startsWith('-')) {
    name = path.basename(script).replace(/\.(c|m)?js$|\.py$|\.rb$|\.pl$/, '');
  }
  return name.replace(/-cli$/, '');
}

function linuxFacts(pid: number): (ProcessFacts & { ppid: number }) | null {
  const stat = readStat(pid);
  if (stat === null) return null;
  let argv: string[] = [];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    // A process that rewrote its title (npm exec ...) has one argv entry with spaces.
    if (argv.length === 1 && argv[0]?.includes(' ')) argv = argv[0].split(' ');
  } catch {
    // Unreadable cmdline: fall back to comm.
  }
  let user = '?';
  try {
    user = String(statSync(`/proc/${pid}`).uid);
  } catch {
    // Gone between reads; the stat line is still good evidence.
  }
  return { pid, ppid: stat.ppid, started: stat.started, name: commandName(argv, stat.comm), user };
}

interface PsRow extends ProcessFacts {
  ppid: number;
}

function psTable(): Map<number, PsRow> {
  const rows = new Map<number, PsRow>();
  const out = execFileSync('ps', ['-axo', 'pid=,ppid=,user=,lstart=,comm='], { encoding: 'utf8' });
  for (const line of out.split('\n')) {
    const parts = line.trim().split(/\s+/);
    if (parts.length < 9) continue;
    const pid = Number(parts[0]);
    const started = parts.slice(3, 8).join(' ');
    const comm = parts.slice(8).join(' ');
    rows.set(pid, { pid, ppid: Number(parts[1]), user: parts[2] ?? '?', started, name: path.basename(comm) });
  }
  return rows;
}

/**
 * The chain of processes from `pid` upward, up to and including the first that is neither a shell
 * nor a launcher (the holder): the walk stops there, since nothing above it is ever used.
 */
export function ancestorChain(pid: number): ProcessFacts[] {
  const chain: ProcessFacts[] = [];
  if (onLinux) {
    let current = pid;
    // pid 1 is included: a CLI started by init, a container entry point or a re-parented daemon
    // has nothing else above it, and its locks then live with that process.
    while (current >= 1 && chain.length < 32) {
      const facts = linuxFacts(current);
      if (facts === null) break;
      chain.push({ pid: facts.pid, started: facts.started, name: facts.name, user: facts.user });
      if (!isPassThrough(facts.name) || current === 1) break;
      current = facts.ppid;
    }
    return chain;
  }
  const table = psTable();
  let current = pid;
  while (current >= 1 && chain.length < 32) {
    const row = table.get(current);
    if (row === undefined) break;
    chain.push({ pid: row.pid, started: row.started, name: row.name, user: row.user });
    if (!isPassThrough(row.name) || current === 1) break;
    current = row.ppid;
  }
  return chain;
}

/** Is a process with this pid and this start stamp running? Unknown answers count as alive. */
export function processAlive(pid: number, started: string): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  if (onLinux) {
    const stat = readStat(pid);
    if (stat === null) return false;
    return stat.started === started && stat.state !== 'Z' && stat.state !== 'X';
  }
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], { encoding: 'utf8' });
    return out.trim().split(/\s+/).join(' ') === started;
  } catch {
    return true;
  }
}

export function startStamp(pid: number): string {
  if (onLinux) return readStat(pid)?.started ?? 'unknown';
  return psTable().get(pid)?.started ?? 'unknown';
}

let host: string | undefined;

/**
 * The host as liveness sees it: a pid means something only inside one pid namespace, so on Linux
 * the namespace is part of the host (sandboxes that unshare pids keep the hostname). Processes in
 * another namespace are then judged by age, like another machine, instead of being thought dead.
 */
export function hostName(): string {
  if (host === undefined) {
    host = os.hostname();
    if (onLinux) {
      try {
        const ns = /\[(\d+)\]/.exec(readlinkSync('/proc/self/ns/pid'))?.[1];
        // The initial namespace keeps the plain hostname, so ordinary hosts read as before.
        if (ns !== undefined && ns !== '4026531836') host = `${host}~pidns${ns}`;
      } catch {
        // No namespace information: the hostname alone.
      }
    }
  }
  return host;
}
