/**
 * What each program writes, from its name and literal arguments: the writers, the wrappers that
 * run another command, the shells and interpreters that run code, and git.
 */
import path from 'node:path';
import { type Context, expandHome, joinPath, known, operands, optionValue } from './shell-words.js';

/** Redirection operators that open their target for writing. */
const WRITE_REDIRECTS = new Set(['>', '>>', '&>', '&>>', '>|', '<>']);

/** Does a redirection `op` (its fd digits dropped) to `target` write the file `target`? */
export function redirectWrites(op: string, target: string | null): boolean {
  if (target === null) return false;
  if (WRITE_REDIRECTS.has(op)) return true;
  // `>&FILE` and `1>&FILE` are `&>FILE`; `2>&1` and `>&-` only copy or close a descriptor.
  return op === '>&' && !/^(\d+-?|-)$/.test(target);
}

/** A wrapper's options that take a value, and how many operands come before the command it runs. */
interface Wrapper {
  readonly valued: readonly string[];
  readonly leading?: number;
}

/** Programs that run the rest of their arguments as a command. */
const WRAPPERS: ReadonlyMap<string, Wrapper> = new Map([
  ['sudo', { valued: ['-u', '-g', '-h', '-p', '-C', '-D', '-r', '-t', '-U', '-T'] }],
  ['doas', { valued: ['-u', '-C'] }],
  ['env', { valued: ['-u', '-C', '-S', '--chdir', '--unset', '--split-string'] }],
  ['command', { valued: [] }],
  ['builtin', { valued: [] }],
  ['exec', { valued: ['-a'] }],
  ['nice', { valued: ['-n', '--adjustment'] }],
  ['nohup', { valued: [] }],
  ['time', { valued: ['-f', '-o', '--format', '--output'] }],
  ['timeout', { valued: ['-s', '-k', '--signal', '--kill-after'], leading: 1 }],
  ['xargs', { valued: ['-I', '-i', '-n', '-P', '-d', '-E', '-L', '-s', '-a', '--arg-file', '--delimiter'] }],
  ['stdbuf', { valued: ['-i', '-o', '-e'] }],
  ['flock', { valued: ['-w', '--timeout', '-E', '--conflict-exit-code'], leading: 1 }],
  ['setsid', { valued: [] }],
  ['ionice', { valued: ['-c', '-n', '-p', '-P', '-u', '--class', '--classdata'] }],
  ['chrt', { valued: [], leading: 1 }],
  ['taskset', { valued: [], leading: 1 }],
  ['unbuffer', { valued: [] }],
  ['nocache', { valued: [] }],
  ['caffeinate', { valued: [] }],
  ['pkexec', { valued: ['--user'] }],
  ['watch', { valued: ['-n', '--interval', '-d'] }],
  ['strace', { valued: ['-o', '-e', '-p', '-s'] }],
  ['ltrace', { valued: ['-o', '-e', '-p', '-s'] }],
]);
const SHELLS = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'fish', 'ash', 'mksh', 'busybox']);
/** A script "file" that is the program's own standard input (`bash /dev/stdin <<EOF`). */
const STDIN = /^(-|\/dev\/stdin|\/dev\/fd\/0|\/proc\/self\/fd\/0)$/;
/** Interpreters, and the options after which their code is given on the command line. */
const INTERPRETERS: ReadonlyMap<string, readonly string[]> = new Map([
  ['python', ['-c']],
  ['python2', ['-c']],
  ['python3', ['-c']],
  ['pypy', ['-c']],
  ['pypy3', ['-c']],
  ['node', ['-e', '-p', '--eval', '--print']],
  ['nodejs', ['-e', '-p', '--eval', '--print']],
  ['bun', ['-e', '-p', '--eval', '--print']],
  ['deno', ['eval']],
  ['ruby', ['-e']],
  ['perl', ['-e', '-E']],
  ['php', ['-r']],
  ['lua', ['-e']],
  ['Rscript', ['-e']],
  ['osascript', ['-e']],
  ['tclsh', []],
  ['irb', []],
]);
const COMPRESSORS = new Set([
  'gzip',
  'gunzip',
  'bzip2',
  'bunzip2',
  'xz',
  'unxz',
  'lzma',
  'unlzma',
  'zstd',
  'unzstd',
  'lz4',
  'compress',
  'uncompress',
]);
const EDITORS = new Set(['ex', 'vi', 'vim', 'nvim', 'ed', 'red', 'view', 'vimdiff']);
/** git subcommands that rewrite tracked files anywhere in the work tree. */
const GIT_TREE_WIDE = new Set([
  'merge',
  'pull',
  'cherry-pick',
  'rebase',
  'revert',
  'am',
  'apply',
  'bisect',
  'stash',
  'switch',
]);

