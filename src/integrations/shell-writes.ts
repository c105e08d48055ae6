/**
 * The files a shell command visibly writes: redirections (`>`, `>>`, `&>`, `>|`, here-documents
 * into a file), `tee`, `sed -i`, `perl -i`, `cp`/`mv`/`install`/`ln` targets (and `mv` sources),
 * `rm`/`touch`/`truncate`/`unlink`/`shred`, `dd of=`, `git checkout|restore -- PATH`, `git rm|mv`,
 * through `sudo`/`env`/`command` prefixes, `bash -c '...'`, subshells, pipelines and loops, with
 * `cd DIR && ...` followed. A target that is not a literal word (`> "$f"`) is nothing anyone can
 * tell from the text: it is left alone. The command is parsed by a real shell grammar
 * (shell-parser.ts), loaded only when the cheap pre-filter says the command could write at all.
 */
import path from 'node:path';
import type { Node } from './shell-parser.js';

export type ShellWrites =
  /** The pre-filter found nothing that could write: the parser was not even loaded. */
  | { readonly kind: 'none' }
  | { readonly kind: 'writes'; readonly files: readonly string[] }
  | { readonly kind: 'unparsed' };

/**
 * Could this command write a file? A redirection, or a word naming a writing program. Commands that
 * fail it (`ls`, `npm test`, `grep -r x src`) never pay for the parser.
 */
const MAY_WRITE =
  />|(^|[^A-Za-z0-9_.-])(tee|sed|perl|cp|mv|rm|rmdir|touch|truncate|unlink|shred|install|ln|dd|git)([^A-Za-z0-9_.-]|$)/;

export function mayWrite(command: string): boolean {
  return MAY_WRITE.test(command);
}

/** Redirection operators that open their target for writing. */
const WRITE_REDIRECTS = new Set(['>', '>>', '&>', '&>>', '>|', '<>']);

/** Programs that run the rest of their arguments as a command. */
const WRAPPERS = new Set([
  'sudo',
  'doas',
  'env',
  'command',
  'exec',
  'nice',
  'nohup',
  'time',
  'xargs',
  'timeout',
]);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh']);

interface Context {
  readonly isDirectory: (p: string) => boolean;
  readonly parse: (command: string) => Promise<Node | null>;
  /** Set when a nested `bash -c` script could not be parsed. */
  unparsed: boolean;
}

