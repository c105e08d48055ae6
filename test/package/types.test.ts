/**
 * The published declarations, as a TypeScript user compiles them: without @types/node (`types: []`)
 * and with `skipLibCheck: false`, so that every .d.ts the package ships is checked. The package is
 * copied (package.json and dist/types), not linked: through a link the compiler could find this
 * repository's own node_modules/@types/node and hide a missing type.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const tsc = path.join(repo, 'node_modules', 'typescript', 'bin', 'tsc');

const CONSUMER = `import { AgentLockError, LeaseLostError, openLocks, type Lock } from 'agent-lock';

const locks = await openLocks({ dir: '.' });
const claim = await locks.acquire(['src/**'], { intent: 'refactor' });
const first: Lock | undefined = claim.status === 'acquired' ? claim.locks[0] : undefined;
export const fence: number | undefined = first?.fence;
const held = await locks.hold(['@merge'], { ttl: 30 });
if (held.lease) {
  const lost: AbortSignal = held.lease.signal;
  const aborted: boolean = lost.aborted;
  if (aborted) throw lost.reason;
  await held.lease[Symbol.asyncDispose]();
}
export const isLockError = (e: unknown) => e instanceof AgentLockError || e instanceof LeaseLostError;
await locks.close();
`;

let base: string;
beforeAll(() => {
  base = mkdtempSync(path.join(os.tmpdir(), 'alock-types-'));
  const pkg = path.join(base, 'node_modules', 'agent-lock');
  mkdirSync(path.join(pkg, 'dist'), { recursive: true });
  cpSync(path.join(repo, 'package.json'), path.join(pkg, 'package.json'));
  cpSync(path.join(repo, 'dist', 'types'), path.join(pkg, 'dist', 'types'), { recursive: true });
  writeFileSync(path.join(base, 'package.json'), '{"type":"module","private":true}\n');
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

function compile(source: string, options: Record<string, unknown>) {
  writeFileSync(path.join(base, 'consumer.ts'), source);
  writeFileSync(
    path.join(base, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        noEmit: true,
        types: [],
        skipLibCheck: false,
        ...options,
      },
      files: ['consumer.ts'],
    }),
  );
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: base, encoding: 'utf8' });
  return { code: r.status, output: `${r.stdout}${r.stderr}` };
}

describe('the type declarations, for a TypeScript user', () => {
  it('compile without @types/node and without skipLibCheck', () => {
    const r = compile(CONSUMER, {});
    expect(r.output).toBe('');
    expect(r.code).toBe(0);
  });

  it('compile for an older target, whose lib predates Symbol.asyncDispose', () => {
    // The package's declarations bring that lib themselves (TS2550 here before they did).
    const r = compile(CONSUMER, { target: 'ES2020' });
    expect(r.output).toBe('');
    expect(r.code).toBe(0);
  });

  it('are really checked: a wrong use of them fails to compile', () => {
    // Without this, a resolution that found no declarations at all (an `any` module) would pass too.
    const r = compile(`import { openLocks } from 'agent-lock';\nexport const n: number = openLocks;\n`, {});
    expect(r.code).not.toBe(0);
    expect(r.output).toMatch(/consumer\.ts.*TS2322/);
  });
});
