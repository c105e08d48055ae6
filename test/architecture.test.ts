/**
 * The rules of the source map (docs/development.md#where-things-are), read with TypeScript's own
 * parser: imports (static, `export ... from`, and `import()`), and the calls core/ must not make.
 * No regular expression over source text: a comment or a string (a glob such as '../docs/**') can
 * neither hide an import or a call nor make one up.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const SEP = path.sep;

function parse(file: string, text = readFileSync(path.join(root, file), 'utf8')): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

function sources(folder: string): string[] {
  return readdirSync(path.join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(folder, file));
}

function walk(node: ts.Node, visit: (node: ts.Node) => void): void {
  visit(node);
  node.forEachChild((child) => walk(child, visit));
}

interface Import {
  /** The module as written: './x.js', 'node:fs', 'ioredis'. */
  readonly specifier: string;
  /** A relative import resolved to its source path (src/.../x.ts); null for a package. */
  readonly target: string | null;
  /** Erased at compile time (`import type`, `export type`, or only type names imported). */
  readonly typeOnly: boolean;
  /** `import()`: loaded when reached, not when the importer loads. */
  readonly dynamic: boolean;
  /** Where it is written. */
  readonly node: ts.Node;
}

function importsOf(source: ts.SourceFile): Import[] {
  const found: Import[] = [];
  const add = (literal: ts.Expression | undefined, typeOnly: boolean, dynamic: boolean) => {
    if (literal === undefined || !ts.isStringLiteralLike(literal)) return;
    const specifier = literal.text;
    const target = specifier.startsWith('.')
      ? path.join(path.dirname(source.fileName), specifier).replace(/\.js$/, '.ts')
      : null;
    found.push({ specifier, target, typeOnly, dynamic, node: literal });
  };
  walk(source, (node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const named = clause?.namedBindings;
      const onlyTypes =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            named !== undefined &&
            ts.isNamedImports(named) &&
            named.elements.length > 0 &&
            named.elements.every((e) => e.isTypeOnly)));
      add(node.moduleSpecifier, onlyTypes, false);
    } else if (ts.isExportDeclaration(node)) {
      const named = node.exportClause;
      const onlyTypes =
        node.isTypeOnly ||
        (named !== undefined && ts.isNamedExports(named) && named.elements.every((e) => e.isTypeOnly));
      add(node.moduleSpecifier, onlyTypes, false);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node.arguments[0], false, true);
    } else if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'require'
    ) {
      add(node.arguments[0], false, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node.argument.literal, true, false);
    }
  });
  return found;
}

const imports = (file: string): Import[] => importsOf(parse(file));

/**
 * Modules that reach the disk, the process or the network. node:crypto is allowed for its hashes
 * (a hash is a pure function); its random numbers are not (below).
 */
const IMPURE_MODULES =
  /^(node:)?(fs|fs\/promises|child_process|os|net|process|http|https|dgram|worker_threads)$|^ioredis$/;

/** What core/ may not do, found in a parsed file: each as `line: what`. */
function impurities(source: ts.SourceFile): string[] {
  const found: string[] = [];
  const at = (node: ts.Node, what: string) =>
    found.push(`${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}: ${what}`);
  for (const i of importsOf(source))
    if (IMPURE_MODULES.test(i.specifier)) at(i.node, `imports ${i.specifier}`);
  walk(source, (node) => {
    if (ts.isIdentifier(node) && node.text === 'process') {
      const parent = node.parent;
      // `x.process` and `{ process: ... }` name a property, not the global.
      const isName =
        (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
        (ts.isPropertyAssignment(parent) && parent.name === node) ||
        ts.isPropertySignature(parent) ||
        ts.isPropertyDeclaration(parent);
      if (!isName) at(node, 'process');
    }
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const call = node.expression.getText(source).replace(/\s/g, '');
      if (/^(globalThis\.)?(Date\.now|Math\.random|performance\.now|crypto\.\w+)$/.test(call))
        at(node, `${call}()`);
    }
    if (
      ts.isNewExpression(node) &&
      node.expression.getText(source) === 'Date' &&
      (node.arguments?.length ?? 0) === 0
    ) {
      at(node, 'new Date()');
    }
  });
  return found;
}

/** The layer a source file belongs to: its first folder under src/, or the file itself at the root. */
const layer = (file: string) => file.split(SEP)[1] ?? file;

