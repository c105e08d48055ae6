/**
 * Trespass: what no parser of shell commands can see (`python3 -c`, a script, a build step) is
 * caught after the fact. Before a shell call the pre-tool hook stamps the files other agents hold in
 * this tree (size, mtime, inode); after it, the post-tool hook looks again. A held file that changed
 * is recorded in the store (`trespassed`), told to the agent whose command did it, and left as a
 * notice for its holder, told once on one of its next hook calls.
 *
 * Stamps and notices live in a private folder of the OS temp dir (per user): a stamp lives from a
 * call's pre hook to its post hook, a notice until its holder's hook reads it; both are bounded in
 * number and age. With no store in the tree nothing is written; with no lock of another agent in
 * it, no stamp (only the list of what the agent's call read, held-cache.ts).
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
} from 'node:fs';
import path from 'node:path';
import type { CliContext } from '../answers/answer.js';
import { readConfig } from '../core/config.js';
import { type HeldLock, heldLockOf } from '../core/decisions/trespass.js';
import type { Identity } from '../core/identity.js';
import { globMatches, scopeFromPattern } from '../core/scope.js';
import { hostName } from '../host/process.js';
import { findTree, storeDirFor } from '../host/tree.js';
import { fileLogIdentity, keepLocks, keptFile, keptLocks } from './held-cache.js';
import type { HookAgent } from './hook-check.js';
import { shellQuote } from './hook-check.js';
import { surelyWritesNothing } from './read-only.js';
import { keyName, prune, takeTold, trespassDir, writeWhole } from './trespass-folder.js';

export { keyName, trespassDir } from './trespass-folder.js';

type Env = Readonly<Record<string, string | undefined>>;

/** At most this many held files are stamped for one call: a lock on `**` must not cost seconds. */
export const MAX_STAMPED = 2000;
/**
 * A stamp whose post hook never came (a refused or interrupted call) is not used after this: long
 * enough for a long build to end first.
 */
const STAMP_MS = 12 * 60 * 60 * 1000;
/**
 * A stamps folder of at most this many is not pruned, and one of more is pruned down to the newest
 * half not past their age (trespass-folder.ts prune).
 */
const STAMPS_UNLOOKED = 256;
/** At most this many folder entries are looked at for one call (a glob over a large tree). */
const MAX_VISITED = 20_000;
/** A notice whose holder never called a hook again (a person, a script) is dropped after this. */
const NOTICE_MS = 24 * 60 * 60 * 1000;
/** A command is recorded up to this long. */
const MAX_COMMAND = 1000;

interface FileStamp {
  readonly file: string;
  /** Index into Stamp.locks. */
  readonly lock: number;
  /** Null: the file did not exist. */
  readonly size: number | null;
  readonly mtimeMs: number | null;
  readonly ino: number | null;
}

interface Stamp {
  readonly at: number;
  readonly root: string;
  readonly agent: HookAgent;
  readonly command: string;
  readonly locks: HeldLock[];
  readonly files: FileStamp[];
  /** More held files than MAX_STAMPED: only the first were stamped. */
  readonly cut: boolean;
}

type Seen = Pick<FileStamp, 'size' | 'mtimeMs' | 'ino'>;

const MISSING: Seen = { size: null, mtimeMs: null, ino: null };

function seen(s: Stats | undefined): Seen {
  return s?.isFile() ? { size: s.size, mtimeMs: s.mtimeMs, ino: s.ino } : MISSING;
}

function statOf(file: string): Seen {
  try {
    return seen(statSync(file, { throwIfNoEntry: false }));
  } catch {
    return MISSING;
  }
}

/** A held file as it stands: its path (absolute) and what a stat of it saw. */
type HeldFile = readonly [file: string, seen: Seen];

/**
 * The files of a lock's scope in the tree at `root` (absolute), each stat'ed once: the file itself
 * (also when it does not exist yet: creating it is a change), every file below a folder, every
 * file a glob matches; none of `skip`, which are not stat'ed either.
 */