/** The literal text of a word, or null when it has an expansion (`$x`, `$(...)`, a glob is kept). */
function literal(node: Node): string | null {
  switch (node.type) {
    case 'word':
    case 'number':
      return node.text.replace(/\\(.)/g, '$1');
    case 'raw_string':
      return node.text.slice(1, -1);
    case 'string': {
      let out = '';
      for (const child of node.namedChildren) {
        if (child === null) continue;
        if (child.type !== 'string_content') return null;
        out += child.text;
      }
      return out.replace(/\\([$`"\\])/g, '$1');
    }
    case 'concatenation': {
      let out = '';
      for (const child of node.namedChildren) {
        const part = child === null ? null : literal(child);
        if (part === null) return null;
        out += part;
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

/** Non-option arguments, `--` ending the options; `takesValue` options consume the next word. */
function operands(
  args: readonly (string | null)[],
  takesValue: ReadonlySet<string> = new Set(),
): (string | null)[] {
  const out: (string | null)[] = [];
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? null;
    if (options && arg === '--') {
      options = false;
      continue;
    }
    if (options && arg?.startsWith('-') && arg !== '-') {
      if (takesValue.has(arg)) i++;
      continue;
    }
    out.push(arg);
  }
  return out;
}

function known(values: readonly (string | null)[]): string[] {
  return values.filter((v): v is string => v !== null && v !== '' && v !== '-');
}

/** What a simple command writes, given its name and literal arguments (null: not literal). */
async function commandWrites(
  name: string,
  args: (string | null)[],
  cwd: string,
  ctx: Context,
): Promise<string[]> {
  const base = path.basename(name);
  if (WRAPPERS.has(base)) {
    // Skip the wrapper's own options and VAR=value words, then read the command it runs.
    let i = 0;
    while (i < args.length && (args[i]?.startsWith('-') || /^[A-Za-z_][A-Za-z0-9_]*=/.test(args[i] ?? ''))) {
      // `sudo -u USER`, `timeout -s SIG`, `nice -n 5` take a value: a following word that is not the
      // command (`-n` alone takes none for sudo, which it makes non-interactive).
      const valued = base === 'nice' ? ['-n'] : ['-u', '-g', '-s', '-k', '-C'];
      if (valued.includes(args[i] ?? '')) i++;
      i++;
    }
    if (base === 'timeout' && i < args.length) i++; // the duration
    const inner = args[i];
    return inner ? commandWrites(inner, args.slice(i + 1), cwd, ctx) : [];
  }
  if (SHELLS.has(base)) {
    // `-c` alone or among other one-letter options (`bash -lc`, `sh -ec`).
    const c = args.findIndex((arg) => arg !== null && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg));
    const script = c >= 0 ? args[c + 1] : undefined;
    if (typeof script !== 'string') return [];
    const tree = await ctx.parse(script);
    if (tree === null) {
      ctx.unparsed = true;
      return [];
    }
    return walk(tree, { cwd }, ctx);
  }
  switch (base) {
    case 'tee':
      return known(operands(args));
    case 'sed': {
      if (!args.some((a) => a !== null && (/^-[a-zA-Z]*i/.test(a) || a.startsWith('--in-place')))) return [];
      const scripted = args.some((a) => a === '-e' || a === '-f' || a === '--expression' || a === '--file');
      const files = operands(args, new Set(['-e', '-f', '--expression', '--file', '-l']));
      return known(scripted ? files : files.slice(1));
    }
    case 'perl': {
      if (!args.some((a) => a !== null && /^-[a-zA-Z]*i/.test(a))) return [];
      // The word after an option ending in e or E is the program, not a file.
      const files: (string | null)[] = [];
      for (let i = 0; i < args.length; i++) {
        const arg = args[i] ?? null;
        if (arg?.startsWith('-')) {
          if (/^-[a-zA-Z]*[eE]$/.test(arg)) i++;
          continue;
        }
        files.push(arg);
      }
      return known(files);
    }
    case 'rm':
    case 'rmdir':
    case 'unlink':
    case 'shred':
      return known(operands(args));
    case 'touch':
      return known(operands(args, new Set(['-d', '-t', '-r'])));
    case 'truncate':
      return known(operands(args, new Set(['-s', '-r'])));
    case 'mv':
    case 'cp':
    case 'install':
    case 'ln': {
      const targetOption = args.findIndex((a) => a === '-t' || a === '--target-directory');
      const inline = args.find((a) => a?.startsWith('--target-directory='));
      const dir = targetOption >= 0 ? args[targetOption + 1] : inline?.slice('--target-directory='.length);
      const files = operands(args, new Set(['-t', '--target-directory', '-S', '--suffix', '-m', '-o', '-g']));
      const sources = dir !== undefined ? files : files.slice(0, -1);
      const target = dir !== undefined ? dir : files.at(-1);
      const written: string[] = [];
      if (target !== undefined && target !== null) {
        // Into a folder, each source lands under its own name there.
        if (dir !== undefined || ctx.isDirectory(joinPath(cwd, target))) {
          for (const source of known(sources)) written.push(`${target}/${path.basename(source)}`);
        } else written.push(target);
      }
      // mv also takes each source away.
      if (base === 'mv') written.push(...known(sources));
      return written;
    }
    case 'dd':
      return known(args.filter((a) => a?.startsWith('of=')).map((a) => a!.slice(3)));
    case 'git': {
      // Global options before the subcommand (`git -C dir`, `git -c k=v`).
      let i = 0;
      let dir = cwd;
      while (i < args.length && args[i]?.startsWith('-')) {
        if (args[i] === '-C' && args[i + 1]) dir = joinPath(dir, args[i + 1]!);
        if (args[i] === '-C' || args[i] === '-c') i++;
        i++;
      }
      const sub = args[i];
      const rest = args.slice(i + 1);
      let files: string[] = [];
      if (sub === 'checkout') {
        const dash = rest.indexOf('--');
        // Without `--`, an operand is a branch or a path: one that looks like a path (a slash, a
        // dot, a folder here) is taken as one, on the safe side; `git checkout main` writes none.
        files =
          dash >= 0
            ? known(rest.slice(dash + 1))
            : known(operands(rest, new Set(['-b', '-B', '--orphan']))).filter(
                (arg) => /[/.]/.test(arg) || ctx.isDirectory(joinPath(dir, arg)),
              );
      } else if (
        (sub === 'stash' && !['list', 'show'].includes(rest[0] ?? '')) ||
        (sub === 'reset' && rest.some((arg) => arg === '--hard' || arg === '--merge' || arg === '--keep')) ||
        (sub === 'clean' && rest.some((arg) => arg !== null && /^-[a-zA-Z]*f/.test(arg)))
      ) {
        // These rewrite any tracked (or untracked) file of the work tree: the whole folder counts.
        files = ['.'];
      } else if (sub === 'restore') {
        files = known(operands(rest, new Set(['-s', '--source'])));
      } else if (sub === 'rm' || sub === 'mv') {
        files = known(operands(rest));
      }
      return files.map((f) => joinPath(dir, f));
    }
    default:
      return [];
  }
}

/**
 * `p` from the folder `base`, with empty and `.` parts dropped but `..` kept: the hook reads each
 * `..` as the file system does (core/scope resolveAsFileSystem), which path.resolve would not.
 */
function joinPath(base: string, p: string): string {
  const parts = (p.startsWith('/') ? p : `${base}/${p}`).split('/').filter((x) => x !== '' && x !== '.');
  return `/${parts.join('/')}`;
}

interface State {
  cwd: string;
}

/** `cd DIR` changes where the following commands of the same list run (`cd DIR && ...`, `cd DIR; ...`). */
function followCd(name: string | null, args: (string | null)[], state: State): void {
  if (name !== 'cd') return;
  const [dir] = operands(args);
  // `cd` with no argument, `cd -` or `cd $X`: where it goes is unknown; later relative paths would
  // be guesses, so they are resolved where the command started.
  if (dir === undefined || dir === null || dir === '-') return;
  // `cd` is logical in bash and zsh (`cd -L`): `cd link && cd ..` is back where it started, so the
  // folder is tidied as text here; what runs in it reads its own `..` from the folder it is in.
  state.cwd = path.resolve(state.cwd, dir.replace(/^~(?=\/|$)/, process.env.HOME ?? '~'));
}

async function simpleCommand(node: Node, state: State, ctx: Context): Promise<string[]> {
  const nameNode = node.childForFieldName('name');
  const name = nameNode === null ? null : literal(nameNode.namedChildren[0] ?? nameNode);
  const args = node.childrenForFieldName('argument').map((a) => (a === null ? null : literal(a)));
  const written: string[] = [];
  // Redirections written before the name (`>f cmd`), and substitutions inside arguments.
  for (const child of node.namedChildren) {
    if (child === null || child === nameNode) continue;
    written.push(...(await walk(child, { cwd: state.cwd }, ctx)));
  }
  if (name !== null) {
    const files = await commandWrites(name, args, state.cwd, ctx);
    written.push(...files.map((f) => joinPath(state.cwd, f)));
  }
  followCd(name, args, state);
  return written;
}

/** Every file `node` writes; `state.cwd` follows `cd` along a list. */
async function walk(node: Node, state: State, ctx: Context): Promise<string[]> {
  switch (node.type) {
    case 'command':
      return simpleCommand(node, state, ctx);
    case 'file_redirect': {
      const destination = node.childForFieldName('destination');
      if (!WRITE_REDIRECTS.has(operatorOf(node).replace(/^\d+/, '')) || destination === null) return [];
      const file = literal(destination);
      return file === null ? [] : [joinPath(state.cwd, file)];
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
    default: {
      // Lists, programs, braces, loops, conditionals, redirected statements, here-documents: in
      // order, sharing the state, so `cd DIR && cmd` runs cmd in DIR.
      const written: string[] = [];
      for (const child of node.namedChildren) {
        if (child !== null) written.push(...(await walk(child, state, ctx)));
      }
      return written;
    }
  }
}

/**
 * The files `command`, run in `cwd`, visibly writes (absolute, no duplicates), or `unparsed` when
 * the shell grammar cannot read it (nor a `bash -c` script inside it).
 */
export async function shellWrites(
  command: string,
  cwd: string,
  isDirectory: (p: string) => boolean,
  parse?: (command: string) => Promise<Node | null>,
): Promise<ShellWrites> {
  if (!mayWrite(command)) return { kind: 'none' };
  // The grammar's WebAssembly is loaded here, and only here.
  const parser = parse ?? (await import('../integrations/shell-parser.js')).parseShell;
  const tree = await parser(command);
  if (tree === null) return { kind: 'unparsed' };
  const ctx: Context = { isDirectory, parse: parser, unparsed: false };
  const files = await walk(tree, { cwd }, ctx);
  if (ctx.unparsed) return { kind: 'unparsed' };
  return { kind: 'writes', files: [...new Set(files)] };
}
