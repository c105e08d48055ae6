/**
 * `mkdir -p`, one level at a time. Node's `mkdirSync(dir, {recursive: true})` never returns where a
 * file system answers ENOENT to creating a child of a folder that exists (procfs: `/proc/foo`): it
 * creates the parent (EEXIST), tries the child again, and spins there for ever at full CPU.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export function makeDirs(dir: string, mode?: number): void {
  const missing: string[] = [];
  for (let at = path.resolve(dir); !existsSync(at); at = path.dirname(at)) {
    missing.push(at);
    if (path.dirname(at) === at) break;
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder, mode === undefined ? undefined : { mode });
    } catch (error) {
      // Made by someone else meanwhile (or a dangling symlink, which the callers check for).
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}
