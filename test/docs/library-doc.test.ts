/**
 * docs/library.md against the package's types: every name `import ... from 'agent-lock'` offers, and
 * every member of the handles a user holds (`Locks`, `Session`, `Store`, `Lease`), is named on the
 * page. The names come from TypeScript's own reading of src/index.ts, so an export added without
 * a word in the reference fails here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const page = readFileSync(`${repo}docs/library.md`, 'utf8');

function exported(): { names: string[]; members: Map<string, string[]> } {
  const entry = `${repo}src/index.ts`;
  const program = ts.createProgram([entry], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const names: string[] = [];
  const members = new Map<string, string[]>();
  for (const symbol of checker.getExportsOfModule(module)) {
    names.push(symbol.name);
    if (!['Locks', 'Session', 'Store', 'Lease'].includes(symbol.name)) continue;
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    const props = checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(target));
    // Symbol-keyed members (`[Symbol.asyncDispose]`) have compiler-made names; the page spells them.
    members.set(
      symbol.name,
      props.map((p) => p.name).filter((n) => !n.startsWith('__@')),
    );
  }
  return { names, members };
}

describe('docs/library.md', () => {
  const { names, members } = exported();

  it('names every export of the package', () => {
    expect(names.length).toBeGreaterThan(30);
    expect(names.filter((n) => !page.includes(`\`${n}\``) && !page.includes(`\`${n}(`))).toEqual([]);
  });

  it('names every member of Locks, Session, Store and Lease', () => {
    expect([...members.keys()].sort()).toEqual(['Lease', 'Locks', 'Session', 'Store']);
    const missing = [...members].flatMap(([owner, list]) =>
      list.filter((m) => !page.includes(`\`${m}\``)).map((m) => `${owner}.${m}`),
    );
    expect(missing).toEqual([]);
  });
});
