/** Where this package's own command line lives on the machine, for commands written into files. */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The installed package's bin script, found upward from this module (src/ in tests, dist/ built). */
export function packageBin(): string | null {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string };
      const bin = path.join(dir, 'bin', 'alock.js');
      if (pkg.name === 'agent-lock' && existsSync(bin)) return realpathSync(bin);
    } catch {
      // no package.json here: keep climbing
    }
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return null;
}