/** The files `sed` commands `w FILE` and `s/../../w FILE` write (a file name runs to the line end). */
function sedWrites(script: string): string[] {
  const out: string[] = [];
  for (const m of script.matchAll(/(?:^|[;\n{}]|\/[gpIiMme0-9]*)\s*[wW][ \t]*([^\n]+)/g)) {
    const file = m[1]!.trim();
    if (file !== '') out.push(file);
  }
  return out;
}

/** An awk program's `print > "FILE"` targets, and whether it does anything else unreadable. */
function awkWrites(program: string): { files: string[]; opaque: boolean } {
  const files = [...program.matchAll(/>>?\s*"([^"]+)"/g)].map((m) => m[1]!);
  // A redirection to a variable, a pipe to a command, system(): nothing here can name the file.
  const opaque = /system\s*\(|\|\s*"|\|&|>\s*[^"\s=>]/.test(program.replace(/>>?\s*"[^"]+"/g, ''));
  return { files, opaque };
}

/** The program a wrapper runs: its index in `args` (after options and leading operands). */
function wrapped(base: string, wrapper: Wrapper, args: readonly (string | null)[]): number {
  let i = 0;
  while (i < args.length) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      i++;
      break;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      if (wrapper.valued.includes(arg)) i++;
      i++;
      continue;
    }
    // `env A=1 cmd`, `sudo A=1 cmd`
    if ((base === 'env' || base === 'sudo') && /^[A-Za-z_][A-Za-z0-9_]*=/.test(arg)) {
      i++;
      continue;
    }
    break;
  }
  return i + (wrapper.leading ?? 0);
}

