/**
 * File operations for the store folder that never follow a symlink planted where the store, a
 * record or the mutex should be, and that create everything private to the user (0700 / 0600).
 */
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { AgentLockError } from '../../core/errors.js';
import { makeDirs } from '../../host/make-dirs.js';
import { randomTextPooled } from '../../host/random.js';

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_APPEND, O_NOFOLLOW } = constants;

function unsafe(path: string, what: string, cause?: unknown): AgentLockError {
  return new AgentLockError('E_STORE_UNSAFE', `${path} ${what}`, {
    cause,
    hint: 'remove it, or point AGENT_LOCK_DIR at a private folder',
  });
}

/** Creates the store folder (0700) or checks the one that is there. */
export function ensureStoreDir(dir: string): void {
  // A symlink (even a dangling one) where the store should be is refused before anything is created.
  try {
    if (lstatSync(dir).isSymbolicLink()) throw unsafe(dir, 'is a symlink, not a store folder');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  try {
    makeDirs(dir, 0o700);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') {
      throw new AgentLockError('E_STORE_UNREADABLE', `cannot create the store ${dir}: ${code ?? error}`, {
        cause: error,
        hint: 'check the folder permissions, or set AGENT_LOCK_DIR',
      });
    }
  }
  const stat = lstatSync(dir);
  if (stat.isSymbolicLink()) throw unsafe(dir, 'is a symlink, not a store folder');
  if (!stat.isDirectory()) throw unsafe(dir, 'is not a folder');
  if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) {
    throw unsafe(dir, 'belongs to another user');
  }
  if ((stat.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** The store folder is not where this handle opened it: moved or removed while open. */
export function storeGone(storeDir: string): AgentLockError {
  return new AgentLockError(
    'E_STORE_UNREADABLE',
    `the store folder ${storeDir} is gone (moved or removed while open)`,
    {
      hint: 'run the command again: the store is opened where the tree is now',
    },
  );
}

/**
 * Makes one folder of the store's own (0700), inside a store folder that must still be there: a
 * store moved away is not made again at its old place (E_STORE_UNREADABLE).
 */
export function makeStoreFolder(dir: string): void {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw storeGone(dirname(dir));
    if (code !== 'EEXIST') throw error;
  }
}

function openNoFollow(path: string, flags: number, mode = 0o600): number {
  try {
    return openSync(path, flags | O_NOFOLLOW, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') throw unsafe(path, 'is a symlink', error);
    throw error;
  }
}

/** Whole content of a regular file, or null when it does not exist. */
export function readPrivate(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openNoFollow(path, O_RDONLY);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw unsafe(path, 'is not a regular file');
    return readRange(fd, 0, stat.size);
  } finally {
    closeSync(fd);
  }
}

/** readPrivate, with any failure (a symlink refused, a permission) read as a missing file. */
export function readPrivateOrNull(path: string): Buffer | null {
  try {
    return readPrivate(path);
  } catch {
    return null;
  }
}

export function readRange(fd: number, from: number, to: number): Buffer {
  const buffer = Buffer.allocUnsafe(to - from);
  let done = 0;
  while (done < buffer.length) {
    const n = readSync(fd, buffer, done, buffer.length - done, from + done);
    if (n === 0) break;
    done += n;
  }
  return done === buffer.length ? buffer : buffer.subarray(0, done);
}

export function writeAll(fd: number, data: Buffer): void {
  let done = 0;
  while (done < data.length) done += writeSync(fd, data, done, data.length - done);
}

/** Writes a whole file so that readers see the old content or the new, never a mix. */
export function writeAtomic(path: string, data: string | Buffer): void {
  const tmp = `${path}.tmp.${randomTextPooled(6, 'hex')}`;
  const fd = openNoFollow(tmp, O_WRONLY | O_CREAT | O_EXCL);
  try {
    writeAll(fd, typeof data === 'string' ? Buffer.from(data) : data);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export function openAppend(path: string, create: boolean): number {
  return openNoFollow(path, O_WRONLY | O_APPEND | (create ? O_CREAT : 0));
}

export function openRead(path: string): number {
  return openNoFollow(path, O_RDONLY);
}

export function createExclusive(path: string, data: string): number {
  const fd = openNoFollow(path, O_WRONLY | O_CREAT | O_EXCL);
  try {
    writeAll(fd, Buffer.from(data));
    return fstatSync(fd).ino;
  } finally {
    closeSync(fd);
  }
}
