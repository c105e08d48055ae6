/**
 * The words of a shell command as the writers read them: paths from a folder (`..` kept),
 * operands past the options, option values, `~`, and where `cd` leaves the commands after it.
 */
import path from 'node:path';

export interface ShellFacts {
  readonly isDirectory: (p: string) => boolean;
  /** What `~` means (HOME); without it a `~` word is left alone as not literal. */
  readonly home?: string | undefined;
}

/** What reading a command needs, and what it finds on the way. */
export interface Context extends ShellFacts {
  /** What a nested script (`bash -c TEXT`, `eval TEXT`) run in `cwd` writes. */
  readonly script: (text: string, cwd: string) => Promise<string[]>;
  /** Set when some part runs code no reader here reads. */
  opaque: boolean;
}

/**
 * `p` from the folder `base`, with empty and `.` parts dropped but `..` kept: the hook reads each
 * `..` as the file system does (core/scope resolveAsFileSystem), which path.resolve would not.
 */
export function joinPath(base: string, p: string): string {
  const parts = (p.startsWith('/') ? p : `${base}/${p}`).split('/').filter((x) => x !== '' && x !== '.');
  return `/${parts.join('/')}`;
}

/** Non-option arguments, `--` ending the options; `takesValue` options consume the next word. */
export function operands(
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

export function known(values: readonly (string | null)[]): string[] {
  return values.filter((v): v is string => v !== null && v !== '' && v !== '-');
}

/** The value of `-x VALUE`, `-xVALUE`, `--long VALUE` or `--long=VALUE` (the last given). */
export function optionValue(
  args: readonly (string | null)[],
  short: string | null,
  long: string | null,
): string | null | undefined {
  let value: string | null | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') break;
    if (arg === undefined || arg === null) continue;
    if (arg === short || arg === long) value = args[i + 1] ?? null;
    else if (long !== null && arg.startsWith(`${long}=`)) value = arg.slice(long.length + 1);
    else if (short !== null && arg.startsWith(short) && !arg.startsWith('--') && arg.length > 2)
      value = arg.slice(2);
  }
  return value;
}

export function expandHome(word: string, facts: ShellFacts): string {
  return facts.home !== undefined && /^~(\/|$)/.test(word) ? facts.home + word.slice(1) : word;
}

export interface State {
  cwd: string;
}

/** `cd DIR` (`pushd DIR`, `command cd DIR`) changes where the following commands of the same list run. */
export function followCd(name: string | null, args: (string | null)[], state: State, ctx: Context): void {
  let words = args;
  let command = name;
  while ((command === 'command' || command === 'builtin') && words.length > 0) {
    command = words[0] ?? null;
    words = words.slice(1);
  }
  if (command !== 'cd' && command !== 'pushd') return;
  const found = operands(words);
  const [dir] = found;
  // `cd` with no argument, `cd -` or `cd $X`: where it goes is unknown; later relative paths would
  // be guesses, so they are resolved where the command started. `cd a b` fails in bash, staying.
  if (dir === undefined || dir === null || dir === '-' || /^[+-]\d+$/.test(dir) || found.length > 1) return;
  // `cd` is logical in bash and zsh (`cd -L`): `cd link && cd ..` is back where it started, so the
  // folder is tidied as text here; what runs in it reads its own `..` from the folder it is in.
  state.cwd = path.resolve(state.cwd, expandHome(dir, ctx));
}
