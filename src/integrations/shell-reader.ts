/**
 * A light reader for the plain shell most agent commands are (`git status 2>&1`, `npm run build
 * 2>&1 | tail -5`, `cd x && npm test`, `echo x > f`): words with quotes and escapes, `$VAR`,
 * `$'...'`, `~`, lists (`;`, `&&`, `||`, `&`, new lines), pipelines, redirections, comments, and
 * here-documents (`cat > f <<'EOF'`, and `"$(cat <<'EOF' ... EOF)"`, the way agents pass a commit
 * message or a pull request's body). Anything more (other `$(...)`, backquotes, `( )`, `{ }`, `if`,
 * `for`, `case`, `[[`, process substitution, `<<<`, a here-document whose body would run a command)
 * is left to the full shell grammar: this reader answers null, so that where it answers it reads the
 * command's writes exactly as the grammar would. It loads nothing.
 */

export interface LightRedirect {
  /** The operator without its descriptor: `>`, `>>`, `&>`, `>&`, `<`, ... */
  readonly op: string;
  /** The literal target, or null when it has an expansion (`> "$f"`). */
  readonly target: string | null;
}

export interface LightCommand {
  /** Name and arguments; null where a word has an expansion. Assignments before the name are dropped. */
  readonly words: (string | null)[];
  readonly redirects: LightRedirect[];
}

/** Pipelines in order; the parts of one pipeline run in child shells. */
export type LightList = LightCommand[][];

/** Words at the start of a command that open a construct this reader leaves to the grammar. */
const RESERVED = new Set([
  'if',
  'then',
  'else',
  'elif',
  'fi',
  'for',
  'while',
  'until',
  'do',
  'done',
  'case',
  'esac',
  'function',
  'select',
  'coproc',
  '[[',
  ']]',
  '{',
  '}',
]);

/** Decodes the body of `$'...'` as bash does. */
export function ansiC(body: string): string {
  const simple: Record<string, string> = {
    n: '\n',
    t: '\t',
    r: '\r',
    a: '\x07',
    b: '\b',
    e: '\x1b',
    E: '\x1b',
    f: '\f',
    v: '\v',
    '\\': '\\',
    "'": "'",
    '"': '"',
    '?': '?',
  };
  return body.replace(
    /\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)/gs,
    (_, esc: string) => {
      if (/^[xuU]/.test(esc)) return String.fromCodePoint(Number.parseInt(esc.slice(1), 16));
      if (/^[0-7]/.test(esc)) return String.fromCharCode(Number.parseInt(esc, 8));
      if (esc.startsWith('c')) return String.fromCharCode(esc.charCodeAt(1) & 31);
      return simple[esc] ?? `\\${esc}`;
    },
  );
}

/** A simple `$NAME`, `$1`, `$?`, `${NAME}` at `s[i]`: its length, else 0. */
function simpleExpansion(s: string, i: number): number {
  const m = /^\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9?@#*$!-]|\{[A-Za-z_][A-Za-z0-9_]*\})/.exec(s.slice(i, i + 200));
  return m === null ? 0 : m[0].length;
}

class Bail extends Error {}

/** A here-document waiting for its body, which starts on the line after its operator's. */
interface Heredoc {
  readonly delimiter: string;
  /** A quoted delimiter (`<<'EOF'`, `<<"EOF"`, `<<\EOF`) keeps the body as it is written. */
  readonly quoted: boolean;
  /** `<<-`: tabs at the start of each line go. */
  readonly stripTabs: boolean;
}

/** `<<WORD` or `<<-WORD` at `s[i]`: the here-document and where its operator ends. */
function heredocOperator(s: string, i: number): { heredoc: Heredoc; end: number } {
  let j = i + 2;
  const stripTabs = s[j] === '-';
  if (stripTabs) j++;
  while (s[j] === ' ' || s[j] === '\t') j++;
  const m = /^(?:'([\w.-]+)'|"([\w.-]+)"|(\\?)([\w.-]+))/.exec(s.slice(j, j + 200));
  // A delimiter made of other characters, or glued to more (`'EOF'x`), is the grammar's to read.
  if (m === null || !' \t\n;&|<>'.includes(s[j + m[0].length] ?? ' ')) throw new Bail();
  const quoted = m[4] === undefined || m[3] === '\\';
  return { heredoc: { delimiter: m[1] ?? m[2] ?? m[4]!, quoted, stripTabs }, end: j + m[0].length };
}

/**
 * Skips the bodies of `docs`, in order, from `s[i]` (the start of the line after their operators):
 * where the text after the last delimiter line starts. An unterminated body, or an unquoted one with
 * a substitution (it would run a command), is the grammar's.
 */