function filesOf(
  root: string,
  lock: Pick<HeldLock, 'scope'>,
  limit: number,
  budget: { visited: number },
  skip: ReadonlySet<string>,
): HeldFile[] {
  const scope = scopeFromPattern(lock.scope, 'path');
  if (scope.kind !== 'path' || scope.pattern.split('/').includes('.git')) return [];
  const found: HeldFile[] = [];
  const walk = (dir: string, keep: (rel: string) => boolean) => {
    if (found.length >= limit || budget.visited >= MAX_VISITED) return;
    let entries: import('node:fs').Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      if (found.length >= limit || ++budget.visited > MAX_VISITED) return;
      if (entry.name === '.git') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full, keep);
      else if (!skip.has(full) && keep(path.relative(root, full).split(path.sep).join('/')))
        found.push([full, statOf(full)]);
    }
  };
  if (!scope.glob) {
    const target = path.join(root, scope.pattern);
    let stat: Stats | undefined;
    try {
      stat = statSync(target, { throwIfNoEntry: false });
    } catch {
      // Unreadable: stamped as missing.
    }
    if (stat?.isDirectory()) walk(target, () => true);
    else if (!skip.has(target)) found.push([target, seen(stat)]);
    return found;
  }
  walk(path.join(root, ...scope.fixed), (rel) => globMatches(scope, rel));
  return found;
}

/**
 * The held files of `locks` in the tree at `root`, with the lock each belongs to, up to a limit;
 * none of `skip` (the files a stamp holds already, when the post hook looks for new ones).
 */
function heldFiles(
  root: string,
  locks: readonly Pick<HeldLock, 'scope'>[],
  skip: ReadonlySet<string> = new Set(),
): { files: [HeldFile, number][]; cut: boolean } {
  const files: [HeldFile, number][] = [];
  const taken = new Set<string>();
  const budget = { visited: 0 };
  let cut = false;
  locks.forEach((lock, i) => {
    const left = MAX_STAMPED - files.length;
    if (left <= 0 || budget.visited >= MAX_VISITED) {
      cut = true;
      return;
    }
    const mine = filesOf(root, lock, left + 1, budget, skip);
    if (mine.length > left || budget.visited > MAX_VISITED) cut = true;
    for (const held of mine.slice(0, left)) {
      if (taken.has(held[0])) continue;
      taken.add(held[0]);
      files.push([held, i]);
    }
  });
  return { files, cut };
}

/**
 * The hook's agent as a whole identity, so that the store does not look up the process tree for a
 * holder (milliseconds on every shell call): these two decisions take no lock, so no process
 * keeps anything and this one stands for none.
 */
function asked(agent: HookAgent): Identity {
  return {
    agentId: agent.agentId,
    parentAgentId: agent.parentAgentId,
    idSource: 'option',
    parentSource: agent.parentAgentId ? 'option' : 'none',
    holder: { host: hostName(), pid: process.pid, started: 'hook' },
    holderName: 'hook',
    warnings: [],
  };
}

export interface ShellCall {
  /** Pairs a call's pre hook with its post hook: the tool call's id, else its session and command. */
  readonly key: string;
  readonly command: string;
  /** The folder the command runs in. */
  readonly base: string;
  readonly agent: () => HookAgent;
}

/**
 * Before a shell call: stamps the files other agents hold in this tree, keyed by the call. Nothing
 * is opened when the tree has no store, no stamp written when no other agent holds a lock in it. It
 * never stands in the call's way: a failure here leaves the call unstamped.
 */
