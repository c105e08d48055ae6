/**
 * The shell parser, loaded only when a command could write a file: tree-sitter's Bash grammar,
 * run as WebAssembly (web-tree-sitter), so no native addon is built on install. The two .wasm files
 * sit beside this bundle in dist/lazy (scripts/build.mjs copies them); from the sources they are
 * taken from node_modules.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { Language, type Node, Parser } from 'web-tree-sitter';

export type { Node } from 'web-tree-sitter';

function wasmFile(name: string, packaged: string): string {
  const beside = fileURLToPath(new URL(`./${name}`, import.meta.url));
  if (existsSync(beside)) return beside;
  return createRequire(import.meta.url).resolve(packaged);
}

let parser: Promise<Parser> | null = null;

/**
 * V8 moves hot WebAssembly functions to its optimising compiler on background threads. The
 * grammar's lexer is one huge function: optimising it took about 600 ms of CPU on every hook call
 * that loaded the grammar, and the process could not exit before it was done (measured: 0.8 s for
 * the whole call, 0.2 s with these flags, Node 20). A hook parses one short command: the baseline
 * compiler is enough.
 */
const WASM_FLAGS = ['--no-wasm-tier-up', '--no-wasm-dynamic-tiering'];

async function load(): Promise<Parser> {
  for (const flag of WASM_FLAGS) setFlagsFromString(flag);
  const runtime = wasmFile('tree-sitter.wasm', 'web-tree-sitter/tree-sitter.wasm');
  await Parser.init({ locateFile: () => runtime });
  const bash = await Language.load(
    wasmFile('tree-sitter-bash.wasm', 'tree-sitter-bash/tree-sitter-bash.wasm'),
  );
  const p = new Parser();
  p.setLanguage(bash);
  return p;
}

/** The syntax tree of `command`, or null when the parser finds an error anywhere in it. */
export async function parseShell(command: string): Promise<Node | null> {
  parser ??= load();
  const tree = (await parser).parse(command);
  if (tree === null || tree.rootNode.hasError) return null;
  return tree.rootNode;
}