function skipBodies(s: string, i: number, docs: readonly Heredoc[], inSubstitution = false): number {
  for (const doc of docs) {
    for (;;) {
      if (i >= s.length) throw new Bail();
      const newline = s.indexOf('\n', i);
      const line = s.slice(i, newline < 0 ? s.length : newline);
      i = newline < 0 ? s.length : newline + 1;
      const bare = doc.stripTabs ? line.replace(/^\t+/, '') : line;
      if (bare === doc.delimiter) break;
      // Inside `$(...)` bash also ends the body at a line that starts with the delimiter and goes
      // on (`EOF)` ends the substitution too): the grammar's to judge.
      if (inSubstitution && bare.startsWith(doc.delimiter)) throw new Bail();
      if (!doc.quoted) {
        // An unquoted body is expanded: a substitution there runs a command, and a line ending in
        // a backslash is joined to the next (then matched against the delimiter, and searched for
        // substitutions, whole).
        if (/`|\$\(/.test(line) || /(^|[^\\])(\\\\)*\\$/.test(line)) throw new Bail();
      }
    }
  }
  return i;
}

/**
 * `$(cat <<'EOF' ... EOF)` at `s[i]` (agents' way to pass a long text: `git commit -m "$(cat
 * <<'EOF' ...)"`): its length, else 0. `cat` writes only into the substitution, whose text is then
 * an expansion like any other.
 */
function catHeredoc(s: string, i: number): number {
  const head = /^\$\(cat[ \t]+(?=<<)/.exec(s.slice(i, i + 20));
  if (head === null) return 0;
  try {
    const { heredoc, end } = heredocOperator(s, i + head[0].length);
    let j = end;
    while (s[j] === ' ' || s[j] === '\t') j++;
    if (s[j] !== '\n') return 0;
    j = skipBodies(s, j + 1, [heredoc], true);
    while (s[j] === ' ' || s[j] === '\t' || s[j] === '\n') j++;
    return s[j] === ')' ? j + 1 - i : 0;
  } catch (error) {
    if (error instanceof Bail) return 0;
    throw error;
  }
}

/** The command as pipelines of simple commands, or null when it needs the full grammar. */
export function readLight(command: string, home?: string): LightList | null {
  try {
    return read(command, home);
  } catch (error) {
    if (error instanceof Bail) return null;
    throw error;
  }
}

function read(s: string, home: string | undefined): LightList {
  // Control characters other than tab and new line are the grammar's to judge.
  if (/[\0-\x08\x0b-\x1f\x7f]/.test(s)) throw new Bail();
  const list: LightList = [];
  let pipeline: LightCommand[] = [];
  let words: (string | null)[] = [];
  let redirects: LightRedirect[] = [];
  let pending: string | null = null;
  /** After `&&`, `||` or `|`, a command must follow. */
  let needsCommand = false;
  /** A word, an assignment or `!` of the current command was read (an assignment is no word). */
  let seen = false;
  /** Here-documents whose bodies start after the current line. */
  let heredocs: Heredoc[] = [];

  // The word being read.
  let text = '';
  let literal = true;
  let started = false;
  let quoted = false;
  let tilde = false;
  let rawStart = 0;

  const endWord = (end: number) => {
    if (!started) return;
    let value: string | null = literal ? text : null;
    if (value !== null && tilde && home !== undefined && /^~(\/|$)/.test(value))
      value = home + value.slice(1);
    const raw = s.slice(rawStart, end);
    if (pending !== null) {
      redirects.push({ op: pending, target: value });
      pending = null;
    } else if (words.length === 0 && /^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(raw)) {
      // An assignment before the command: not a word of it.
    } else if (words.length === 0 && !quoted && raw === '!') {
      // `! cmd`: the same command, its status inverted.
    } else {
      if (words.length === 0 && !quoted && RESERVED.has(raw)) throw new Bail();
      words.push(value);
    }
    seen = true;
    text = '';
    literal = true;
    started = false;
    quoted = false;
    tilde = false;
  };
  const endCommand = (separator: 'list' | 'pipe' | 'and-or' | 'newline') => {
    if (pending !== null) throw new Bail();
    const empty = words.length === 0 && redirects.length === 0 && !seen;
    seen = false;
    if (empty) {
      // `a &&\n b` and blank lines are fine; `&& &&` or a leading `|` is a syntax error.
      if (separator === 'newline' || (separator === 'list' && !needsCommand && pipeline.length === 0)) return;
      throw new Bail();
    }
    pipeline.push({ words, redirects });
    words = [];
    redirects = [];
    if (separator !== 'pipe') {
      list.push(pipeline);
      pipeline = [];
    }
    needsCommand = separator === 'pipe' || separator === 'and-or';
  };
  const begin = (i: number) => {
    if (!started) {
      started = true;
      rawStart = i;
    }
  };

  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    const next = s[i + 1];
    if (c === ' ' || c === '\t') {
      endWord(i);
      i++;
    } else if (c === '\n') {
      endWord(i);
      // `a |\n b` goes on to b; after `a | b`, the line ends b.
      if (!needsCommand || seen || words.length > 0 || redirects.length > 0 || pending !== null) {
        endCommand('newline');
      }
      i++;
      if (heredocs.length > 0) {
        i = skipBodies(s, i, heredocs);
        heredocs = [];
      }
    } else if (c === '\\') {
      if (next === '\n') {
        i += 2;
        continue;
      }
      if (next === undefined) throw new Bail();
      begin(i);
      text += next;
      i += 2;
    } else if (c === "'") {
      begin(i);
      quoted = true;
      const end = s.indexOf("'", i + 1);
      if (end < 0) throw new Bail();
      text += s.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      begin(i);
      quoted = true;
      i++;
      for (;;) {
        const d = s[i];
        if (d === undefined || d === '`') throw new Bail();
        if (d === '"') break;
        if (d === '\\') {
          const e = s[i + 1];
          if (e === undefined) throw new Bail();
          if (e === '\n') {
            // Removed, as outside quotes.
          } else if ('$`"\\'.includes(e)) text += e;
          else text += `\\${e}`;
          i += 2;
          continue;
        }
        if (d === '$') {
          const length = simpleExpansion(s, i);
          if (length > 0) {
            literal = false;
            i += length;
            continue;
          }
          // `$\<new line>(` is `$(`: bash drops the backslash and new line first.
          if (s[i + 1] === '\\') throw new Bail();
          const substitution = catHeredoc(s, i);
          if (substitution > 0) {
            literal = false;
            i += substitution;
            continue;
          }
          if (s[i + 1] === '(' || s[i + 1] === '{' || s[i + 1] === '[') throw new Bail();
        }
        text += d;
        i++;
      }
      i++;
    } else if (c === '$') {
      begin(i);
      if (next === "'") {
        quoted = true;
        let j = i + 2;
        while (j < s.length && s[j] !== "'") j += s[j] === '\\' ? 2 : 1;
        if (j >= s.length) throw new Bail();
        text += ansiC(s.slice(i + 2, j));
        i = j + 1;
        continue;
      }
      const length = simpleExpansion(s, i) || catHeredoc(s, i);
      if (length === 0) {
        if (next === undefined || next === ' ' || next === '\t' || next === '\n') {
          text += c;
          i++;
          continue;
        }
        throw new Bail();
      }
      literal = false;
      i += length;
    } else if (c === '`' || c === '(' || c === ')' || c === '{' || c === '}') {
      throw new Bail();
    } else if (c === '#' && !started) {
      // A comment, to the end of the line.
      while (i < s.length && s[i] !== '\n') i++;
    } else if (c === ';') {
      if (next === ';' || next === '&') throw new Bail();
      endWord(i);
      endCommand('list');
      i++;
    } else if (c === '&') {
      endWord(i);
      if (next === '&') {
        endCommand('and-or');
        i += 2;
      } else if (next === '>') {
        if (pending !== null) throw new Bail();
        pending = s[i + 2] === '>' ? '&>>' : '&>';
        i += pending.length;
      } else {
        endCommand('list');
        i++;
      }
    } else if (c === '|') {
      endWord(i);
      if (next === '|') {
        endCommand('and-or');
        i += 2;
      } else {
        endCommand('pipe');
        i += next === '&' ? 2 : 1;
      }
    } else if (c === '>' || c === '<') {
      // `2>file`: digits right before the operator are its descriptor, not a word.
      if (started && !quoted && literal && /^\d+$/.test(text) && pending === null) {
        text = '';
        started = false;
      } else endWord(i);
      if (pending !== null) throw new Bail();
      const two = s.slice(i, i + 2);
      const three = s.slice(i, i + 3);
      if (two === '<<' && three !== '<<<') {
        const { heredoc, end } = heredocOperator(s, i);
        heredocs.push(heredoc);
        // Read from, never written: a redirection all the same (`<<EOF` alone is a command).
        redirects.push({ op: '<<', target: null });
        i = end;
        continue;
      }
      if (three === '<<<' || two === '<(' || two === '>(') throw new Bail();
      const op = ['>>', '>|', '>&', '<>', '<&'].includes(two) ? two : c;
      pending = op;
      i += op.length;
    } else {
      if (!started && c === '~') tilde = true;
      begin(i);
      text += c;
      i++;
    }
  }
  endWord(s.length);
  // A here-document's operator on the last line: its body never comes.
  if (heredocs.length > 0) throw new Bail();
  if (needsCommand && words.length === 0 && redirects.length === 0) throw new Bail();
  if (words.length > 0 || redirects.length > 0 || pending !== null) endCommand('list');
  if (pipeline.length > 0) list.push(pipeline);
  return list;
}
