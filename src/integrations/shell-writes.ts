/**
 * The files a shell command visibly writes: redirections (`>`, `>>`, `&>`, `>&`, `>|`, `> >(...)`,
 * here-documents into a file), `tee`, `sed -i` and `sed 'w f'`, `perl -i`, `awk` prints into a
 * file, `cp`/`mv`/`install`/`ln`/`rsync` targets (and `mv` sources, and what an `ln` points at),
 * `rm`/`touch`/`truncate`/`unlink`/`shred`, `dd of=`, `sort -o`, `uniq IN OUT`, `curl -o`, `wget
 * -O`, the compressors, `tar x`, `unzip`, `patch`, `ex`/`vim -es`/`ed`, `find -delete|-exec`, `xargs`
 * into a writer, and git commands that rewrite files of the work tree; through wrappers (`sudo`,
 * `env [-C DIR]`, `command`, `builtin`, `nice`, `nohup`, `timeout`, `stdbuf`, `flock`, `setsid`,
 * `ionice`, ...), `bash -c '...'`, `eval '...'`, subshells, pipelines and loops, with `cd DIR`,
 * `pushd DIR`, `command cd` followed, `~` read as HOME, quotes and escapes read as the shell does.
 * A target that is not a literal word (`> "$f"`) is nothing anyone can tell from the text: it is
 * left alone. Code run by an interpreter from the command line or from stdin (`python3 -c`, `node
 * -e`, `... | bash`, `python3 <<EOF`) is not read: the command is marked `opaque`.
 *
 * Two readers: a light hand-written one (shell-reader.ts) for the plain shapes most commands take,
 * exact where it answers, and the real shell grammar (shell-parser.ts, WebAssembly, 1 s to load)
 * for everything else.
 */
import type { Node } from './shell-parser.js';
import { commandWrites, redirectWrites } from './shell-programs.js';
import { ansiC, type LightCommand, type LightList, readLight } from './shell-reader.js';
import { type Context, expandHome, followCd, joinPath, type ShellFacts, type State } from './shell-words.js';

export type { ShellFacts } from './shell-words.js';
export { redirectWrites } from './shell-programs.js';

export type ShellWrites =
  | {
      readonly kind: 'writes';
      /** Absolute, no duplicates; a folder stands for every file below it. */
      readonly files: readonly string[];
      /** Some part runs code no reader here reads (`python3 -c`, a pipe into `bash`). */
      readonly opaque: boolean;
      /** Which reader answered: `light` never loaded the shell grammar. */
      readonly reader: 'light' | 'full';
    }
  | { readonly kind: 'unparsed' };

// ---------------------------------------------------------------------------------------------
// The light reader's commands

async function lightList(list: LightList, state: State, ctx: Context): Promise<string[]> {
  const written: string[] = [];
  for (const pipeline of list) {
    // A pipeline's parts run in child shells: a `cd` there stays there.
    const alone = pipeline.length === 1;
    for (const command of pipeline) {
      written.push(...(await lightCommand(command, alone ? state : { cwd: state.cwd }, ctx)));
    }
  }
  return written;
}

async function lightCommand(command: LightCommand, state: State, ctx: Context): Promise<string[]> {
  const written: string[] = [];
  // Redirections are opened before the command runs, where it starts.
  for (const r of command.redirects) {
    if (redirectWrites(r.op, r.target)) written.push(joinPath(state.cwd, r.target!));
  }
  const [name, ...args] = command.words;
  if (name === undefined) return written;
  if (name !== null) written.push(...(await commandWrites(name, args, state.cwd, ctx)));
  followCd(name, args, state, ctx);
  return written;
}

// ---------------------------------------------------------------------------------------------
// The full grammar's syntax tree

