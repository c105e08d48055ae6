/**
 * Commands are typed end to end: no `any` in src/cli/ (read with TypeScript's own parser, so a
 * comment or a string saying "any" is no finding), and each command's options are a type read from
 * its own flag strings, so a misspelt option or a wrong type fails to compile.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { defineCommand, type OptionsOf, type RunArgs } from '../../src/cli/command.js';
import { WAIT_FLAGS } from '../../src/cli/flags.js';

const root = path.resolve(import.meta.dirname, '../..');

/** Each `any` written as a type in a source text, as `line: text`. */
function anys(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      found.push(`${file}:${line}: ${node.parent.getText()}`);
    }
    node.forEachChild(visit);
  };
  visit(source);
  return found;
}

describe('command types', () => {
  it('has no any in src/cli/', () => {
    const files = readdirSync(path.join(root, 'src/cli'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.ts'))
      .map((file) => path.join('src/cli', file));
    expect(files.length).toBeGreaterThan(20);
    expect(files.flatMap((file) => anys(file, readFileSync(path.join(root, file), 'utf8')))).toEqual([]);
  });

  it('finds an any wherever it is written as a type, and not in a comment or a string', () => {
    const planted = [
      "// any in a comment, 'any' in a string",
      'const said = "any";',
      'export function f(a: any, ...rest: any[]): Promise<any> { return a as any; }',
      '// biome-ignore lint/suspicious/noExplicitAny: a reason',
      'type T = { run?: (cli: unknown, ...args: any[]) => void };',
    ].join('\n');
    expect(anys('planted.ts', planted).map((f) => f.split(':')[1])).toEqual(['3', '3', '3', '3', '5']);
  });

  it("derives a command's options from its flag strings, as commander parses them", () => {
    const flags = [
      { flags: '-m, --message <intent>', description: '' },
      { flags: '--shared', description: '' },
      { flags: '-E, --conflict-exit-code <code>', description: '' },
      { flags: '--scope <scope...>', description: '' },
      ...WAIT_FLAGS,
    ] as const;
    expectTypeOf<OptionsOf<typeof flags>>().toEqualTypeOf<{
      message?: string;
      shared?: true;
      conflictExitCode?: string;
      scope?: string[];
      wait?: string | boolean;
      w?: string;
    }>();
    expectTypeOf<RunArgs<'<scope> <text...>', typeof flags>>().toEqualTypeOf<
      [string, string[], OptionsOf<typeof flags>]
    >();
    expectTypeOf<RunArgs<'[scope...]', readonly []>>().toEqualTypeOf<[string[], OptionsOf<readonly []>]>();
    expectTypeOf<keyof OptionsOf<readonly []>>().toBeNever();
  });

  it('refuses to compile a misspelt option or a wrong positional (the @ts-expect-error lines)', async () => {
    const seen: unknown[] = [];
    const command = defineCommand({
      name: 'typing-example',
      args: '<scope...>',
      summary: 'an example command',
      flags: [{ flags: '-m, --message <intent>', description: 'what' }],
      run: async (_cli, scopes, o) => {
        // @ts-expect-error misspelt: the flag is --message
        seen.push(o.mesage);
        // @ts-expect-error scopes are strings, not numbers
        const n: number[] = scopes;
        seen.push(n, o.message);
        return {
          command: 'typing-example',
          status: 'listed',
          exitCode: 0,
          locks: [],
          conflicts: [],
          message: '',
          text: [],
        };
      },
    });
    // The definition holds at run time too: commander's arguments reach the body as given.
    await command.run?.(undefined as never, ['a'], { message: 'm' });
    expect(seen).toEqual([undefined, ['a'], 'm']);
  });
});
