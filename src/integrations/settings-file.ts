/**
 * A harness's settings file as hooks install writes it: written whole (aside, then renamed over),
 * and refused, unchanged, when it is not what the harness expects.
 */
import { chmodSync, lstatSync, renameSync, rmSync, type Stats, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentLockError } from '../core/errors.js';
import { makeDirs } from '../host/make-dirs.js';

export function lstatSafe(p: string): Stats | null {
  try {
    return lstatSync(p);
  } catch {
    return null;
  }
}

/** Written aside and renamed over: the harness never reads half a file. */
export function writeAtomically(file: string, body: string, mode: number): void {
  makeDirs(path.dirname(file));
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    writeFileSync(temp, body, { flag: 'wx', mode });
    chmodSync(temp, mode);
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

export function malformed(file: string, why: string, owner = 'its harness'): AgentLockError {
  return new AgentLockError('E_USAGE', `${file} is not what ${owner} expects: ${why}; left unchanged`, {
    hint: 'fix the file, then run this again',
  });
}
