/**
 * Which files a shell command visibly writes, read with the real shell grammar (tree-sitter's Bash,
 * as WebAssembly): redirections, writing programs, quoting, pipelines, subshells, here-documents,
 * `cd` followed, nested `bash -c`; and what stays unknown (expansions) or unparsed.
 */
import { describe, expect, it } from 'vitest';
import { mayWrite, shellWrites } from '../../src/integrations/shell-writes.js';

const CWD = '/repo';
const DIRS = new Set(['/repo/src', '/repo/dst', '/repo/src/lib']);
const isDirectory = (p: string) => DIRS.has(p);

/** The files, sorted (none when the pre-filter passed it over), or `unparsed`. */
async function writes(command: string): Promise<string[] | 'unparsed'> {
  const result = await shellWrites(command, CWD, isDirectory);
  if (result.kind === 'none') return [];
  if (result.kind === 'unparsed') return 'unparsed';
  return [...result.files].sort();
}

const r = (...files: string[]) => files.map((f) => (f.startsWith('/') ? f : `/repo/${f}`)).sort();

/** [command, the files it writes] */
const CASES: [string, string[]][] = [
  // redirections
  ['echo hi > a.ts', r('a.ts')],
  ['echo hi >> a.ts', r('a.ts')],
  ['make &> build.log', r('build.log')],
  ['make 2> err.log', r('err.log')],
  ['echo x >| forced.ts', r('forced.ts')],
  ['npm run build > build.log 2>&1', r('build.log')],
  ['cat < in.txt', r()],
  ['>empty.ts echo', r('empty.ts')],
  ['{ echo a; echo b; } > both.txt', r('both.txt')],
  ['echo x >/dev/null', r('/dev/null')],
  // quoting
  ['echo "a > b" | grep a', r()],
  ['echo \'x\' > "my file.ts"', r('my file.ts')],
  ['echo x > my\\ file.ts', r('my file.ts')],
  ["printf '%s' x > 'single quoted.ts'", r('single quoted.ts')],
  ['echo x > "src"/"a.ts"', r('src/a.ts')],
  ['echo > "$OUT"', r()],
  ['echo > $HOME/x.ts', r()],
  // pipelines and tee
  ['ls | tee out.txt', r('out.txt')],
  ['ls | tee -a a.log b.log | sort', r('a.log', 'b.log')],
  ['sudo tee /etc/hosts < hosts', r('/etc/hosts')],
  // in-place editors
  ["sed -i 's/a/b/' src/a.ts", r('src/a.ts')],
  ['sed -i.bak -e s/a/b/ -e s/c/d/ x.ts y.ts', r('x.ts', 'y.ts')],
  ["sed 's/a/b/' a.ts", r()],
  ['sed -n p a.ts > b.ts', r('b.ts')],
  ["perl -pi -e 's/a/b/' f.ts", r('f.ts')],
  ["perl -i.orig -pe 's/a/b/' f.ts g.ts", r('f.ts', 'g.ts')],
  ["perl -ne 'print' f.ts", r()],
  // file programs
  ['cp a.ts b.ts', r('b.ts')],
  ['cp a.ts b.ts dst', r('dst/a.ts', 'dst/b.ts')],
  ['cp -r src/lib dst', r('dst/lib')],
  ['cp -t dst a.ts', r('dst/a.ts')],
  ['mv a.ts b.ts', r('a.ts', 'b.ts')],
  ['rm -rf build src/old.ts', r('build', 'src/old.ts')],
  ['rm -- -weird.ts', r('-weird.ts')],
  ['touch -d yesterday a.ts', r('a.ts')],
  ['truncate -s 0 log.txt', r('log.txt')],
  ['ln -sf target link', r('link')],
  ['install -m 644 a b', r('b')],
  ['dd if=/dev/zero of=disk.img bs=1 count=1', r('disk.img')],
  ['xargs rm < list.txt', r()],
  ['env FOO=1 rm a.ts', r('a.ts')],
  // git
  ['git checkout -- src/a.ts', r('src/a.ts')],
  ['git checkout main', r()],
  ['git checkout src/a.ts', r('src/a.ts')],
  ['git checkout .', r('/repo')],
  ['git checkout -b feature', r()],
  ['git stash', r('/repo')],
  ['git stash list', r()],
  ['git reset --hard', r('/repo')],
  ['git reset HEAD~1', r()],
  ['git clean -fdx', r('/repo')],
  ["bash -lc 'rm src/a.ts'", r('src/a.ts')],
  ["sh -ec 'echo x > b'", r('b')],
  ['nice -n 5 rm src/a.ts', r('src/a.ts')],
  ['git restore src/a.ts', r('src/a.ts')],
  ['git -C sub checkout -- a.ts', r('sub/a.ts')],
  ['git mv a.ts b.ts', r('a.ts', 'b.ts')],
  ['git status && git diff', r()],
  // here-documents
  ['cat <<EOF > gen.ts\nexport const x = 1;\nEOF', r('gen.ts')],
  ["cat <<'EOF' | tee out.ts\n$not_expanded > nothing.ts\nEOF", r('out.ts')],
  ['cat >> notes.md <<EOF\nline\nEOF', r('notes.md')],
  // cd followed, subshells, lists, loops, substitutions
  ['cd src && echo x > a.ts', r('src/a.ts')],
  ['cd src; touch b.ts', r('src/b.ts')],
  ['(cd src && rm a.ts); rm b.ts', r('src/a.ts', 'b.ts')],
  ['cd "src dir" || exit 1; rm x', r('src dir/x')],
  ['cd /tmp && rm a.ts', r('/tmp/a.ts')],
  // `cd` is logical (its `..` undoes the step as text); a `..` in what a command writes is kept for
  // the hook, which reads it as the file system will (past a symlinked folder, out of its target).
  ['cd src/link && cd .. && echo x > a.ts', r('src/a.ts')],
  ['cd src/link && echo x > ../a.ts', r('src/link/../a.ts')],
  ['echo x > ./src//a.ts', r('src/a.ts')],
  ['for f in a b; do echo $f >> list.txt; done', r('list.txt')],
  ['for f in a b; do rm $f.ts; done', r()],
  ['if true; then echo x > y.ts; fi', r('y.ts')],
  ['x=$(rm a.ts)', r('a.ts')],
  ['echo $(touch b.ts)', r('b.ts')],
  ['echo x > a.ts &', r('a.ts')],
  ['! rm a.ts', r('a.ts')],
  // nested shells
  ['bash -c "echo hi > a.ts"', r('a.ts')],
  ["sh -c 'cd src && rm a.ts'", r('src/a.ts')],
];

