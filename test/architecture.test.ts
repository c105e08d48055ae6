import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');

/** Source text without comments: a comment may name what the code must not do. */
function code(file: string): string {
  return readFileSync(path.join(root, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

function sources(folder: string): string[] {
  return readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(folder, file));
}

describe('architecture', () => {
  it('keeps src/core free of the disk, the process and the network', () => {
    const offenders = sources('src/core').filter((file) => {
      const text = code(file);
      return /from 'node:(fs|child_process|os|net|process)'|from 'ioredis'|\bprocess\.|Date\.now\(/.test(
        text,
      );
    });
    expect(offenders).toEqual([]);
  });

  it('calls process.exit only from bin/', () => {
    const offenders = sources('src').filter((file) => code(file).includes('process.exit'));
    expect(offenders).toEqual([]);
  });

  it('prints only from the CLI edge', () => {
    const offenders = sources('src')
      .filter((file) => !file.startsWith(`src${path.sep}cli`))
      .filter((file) => /console\.(log|error)|process\.(stdout|stderr)\.write/.test(code(file)));
    expect(offenders).toEqual([]);
  });
});