/** The literal text of a word, or null when it has an expansion (`$x`, `$(...)`; a glob is kept). */
function literal(node: Node, ctx: Context, first = true): string | null {
  switch (node.type) {
    case 'word':
    case 'number': {
      const text = node.text.replace(/\\(.)/gs, '$1');
      // Only an unquoted `~` at the start of a word is HOME.
      return first && node.text.startsWith('~') ? expandHome(text, ctx) : text;
    }
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'ansi_c_string':
      return ansiC(node.text.slice(2, -1));
    case 'string': {
      let out = '';
      for (const child of node.namedChildren) {
        if (child === null) continue;
        if (child.type !== 'string_content') return null;
        out += child.text;
      }
      return out.replace(/\\([$`"\\])/g, '$1').replace(/\\\n/g, '');
    }
    case 'concatenation': {
      let out = '';
      let index = 0;
      for (const child of node.namedChildren) {
        const part = child === null ? null : literal(child, ctx, first && index === 0);
        if (part === null) return null;
        out += part;
        index++;
      }
      return out;
    }
    default:
      return null;
  }
}

function operatorOf(node: Node): string {
  return node.children
    .filter((c): c is Node => c !== null && !c.isNamed)
    .map((c) => c.type)
    .join('');
}

async function simpleCommand(node: Node, state: State, ctx: Context): Promise<string[]> {
  const nameNode = node.childForFieldName('name');
  const name = nameNode === null ? null : literal(nameNode.namedChildren[0] ?? nameNode, ctx);
  const args = node.childrenForFieldName('argument').map((a) => (a === null ? null : literal(a, ctx)));
  const written: string[] = [];
  // Redirections written before the name (`>f cmd`), and substitutions inside arguments.
  for (const child of node.namedChildren) {
    if (child === null || child === nameNode) continue;
    written.push(...(await walk(child, { cwd: state.cwd }, ctx)));
  }
  if (name !== null) written.push(...(await commandWrites(name, args, state.cwd, ctx)));
  followCd(name, args, state, ctx);
  return written;
}

/** Every file `node` writes; `state.cwd` follows `cd` along a list. */
async function walk(node: Node, state: State, ctx: Context): Promise<string[]> {
  switch (node.type) {
    case 'command':
      return simpleCommand(node, state, ctx);
    case 'file_redirect': {
      const destination = node.childForFieldName('destination');
      if (destination === null) return [];
      const file = literal(destination, ctx);
      if (redirectWrites(operatorOf(node).replace(/^\d+/, ''), file)) return [joinPath(state.cwd, file!)];
      // `> >(tee f)`: what the process substitution writes.
      return file === null ? walk(destination, { cwd: state.cwd }, ctx) : [];
    }
    case 'redirected_statement': {
      const body = node.childForFieldName('body');
      // The grammar hangs `> f` of `cd src && echo x > f` on the whole list: it is the last
      // command's, opened after the `cd`. On one command (`cd src > log`) it is opened before it runs.
      if (body === null || body.type === 'list') break;
      const written: string[] = [];
      for (const child of node.namedChildren) {
        if (child !== null && child !== body) written.push(...(await walk(child, { cwd: state.cwd }, ctx)));
      }
      written.push(...(await walk(body, state, ctx)));
      return written;
    }
    // These run in a child shell: a `cd` inside stays inside.
    case 'subshell':
    case 'pipeline':
    case 'command_substitution':
    case 'process_substitution': {
      const written: string[] = [];
      for (const child of node.namedChildren) {
        if (child !== null) written.push(...(await walk(child, { cwd: state.cwd }, ctx)));
      }
      return written;
    }
  }
  // Lists, programs, braces, loops, conditionals, here-documents: in order, sharing the state, so
  // `cd DIR && cmd` runs cmd in DIR.
  const written: string[] = [];
  for (const child of node.namedChildren) {
    if (child !== null) written.push(...(await walk(child, state, ctx)));
  }
  return written;
}

/** The files, each once; devices (`/dev/null`) are nobody's to lock. */
function targets(files: readonly string[]): string[] {
  return [...new Set(files)].filter((f) => !f.startsWith('/dev/'));
}

/** Thrown inside the light reader's walk when a nested script needs the full grammar. */
const NEEDS_FULL = Symbol('needs the full grammar');

/**
 * What `command`, read with the light reader only, writes; null when it needs the full grammar.
 * Never loads the grammar.
 */
export async function lightShellWrites(
  command: string,
  cwd: string,
  facts: ShellFacts,
): Promise<Extract<ShellWrites, { kind: 'writes' }> | null> {
  const list = readLight(command, facts.home);
  if (list === null) return null;
  const ctx: Context = {
    ...facts,
    opaque: false,
    script: async (text, at) => {
      const inner = readLight(text, facts.home);
      if (inner === null) throw NEEDS_FULL;
      return lightList(inner, { cwd: at }, ctx);
    },
  };
  try {
    const files = await lightList(list, { cwd }, ctx);
    return { kind: 'writes', files: targets(files), opaque: ctx.opaque, reader: 'light' };
  } catch (error) {
    if (error === NEEDS_FULL) return null;
    throw error;
  }
}

/**
 * The files `command`, run in `cwd`, visibly writes (absolute, no duplicates), or `unparsed` when
 * the shell grammar cannot read it (nor a `bash -c` script inside it). The light reader answers
 * when it can; the grammar's WebAssembly is loaded only when it cannot. This is what a claim on
 * edit claims: it does not ask whether anything is held.
 */
export async function shellWriteTargets(
  command: string,
  cwd: string,
  facts: ShellFacts,
  parse?: (command: string) => Promise<Node | null>,
): Promise<ShellWrites> {
  const light = await lightShellWrites(command, cwd, facts);
  if (light !== null) return light;
  // The grammar's WebAssembly is loaded here, and only here.
  const parser = parse ?? (await import('./shell-parser.js')).parseShell;
  const tree = await parser(command);
  if (tree === null) return { kind: 'unparsed' };
  let unparsed = false;
  const ctx: Context = {
    ...facts,
    opaque: false,
    script: async (text, at) => {
      const inner = readLight(text, facts.home);
      if (inner !== null) return lightList(inner, { cwd: at }, ctx);
      const nested = await parser(text);
      if (nested === null) {
        unparsed = true;
        return [];
      }
      return walk(nested, { cwd: at }, ctx);
    },
  };
  const files = await walk(tree, { cwd }, ctx);
  if (unparsed) return { kind: 'unparsed' };
  return { kind: 'writes', files: targets(files), opaque: ctx.opaque, reader: 'full' };
}