describe('shellWrites: the files a command visibly writes', () => {
  it('covers at least forty commands', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40);
  });

  it.each(CASES)('%j', async (command, expected) => {
    expect(await writes(command)).toEqual(expected);
  });
});

describe('shellWrites: what it does not parse', () => {
  it.each([
    ['echo "unterminated > a.ts'],
    ['cat <<EOF > a.ts\nno end'],
    ["bash -c 'echo \"oops > a.ts'"],
    ['rm a.ts )'],
  ])('%j is unparsed', async (command) => {
    expect(await writes(command)).toBe('unparsed');
  });
});

describe('the pre-filter: commands that cannot write never load the parser', () => {
  it.each([
    ['ls -la src'],
    ['npm test'],
    ['grep -r foo src'],
    ['cat a.ts | wc -l'],
    ['node -e 0'],
    ['rgit status'],
  ])('%j is passed over', async (command) => {
    expect(mayWrite(command)).toBe(false);
    // A parser that fails if called proves it was not asked.
    const result = await shellWrites(command, CWD, isDirectory, async () => {
      throw new Error('the parser was loaded');
    });
    expect(result.kind).toBe('none');
  });

  it.each([['echo > a'], ['git checkout -- a'], ['x; rm a'], ['/usr/bin/tee a']])(
    '%j goes to the parser',
    (command) => {
      expect(mayWrite(command)).toBe(true);
    },
  );
});