/** What a simple command writes, given its name and literal arguments (null: not literal). Absolute. */
export async function commandWrites(
  name: string,
  args: (string | null)[],
  cwd: string,
  ctx: Context,
): Promise<string[]> {
  const at = (files: readonly string[]) => files.map((f) => joinPath(cwd, f));
  const base = path.basename(name);
  const wrapper = WRAPPERS.get(base);
  if (wrapper !== undefined) {
    if (base === 'flock') {
      const c = args.findIndex((a) => a === '-c' || a === '--command');
      if (c >= 0) return typeof args[c + 1] === 'string' ? ctx.script(args[c + 1]!, cwd) : [];
    }
    const i = wrapped(base, wrapper, args);
    const inner = args[i];
    // `env -C DIR cmd` runs cmd in DIR.
    const chdir = base === 'env' ? optionValue(args.slice(0, i), '-C', '--chdir') : undefined;
    const dir = typeof chdir === 'string' ? joinPath(cwd, expandHome(chdir, ctx)) : cwd;
    if (inner === undefined || inner === null) return [];
    const files = await commandWrites(inner, args.slice(i + 1), dir, ctx);
    // xargs adds arguments nobody can read here: a writer it runs may write any file below.
    if (base === 'xargs' && (files.length > 0 || isWriter(inner))) return [...files, cwd];
    return files;
  }
  if (SHELLS.has(base)) {
    // `-c` alone or among other one-letter options (`bash -lc`, `sh -ec`).
    const c = args.findIndex((arg) => arg !== null && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg));
    if (c >= 0) {
      const script = args[c + 1];
      if (typeof script === 'string') return ctx.script(script, cwd);
      ctx.opaque = true;
      return [];
    }
    // No script file named: the shell reads its script from stdin (`... | bash`, `bash -s`).
    const files = operands(args, new Set(['-o', '-O', '+O']));
    if (files.length === 0 || args.includes('-s') || STDIN.test(files[0] ?? '')) ctx.opaque = true;
    return [];
  }
  if ((base === 'source' || base === '.') && STDIN.test(args[0] ?? '')) ctx.opaque = true;
  if (base === 'eval') {
    const text = args.every((a) => a !== null) ? args.join(' ') : null;
    if (text === null) {
      ctx.opaque = true;
      return [];
    }
    return ctx.script(text, cwd);
  }
  const inline = INTERPRETERS.get(base);
  if (inline !== undefined) {
    const written: string[] = [];
    if (base === 'perl' && args.some((a) => a !== null && /^-[a-zA-Z]*i/.test(a))) {
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
      written.push(...at(known(files)));
    }
    const code = args.some((a) => a !== null && (inline.includes(a) || /^-[a-zA-Z]*[ceE]$/.test(a)));
    const asksOnly = args.some((a) => a !== null && /^(-[Vh]|--version|--help|-m)$/.test(a));
    const script = operands(args, new Set(['-m', '-W', '-X', '-r', '--require', '--import', '-I']));
    if (code || (!asksOnly && (script.length === 0 || STDIN.test(script[0] ?? '')))) ctx.opaque = true;
    return written;
  }
  if (COMPRESSORS.has(base)) {
    if (args.some((a) => a !== null && /^(-[a-zA-Z]*[clt]|--stdout|--to-stdout|--list|--test)$/.test(a)))
      return [];
    return at(known(operands(args, new Set(['-S', '--suffix', '-o', '-T', '--threads']))));
  }
  if (EDITORS.has(base)) {
    // `-c CMD` (also bundled, `ex -sc CMD`), `-S FILE`, `+CMD`: commands, not files to edit.
    const files: (string | null)[] = [];
    for (let i = 0; i < args.length; i++) {
      const arg = args[i] ?? null;
      if (arg?.startsWith('-') && arg !== '-') {
        if (/^-[a-zA-Z]*[cSuiwWT]$/.test(arg) || arg === '--cmd') i++;
        continue;
      }
      if (arg?.startsWith('+')) continue;
      files.push(arg);
    }
    return at(known(files));
  }
  switch (base) {
    case 'tee':
      return at(known(operands(args)));
    case 'sed': {
      const inPlace = args.some((a) => a !== null && (/^-[a-zA-Z]*i/.test(a) || a.startsWith('--in-place')));
      const scripts: string[] = [];
      let scripted = false;
      for (let i = 0; i < args.length; i++) {
        const a = args[i];
        if (a === '-e' || a === '--expression') {
          scripted = true;
          if (typeof args[i + 1] === 'string') scripts.push(args[i + 1]!);
        } else if (a?.startsWith('--expression=')) {
          scripted = true;
          scripts.push(a.slice('--expression='.length));
        } else if (a === '-f' || a === '--file') scripted = true;
      }
      const files = operands(args, new Set(['-e', '-f', '--expression', '--file', '-l']));
      if (!scripted && typeof files[0] === 'string') scripts.push(files[0]);
      const written = scripts.flatMap(sedWrites);
      if (inPlace) written.push(...known(scripted ? files : files.slice(1)));
      return at(written);
    }
    case 'awk':
    case 'gawk':
    case 'mawk':
    case 'nawk': {
      const valued = new Set(['-F', '-v', '-f', '-i', '--include', '--file', '-E']);
      const files = operands(args, valued);
      const written: string[] = [];
      if (!args.includes('-f') && !args.includes('--file')) {
        const program = files.shift();
        if (typeof program === 'string') {
          const awk = awkWrites(program);
          written.push(...awk.files);
          if (awk.opaque) ctx.opaque = true;
        } else ctx.opaque = true;
      }
      // gawk -i inplace edits its files.
      if (args.some((a, i) => a === '-i' && args[i + 1] === 'inplace')) written.push(...known(files));
      return at(written);
    }
    case 'rm':
    case 'rmdir':
    case 'unlink':
    case 'shred':
      return at(known(operands(args)));
    case 'touch':
      return at(known(operands(args, new Set(['-d', '-t', '-r']))));
    case 'truncate':
      return at(known(operands(args, new Set(['-s', '-r']))));
    case 'sort': {
      const out = optionValue(args, '-o', '--output');
      return typeof out === 'string' ? at([out]) : [];
    }
    case 'uniq': {
      const files = operands(args, new Set(['-f', '-s', '-w', '--skip-fields', '--skip-chars']));
      return typeof files[1] === 'string' ? at(known([files[1]])) : [];
    }
    case 'curl': {
      const out = optionValue(args, '-o', '--output');
      return typeof out === 'string' ? at(known([out])) : [];
    }
    case 'wget': {
      const out = optionValue(args, '-O', '--output-document');
      return typeof out === 'string' ? at(known([out])) : [];
    }
    case 'tar': {
      const first = args[0] ?? '';
      const bundled = first !== null && !first.startsWith('-') ? first : '';
      const modes = `${bundled}${args
        .filter((a) => a !== null && /^-[a-zA-Z]+$/.test(a))
        .map((a) => a!.slice(1))
        .join('')}`;
      const long = (flag: string) => args.includes(flag);
      if (/x/.test(modes) || long('--extract') || long('--get')) {
        const dir = optionValue(args, '-C', '--directory');
        return [typeof dir === 'string' ? joinPath(cwd, dir) : cwd];
      }
      if (/[cruA]/.test(modes) || long('--create') || long('--append') || long('--update')) {
        let file = optionValue(args, null, '--file');
        // `tar czf out.tgz src`: the bundled f takes the first operand after the bundle.
        if (file === undefined && bundled.includes('f')) file = args[1];
        const dashF = args.findIndex((a) => a !== null && /^-[a-zA-Z]*f$/.test(a));
        if (file === undefined && dashF >= 0) file = args[dashF + 1];
        return typeof file === 'string' ? at(known([file])) : [];
      }
      return [];
    }
    case 'unzip': {
      if (args.some((a) => a === '-l' || a === '-t' || a === '-p' || a === '-Z')) return [];
      const dir = optionValue(args, '-d', null);
      return [typeof dir === 'string' ? joinPath(cwd, dir) : cwd];
    }
    case 'patch': {
      if (args.includes('--dry-run')) return [];
      const dir = optionValue(args, '-d', '--directory');
      const files = operands(args, new Set(['-i', '--input', '-p', '-d', '--directory', '-o', '-r', '-B']));
      // `patch FILE` patches FILE; else the file names are in the patch: any below the folder.
      if (typeof files[0] === 'string') return at(known([files[0]]));
      return [typeof dir === 'string' ? joinPath(cwd, dir) : cwd];
    }
    case 'find': {
      const roots: string[] = [];
      let i = 0;
      while (i < args.length && args[i] !== null && !/^[-!(]/.test(args[i]!)) roots.push(args[i++]!);
      if (roots.length === 0) roots.push('.');
      const rest = args.slice(i);
      let writes = rest.includes('-delete');
      const written: string[] = [];
      for (let j = 0; j < rest.length; j++) {
        if (!['-exec', '-execdir', '-ok', '-okdir'].includes(rest[j] ?? '')) continue;
        const end = rest.findIndex((a, k) => k > j && (a === ';' || a === '+'));
        const inner = rest.slice(j + 1, end < 0 ? undefined : end);
        const program = inner[0];
        if (typeof program === 'string') {
          const files = await commandWrites(program, inner.slice(1), cwd, ctx);
          // What it writes through `{}` is some file below the roots.
          if (files.some((f) => f.includes('{}')) || (files.length === 0 && isWriter(program))) writes = true;
          written.push(...files.filter((f) => !f.includes('{}')));
        }
        if (end >= 0) j = end;
      }
      if (writes) written.push(...at(roots));
      return written;
    }
    case 'rsync': {
      const files = operands(args, new Set(['-e', '--rsh', '--exclude', '--include', '-f', '--filter']));
      const target = files.at(-1);
      return typeof target === 'string' && !/^[^/]*:/.test(target) ? at(known([target])) : [];
    }
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
      const links: string[] = [];
      if (target !== undefined && target !== null) {
        // Into a folder, each source lands under its own name there.
        if (dir !== undefined || ctx.isDirectory(joinPath(cwd, target))) {
          for (const source of known(sources)) {
            written.push(`${target}/${path.basename(source)}`);
            links.push(target);
          }
        } else {
          written.push(target);
          links.push(path.dirname(target));
        }
      }
      // mv also takes each source away.
      if (base === 'mv') written.push(...known(sources));
      if (base === 'ln') {
        // A link lets a later write through it (`ln -s a.ts al && echo x > al`) reach what it
        // points at: the link's target counts as written. A symbolic link's relative target is
        // read from the link's folder, a hard link's from here.
        const symbolic = args.some((a) => a !== null && (/^-[a-zA-Z]*s/.test(a) || a === '--symbolic'));
        const sourceList = known(sources.length > 0 ? sources : files.slice(0, 1));
        for (const source of sourceList) {
          const from = symbolic && !source.startsWith('/') ? joinPath(cwd, links[0] ?? '.') : cwd;
          written.push(joinPath(from, source));
        }
      }
      return at(written);
    }
    case 'dd':
      return at(known(args.filter((a) => a?.startsWith('of=')).map((a) => a!.slice(3))));
    case 'apply_patch':
    case 'applypatch': {
      // Codex's patch format, as an argument or (most often) a here-document on stdin: the files
      // are named in it (`*** Update File: PATH`), read here from an argument, else opaque.
      const patch = args.find((a) => a?.includes('*** '));
      if (patch === undefined || patch === null) {
        ctx.opaque = true;
        return [];
      }
      const files = [...patch.matchAll(/^\*\*\* (?:Update|Add|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm)];
      return at(files.map((m) => (m[1] ?? m[2]!).trim()));
    }
    case 'git':
      return gitWrites(args, cwd, ctx);
    default:
      return [];
  }
}

