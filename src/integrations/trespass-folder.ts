/**
 * Where trespass stamps and notices are kept between a call's pre and post hooks: a private folder
 * of the OS temp dir (per user), its entries written whole and bounded in number and age.
 */
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';

type Env = Readonly<Record<string, string | undefined>>;

/** At most this many stamps or notices are kept: the oldest go first. */
const MAX_KEPT = 256;
/**
 * The folder of this user's stamps and notices: `<tmp>/agent-lock-<uid>`, made private (0700).
 * One that is not a real folder of this user (a link, another user's) is never used: null.
 */
export function trespassDir(env: Env, create: boolean): string | null {
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  const dir = path.join(env.TMPDIR || os.tmpdir(), `agent-lock-${uid ?? 'user'}`);
  try {
    const stat = lstatSync(dir);
    if (!stat.isDirectory() || (uid !== null && stat.uid !== uid)) return null;
    return dir;
  } catch {
    if (!create) return null;
  }
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return null;
  }
  return trespassDir(env, false);
}

/**
 * A file name for `key`: two FNV-1a hashes of it (64 bits), not node:crypto, which the hook's
 * path on a free call never loads.
 */
export function keyName(key: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
}

/** Writes `body` to `file` whole (aside, then renamed over): a reader never sees half a stamp. */
export function writeWhole(file: string, body: string): void {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, body, { mode: 0o600 });
  renameSync(temp, file);
}

/**
 * Drops entries of `dir` older than `maxAge` (by mtime), and the oldest past MAX_KEPT. With
 * `lookPast`, a folder of no more entries than that is left as it is, unlooked at: the stamps
 * folder, pruned on every shell call, where a stat of each entry cost milliseconds and a stamp past
 * its age is never used. The tell folder is pruned whole, and only when a notice or hint is left:
 * a file there makes every hook call look for its own.
 */
export function prune(dir: string, maxAge: number, now: number, lookPast = 0): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  if (names.length <= lookPast) return;
  const aged = names
    .map((name) => {
      try {
        return { name, at: statSync(path.join(dir, name)).mtimeMs };
      } catch {
        return { name, at: 0 };
      }
    })
    .sort((x, y) => y.at - x.at);
  // Pruned past lookPast, a folder is left with at most half of it, so that the next look is far off.
  const keep = lookPast > 0 ? Math.floor(lookPast / 2) : MAX_KEPT;
  aged.forEach((entry, i) => {
    if (i >= keep || now - entry.at > maxAge) rmSync(path.join(dir, entry.name), { force: true });
  });
}

/**
 * The items left in the tell folder for `agentId` (files `<its key>.*<ext>`, oldest name first),
 * each taken once: renamed away before it is read, so two hook calls of one agent never both take
 * it. One whose `owner` is another agent (an id that hashes alike) goes back; an unreadable one is
 * dropped.
 */
export function takeTold<T>(env: Env, agentId: string, ext: string, owner: (item: T) => unknown): T[] {
  const dir = trespassDir(env, false);
  if (dir === null) return [];
  const tell = path.join(dir, 'tell');
  const prefix = `${keyName(agentId)}.`;
  let names: string[];
  try {
    names = readdirSync(tell).filter((n) => n.startsWith(prefix) && n.endsWith(ext));
  } catch {
    return [];
  }
  const items: T[] = [];
  for (const name of names.sort()) {
    const file = path.join(tell, name);
    const taken = `${file}.${process.pid}.taken`;
    try {
      renameSync(file, taken);
    } catch {
      continue;
    }
    try {
      const item = JSON.parse(readFileSync(taken, 'utf8')) as T;
      if (owner(item) !== agentId) {
        renameSync(taken, file);
        continue;
      }
      items.push(item);
    } catch {
      // Unreadable: dropped.
    }
    rmSync(taken, { force: true });
  }
  return items;
}
