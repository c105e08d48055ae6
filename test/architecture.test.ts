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

/** Relative imports of a source file, resolved to source paths; `import type` only when asked. */
function imports(file: string, withTypes: boolean): string[] {
  const pattern = withTypes
    ? /^\s*(?:import|export)\s+(?:[^'";]*?\sfrom\s+)?'(\.{1,2}\/[^']+)'/gm
    : /^\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?'(\.{1,2}\/[^']+)'/gm;
  return [...code(file).matchAll(pattern)].map((match) =>
    path.join(path.dirname(file), match[1] as string).replace(/\.js$/, '.ts'),
  );
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
  it('lets only the store decide: nothing outside src/store and src/backends calls transact', () => {
    const offenders = sources('src')
      .filter((file) => !file.startsWith(`src${path.sep}backends${path.sep}`))
      .filter((file) => !file.startsWith(`src${path.sep}store${path.sep}`))
      .filter((file) => /\.transact\s*\(/.test(code(file)));
    expect(offenders).toEqual([]);
  });

  it('keeps the other front ends off cli/: mcp/, integrations/, doctor/ and ui/ never import it', () => {
    const cli = `src${path.sep}cli${path.sep}`;
    const offenders = ['src/mcp', 'src/integrations', 'src/doctor', 'src/ui']
      .flatMap(sources)
      .filter((file) => imports(file, true).some((target) => target.startsWith(cli)));
    expect(offenders).toEqual([]);
  });

  it('has no import circles (imports that exist at run time)', () => {
    const graph = new Map(sources('src').map((file) => [file, imports(file, false)]));
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const trail: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      trail.push(file);
      for (const next of graph.get(file) ?? []) {
        if (!graph.has(next)) continue;
        if (state.get(next) === 'open')
          circles.push([...trail.slice(trail.indexOf(next)), next].join(' -> '));
        else if (!state.has(next)) visit(next);
      }
      trail.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(graph.size).toBeGreaterThan(50);
    expect(circles).toEqual([]);
  });

  it('keeps every source file at 500 lines or fewer', () => {
    const long = sources('src')
      .map((file) => ({
        file,
        lines: readFileSync(path.join(root, file), 'utf8').trimEnd().split('\n').length,
      }))
      .filter(({ lines }) => lines > 500);
    expect(long).toEqual([]);
  });
});