/** A program that writes the files it is given (for `xargs`, `find -exec`). */
function isWriter(name: string): boolean {
  return /^(rm|rmdir|unlink|shred|touch|truncate|sed|perl|tee|mv|cp|ln|install|chmod|dd|gzip|patch)$/.test(
    path.basename(name),
  );
}

function gitWrites(args: (string | null)[], cwd: string, ctx: Context): string[] {
  // Global options before the subcommand (`git -C dir`, `git -c k=v`).
  let i = 0;
  let dir = cwd;
  while (i < args.length && args[i]?.startsWith('-')) {
    if (args[i] === '-C' && args[i + 1]) dir = joinPath(dir, args[i + 1]!);
    if (['-C', '-c', '--git-dir', '--work-tree', '--namespace'].includes(args[i] ?? '')) i++;
    i++;
  }
  const sub = args[i];
  const rest = args.slice(i + 1);
  const has = (...flags: string[]) => rest.some((a) => a !== null && flags.includes(a));
  const at = (files: readonly string[]) => files.map((f) => joinPath(dir, f));
  // The whole work tree: these rewrite any tracked (or untracked) file that differs.
  const all = [dir];
  switch (sub) {
    case 'checkout': {
      const dash = rest.indexOf('--');
      if (dash >= 0) return at(known(rest.slice(dash + 1)));
      const named = known(operands(rest, new Set(['-b', '-B', '--orphan', '--conflict'])));
      // `git checkout -b new` stays where it is; a branch, tag or commit rewrites the tree; an
      // operand that looks like a path (a slash, a dot, a folder here) is taken as one.
      if (named.length === 0) return [];
      const paths = named.filter((arg) => /[/.]/.test(arg) || ctx.isDirectory(joinPath(dir, arg)));
      return paths.length === named.length ? at(paths) : all;
    }
    case 'switch': {
      const named = known(operands(rest, new Set(['-c', '-C', '--create', '--force-create', '--orphan'])));
      return named.length === 0 && has('-c', '-C', '--create', '--force-create') ? [] : all;
    }
    case 'stash':
      return ['list', 'show', 'create', 'store'].includes(rest[0] ?? '') ? [] : all;
    case 'reset':
      return has('--hard', '--merge', '--keep') ? all : [];
    case 'clean':
      return rest.some((a) => a !== null && (/^-[a-zA-Z]*f/.test(a) || a === '--force')) ? all : [];
    case 'read-tree':
      return rest.some((a) => a !== null && /^-[a-zA-Z]*u/.test(a)) ? all : [];
    case 'checkout-index':
      return has('-a', '--all') ? all : at(known(operands(rest, new Set(['--prefix', '--stage']))));
    case 'apply':
      return has('--check', '--stat', '--numstat', '--summary', '--cached') ? [] : all;
    case 'restore':
      return has('--staged', '-S') && !has('--worktree', '-W')
        ? []
        : at(known(operands(rest, new Set(['-s', '--source']))));
    case 'rm':
      return has('--cached') ? [] : at(known(operands(rest)));
    case 'mv':
      return at(known(operands(rest)));
    case 'bisect':
      return ['log', 'visualize', 'view', 'terms'].includes(rest[0] ?? '') ? [] : all;
    case 'submodule':
      return rest.includes('update') ? all : [];
    default:
      return sub !== undefined && sub !== null && GIT_TREE_WIDE.has(sub) ? all : [];
  }
}