describe('architecture', () => {
  it('keeps src/core free of the disk, the process, the network, the clock and chance', () => {
    const offenders = sources('src/core').flatMap((file) =>
      impurities(parse(file)).map((w) => `${file}:${w}`),
    );
    expect(offenders).toEqual([]);
  });

  it('catches an impure call planted anywhere in a core file (a copy; the repository is not touched)', () => {
    const plants = ['Date.now()', 'process.env.HOME', 'Math.random()', 'new Date()', "import('node:fs')"];
    const missed: string[] = [];
    let count = 0;
    for (const file of sources('src/core')) {
      const text = readFileSync(path.join(root, file), 'utf8');
      // Before every statement of the file, at the top and inside every function, block and case,
      // each on a line of its own: whatever comment, string or glob comes before, the plant is code.
      const starts: number[] = [];
      walk(parse(file, text), (node) => {
        if (ts.isBlock(node) || ts.isSourceFile(node) || ts.isCaseClause(node) || ts.isDefaultClause(node)) {
          for (const statement of node.statements) starts.push(statement.getStart());
        }
      });
      let copy = text;
      for (const [n, start] of [...new Set(starts)].sort((x, y) => y - x).entries()) {
        copy = `${copy.slice(0, start)}\nvoid ${plants[n % plants.length]};\n${copy.slice(start)}`;
      }
      const plantedLines = copy.split('\n').flatMap((line, i) => (line.startsWith('void ') ? [i + 1] : []));
      const caught = new Set(impurities(parse(file, copy)).map((w) => Number(w.split(':')[0])));
      missed.push(...plantedLines.filter((line) => !caught.has(line)).map((line) => `${file}:${line}`));
      count += plantedLines.length;
    }
    expect(count).toBeGreaterThan(500);
    expect(missed).toEqual([]);
    // The case that fooled the comment stripper: after the glob '../docs/**' in core/scope.ts.
    const scope = readFileSync(path.join(root, 'src/core/scope.ts'), 'utf8');
    expect(scope).toContain("../docs/**'");
    const after = scope.indexOf('\n', scope.indexOf("../docs/**'"));
    const planted = `${scope.slice(0, after)}\n;void Date.now();${scope.slice(after)}`;
    expect(impurities(parse('src/core/scope.ts', planted))).toEqual([
      expect.stringMatching(/: Date\.now\(\)$/),
    ]);
  });

  it('layers: core imports nothing above it, backends never the store, the store never cli/ or answers/', () => {
    const rules: [string, (target: string) => boolean][] = [
      ['core', (target) => layer(target) !== 'core'],
      ['backends', (target) => layer(target) === 'store'],
      ['store', (target) => layer(target) === 'cli' || layer(target) === 'answers'],
    ];
    const offenders = rules.flatMap(([from, forbidden]) =>
      sources(`src/${from}`).flatMap((file) =>
        imports(file)
          .filter((i) => i.target !== null && forbidden(i.target))
          .map((i) => `${file} -> ${i.target}${i.dynamic ? ' (import())' : ''}`),
      ),
    );
    expect(offenders).toEqual([]);
  });

  it('reads every kind of import, import() and import type included', () => {
    const found = importsOf(
      parse(
        'src/x/a.ts',
        [
          "import type { A } from './t.js';",
          "import { type B, type C } from './u.js';",
          "import { D } from '../v.js';",
          "export { E } from './w.js';",
          "export type { F } from './y.js';",
          "// import { G } from './comment.js';",
          "const glob = '../docs/**'; const h = await import('../store/z.js');",
          "type I = import('./k.js').K;",
        ].join('\n'),
      ),
    );
    expect(found.map((i) => [i.target, i.typeOnly, i.dynamic])).toEqual([
      [`src${SEP}x${SEP}t.ts`, true, false],
      [`src${SEP}x${SEP}u.ts`, true, false],
      [`src${SEP}v.ts`, false, false],
      [`src${SEP}x${SEP}w.ts`, false, false],
      [`src${SEP}x${SEP}y.ts`, true, false],
      [`src${SEP}store${SEP}z.ts`, false, true],
      [`src${SEP}x${SEP}k.ts`, true, false],
    ]);
  });

  it('calls process.exit only from bin/', () => {
    const offenders = sources('src').filter((file) => {
      let found = false;
      walk(parse(file), (node) => {
        if (ts.isPropertyAccessExpression(node) && node.getText().replace(/\s/g, '') === 'process.exit')
          found = true;
      });
      return found;
    });
    expect(offenders).toEqual([]);
  });

  it('prints only from the CLI edge', () => {
    const offenders = sources('src')
      .filter((file) => !file.startsWith(`src${path.sep}cli`))
      .filter((file) => {
        let found = false;
        walk(parse(file), (node) => {
          if (!ts.isCallExpression(node)) return;
          const callee = node.expression.getText().replace(/\s/g, '');
          if (/^(console\.(log|error)|process\.(stdout|stderr)\.write)$/.test(callee)) found = true;
        });
        return found;
      });
    expect(offenders).toEqual([]);
  });
  it('lets only the store decide: nothing outside src/store and src/backends calls transact', () => {
    const offenders = sources('src')
      .filter((file) => !file.startsWith(`src${path.sep}backends${path.sep}`))
      .filter((file) => !file.startsWith(`src${path.sep}store${path.sep}`))
      .filter((file) => {
        let found = false;
        walk(parse(file), (node) => {
          if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
            if (node.expression.name.text === 'transact') found = true;
          }
        });
        return found;
      });
    expect(offenders).toEqual([]);
  });

  it('keeps the other front ends off cli/: mcp/, integrations/, doctor/ and ui/ never import it', () => {
    const cli = `src${path.sep}cli${path.sep}`;
    const offenders = ['src/mcp', 'src/integrations', 'src/doctor', 'src/ui']
      .flatMap(sources)
      .filter((file) => imports(file).some((i) => i.target?.startsWith(cli)));
    expect(offenders).toEqual([]);
  });

  it('has no import circles (imports that exist at run time)', () => {
    // import() loads when it is reached, after its importer has loaded: no circle at load time.
    const graph = new Map(
      sources('src').map((file) => [
        file,
        imports(file)
          .filter((i) => !i.typeOnly && !i.dynamic && i.target !== null)
          .map((i) => i.target!),
      ]),
    );
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