export async function stampShell(cli: CliContext, call: ShellCall): Promise<void> {
  const env = cli.io.env;
  if (surelyWritesNothing(call.command, env.HOME)) return;
  try {
    const tree = findTree(call.base);
    const root = tree.root;
    const storeDir = storeDirFor(tree, env);
    if (!existsSync(path.join(storeDir, 'backend.json'))) return;
    const agent = call.agent();
    const backend = cli.globals().backend;
    const config = readConfig(env);
    const now = Date.now();
    // The locks this agent's last shell call read, when the store's log is as it was then.
    const log = backend === 'redis' || config.backend === 'redis' ? null : fileLogIdentity(storeDir);
    const keyParts = [storeDir, config.tree ?? root, agent.agentId, agent.parentAgentId ?? ''];
    const kept = trespassDir(env, false);
    let locks =
      log === null || kept === null ? null : keptLocks(keptFile(kept, keyParts), log, now, config.staleMs);
    if (locks === null) {
      const { openStore } = await import('../store/store.js');
      const store = await openStore({
        dir: root,
        env,
        ...(backend === 'file' || backend === 'redis' ? { backend } : {}),
      });
      try {
        locks = await store.as(asked(agent)).heldByOthers();
      } finally {
        await store.close().catch(() => {});
      }
      // Kept also when empty: the next call in a tree where nobody else holds anything reads no log.
      const dir = log === null ? null : trespassDir(env, true);
      if (log !== null && dir !== null) keepLocks(keptFile(dir, keyParts), log, locks, now);
    }
    if (locks.length === 0) return;
    const dir = trespassDir(env, true);
    if (dir === null) return;
    const { files, cut } = heldFiles(root, locks);
    const stamp: Stamp = {
      at: Date.now(),
      root,
      agent,
      command: call.command.length > MAX_COMMAND ? `${call.command.slice(0, MAX_COMMAND)}…` : call.command,
      locks: locks.map(heldLockOf),
      files: files.map(([[file, seen], lock]) => ({ file, lock, ...seen })),
      cut,
    };
    const stamps = path.join(dir, 'stamps');
    mkdirSync(stamps, { recursive: true, mode: 0o700 });
    prune(stamps, STAMP_MS, stamp.at, STAMPS_UNLOOKED);
    writeWhole(path.join(stamps, `${keyName(call.key)}.json`), JSON.stringify(stamp));
  } catch {
    // Unstamped: the call is only not watched. The pre hook's own decision stands as it was.
  }
}

/** The stamp of `key`, taken away (a second post hook for the same call finds none), or null. */
function takeStamp(dir: string, key: string): Stamp | null {
  const file = path.join(dir, 'stamps', `${keyName(key)}.json`);
  const taken = `${file}.${process.pid}.taken`;
  try {
    renameSync(file, taken);
  } catch {
    return null;
  }
  try {
    const stamp = JSON.parse(readFileSync(taken, 'utf8')) as Stamp;
    // Past its age it may be a stamp of another call that once had the same key.
    return Date.now() - stamp.at > STAMP_MS ? null : stamp;
  } catch {
    return null;
  } finally {
    rmSync(taken, { force: true });
  }
}

/** What one held file looked like before and after, in words: `changed`, `created`, `deleted`. */
function changeOf(before: FileStamp): 'changed' | 'created' | 'deleted' | null {
  const now = statOf(before.file);
  if (before.size === null) return now.size === null ? null : 'created';
  if (now.size === null) return 'deleted';
  return now.size !== before.size || now.mtimeMs !== before.mtimeMs || now.ino !== before.ino
    ? 'changed'
    : null;
}

interface Found {
  readonly file: string;
  readonly shown: string;
  readonly how: 'changed' | 'created' | 'deleted';
  readonly lock: HeldLock;
}

/** Every held file the call changed, created or deleted (new files a glob lock now matches too). */
function compare(stamp: Stamp): Found[] {
  const found: Found[] = [];
  const show = (file: string) => path.relative(stamp.root, file) || file;
  const stamped = new Set<string>();
  for (const before of stamp.files) {
    stamped.add(before.file);
    const how = changeOf(before);
    const lock = stamp.locks[before.lock];
    if (how !== null && lock) found.push({ file: before.file, shown: show(before.file), how, lock });
  }
  if (!stamp.cut) {
    // A file made where a folder or glob lock reaches was not there to stamp (the stamped ones are
    // not looked at again).
    const { files } = heldFiles(stamp.root, stamp.locks, stamped);
    for (const [[file, now], i] of files) {
      const lock = stamp.locks[i];
      if (lock && now.size !== null) {
        found.push({ file, shown: show(file), how: 'created', lock });
      }
    }
  }
  return found;
}

function holderOf(lock: HeldLock): string {
  return lock.parent_agent_id ? `${lock.agent_id} (sub-agent of ${lock.parent_agent_id})` : lock.agent_id;
}

/** What the agent whose command did it reads: what changed, who holds it, how to put it back. */
export function trespasserLine(found: Found, agent: HookAgent, name: string): string {
  const intent = found.lock.intent ? `, intent "${found.lock.intent}"` : '';
  const file = shellQuote(found.shown);
  const back =
    found.how === 'created'
      ? `rm ${file} if your command made it by mistake`
      : `git diff -- ${file} shows what changed; git checkout -- ${file} restores the committed version, right only if ${found.lock.agent_id} had no uncommitted change in it`;
  return [
    `agent-lock: your shell command ${found.how} ${found.shown}, which is locked by another agent: ${holderOf(found.lock)} holds ${found.lock.scope}${intent}.`,
    `You are ${agent.agentId}; this is recorded (${name} log --scope ${shellQuote(found.lock.scope)}) and ${found.lock.agent_id} will be told.`,
    `Put it back (${back}) or ask ${found.lock.agent_id} what to do, and leave it alone while it is held.`,
  ].join(' ');
}

interface Notice {
  readonly at: number;
  readonly holder: string;
  readonly by: string;
  readonly file: string;
  readonly how: string;
  readonly scope: string;
  readonly command: string;
}

/** What the holder reads once, on one of its next hook calls. */
export function holderLine(notice: Notice): string {
  return `agent-lock: ${notice.by} ${notice.how} ${notice.file}, which you hold (${notice.scope}), with a shell command at ${new Date(notice.at).toISOString()}: ${JSON.stringify(notice.command)}. Check the file (git diff -- ${shellQuote(notice.file)}) before you go on.`;
}

/** Leaves a notice for the holder: `tell/<holder's key>.<time>.<pid>.<n>.json`. */
function leaveNotice(dir: string, notice: Notice, n: number): void {
  const tell = path.join(dir, 'tell');
  mkdirSync(tell, { recursive: true, mode: 0o700 });
  prune(tell, NOTICE_MS, notice.at);
  writeWhole(
    path.join(tell, `${keyName(notice.holder)}.${notice.at}.${process.pid}.${n}.json`),
    JSON.stringify(notice),
  );
}

/**
 * After a shell call: compares its stamp, records what changed in the store and leaves the
 * holders their notices. Returns what the agent should read (empty: nothing happened, or the call
 * was never stamped).
 */
export async function checkAfterShell(cli: CliContext, key: string): Promise<string[]> {
  const env = cli.io.env;
  const dir = trespassDir(env, false);
  if (dir === null) return [];
  const stamp = takeStamp(dir, key);
  if (stamp === null) return [];
  const found = compare(stamp);
  if (found.length === 0) return [];
  let unrecorded: string | null = null;
  try {
    const { openStore } = await import('../store/store.js');
    const backend = cli.globals().backend;
    const store = await openStore({
      dir: stamp.root,
      env,
      ...(backend === 'file' || backend === 'redis' ? { backend } : {}),
    });
    try {
      await store.as(asked(stamp.agent)).recordTrespass(
        found.map((f) => ({ file: f.shown, lock: f.lock })),
        stamp.command,
      );
    } finally {
      await store.close().catch(() => {});
    }
  } catch (error) {
    // The agent and the holder are still told: what happened matters more than the record.
    unrecorded = error instanceof Error ? error.message : String(error);
  }
  const at = Date.now();
  found.forEach((f, n) => {
    leaveNotice(
      dir,
      {
        at,
        holder: f.lock.agent_id,
        by: stamp.agent.agentId,
        file: f.shown,
        how: f.how,
        scope: f.lock.scope,
        command: stamp.command,
      },
      n,
    );
  });
  const lines = found.map((f) => trespasserLine(f, stamp.agent, cli.name));
  if (unrecorded !== null) lines.push(`agent-lock could not record this in the store: ${unrecorded}`);
  return lines;
}

/**
 * Whether any notice waits for anyone: one readdir, so that a hook call asks who its agent is
 * only when there is something to tell.
 */
export function noticesWaiting(env: Env): boolean {
  const dir = trespassDir(env, false);
  if (dir === null) return false;
  try {
    return readdirSync(path.join(dir, 'tell')).length > 0;
  } catch {
    return false;
  }
}

/** The notices left for `agentId`, each taken once (the first hook call to take it tells it). */
export function takeNotices(env: Env, agentId: string): string[] {
  const now = Date.now();
  return takeTold<Notice>(env, agentId, '.json', (notice) => notice.holder)
    .filter((notice) => now - notice.at <= NOTICE_MS)
    .map(holderLine);
}
