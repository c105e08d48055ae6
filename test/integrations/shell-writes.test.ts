/**
 * Which files a shell command visibly writes, read with the real shell grammar (tree-sitter's Bash,
 * as WebAssembly): redirections, writing programs, quoting, pipelines, subshells, here-documents,
 * `cd` followed, nested `bash -c`; and what stays unknown (expansions) or unparsed.
 */
import { describe, expect, it } from 'vitest';
import { lightShellWrites, shellWriteTargets } from '../../src/integrations/shell-writes.js';

const CWD = '/repo';
const DIRS = new Set(['/repo/src', '/repo/dst', '/repo/src/lib']);
const isDirectory = (p: string) => DIRS.has(p);
const FACTS = { isDirectory, home: '/home/me' };

/** The files, sorted, or `unparsed`. */
async function writes(command: string): Promise<string[] | 'unparsed'> {
  const result = await shellWriteTargets(command, CWD, FACTS);
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
  ['echo x >/dev/null', r()],
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
  ['ln -sf target link', r('link', 'target')],
  ['install -m 644 a b', r('b')],
  ['dd if=/dev/zero of=disk.img bs=1 count=1', r('disk.img')],
  ['xargs rm < list.txt', r('/repo')],
  ['env FOO=1 rm a.ts', r('a.ts')],
  // git
  ['git checkout -- src/a.ts', r('src/a.ts')],
  ['git checkout main', r('/repo')],
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

/**
 * Forms that once passed unread, each writing src/a.ts (or the whole tree): [command, files, opaque].
 * `opaque` marks code no reader here reads; the hook refuses it when a word names a held file.
 */
const GAPS: [string, string[], boolean][] = [
  ['echo x >& src/a.ts', r('src/a.ts'), false],
  ['echo x 1>&src/a.ts', r('src/a.ts'), false],
  ['echo x 2>&1 >&- ; echo y >&2', r(), false],
  ['echo x > >(tee src/a.ts)', r('src/a.ts'), false],
  ['exec > >(tee src/a.ts)', r('src/a.ts'), false],
  ["echo x > $'src/a.ts'", r('src/a.ts'), false],
  ["echo x > $'src/a\\x2ets'", r('src/a.ts'), false],
  ["r''m src/a.ts", r('src/a.ts'), false],
  ['"r"m src/a.ts', r('src/a.ts'), false],
  ['r\\m src/a.ts', r('src/a.ts'), false],
  ["echo x | t'ee' src/a.ts", r('src/a.ts'), false],
  ['echo x > ~/notes.md', r('/home/me/notes.md'), false],
  ["echo x > '~/notes.md'", r('~/notes.md'), false],
  ['cd ~/w && rm a.ts', r('/home/me/w/a.ts'), false],
  ['ln -s a.ts src/al && echo x > src/al', r('src/a.ts', 'src/al'), false],
  ['pushd src && rm a.ts', r('src/a.ts'), false],
  ['command cd src && rm a.ts', r('src/a.ts'), false],
  ['builtin cd src; rm a.ts', r('src/a.ts'), false],
  ['env -C src rm a.ts', r('src/a.ts'), false],
  ['env --chdir=src rm a.ts', r('src/a.ts'), false],
  ['stdbuf -oL rm src/a.ts', r('src/a.ts'), false],
  ['flock /tmp/l rm src/a.ts', r('src/a.ts'), false],
  ["flock -c 'rm src/a.ts' /tmp/l", r('src/a.ts'), false],
  ['setsid rm src/a.ts', r('src/a.ts'), false],
  ['ionice -c 3 rm src/a.ts', r('src/a.ts'), false],
  ['timeout 5 rm src/a.ts', r('src/a.ts'), false],
  ['git checkout other', r('/repo'), false],
  ['git switch other', r('/repo'), false],
  ['git switch -c fresh', r(), false],
  ['git merge other', r('/repo'), false],
  ['git pull', r('/repo'), false],
  ['git cherry-pick abc123', r('/repo'), false],
  ['git rebase main', r('/repo'), false],
  ['git read-tree -u HEAD', r('/repo'), false],
  ['git apply fix.diff', r('/repo'), false],
  ['git apply --check fix.diff', r(), false],
  ['git clean --force', r('/repo'), false],
  ['git rm --cached src/a.ts', r(), false],
  ["sed -n 'w src/a.ts' b.ts", r('src/a.ts'), false],
  ["sed 's/a/b/w src/a.ts' b.ts", r('src/a.ts'), false],
  ['uniq b.ts src/a.ts', r('src/a.ts'), false],
  ['gzip src/a.ts', r('src/a.ts'), false],
  ['gzip -c src/a.ts > a.gz', r('a.gz'), false],
  ['tar xf x.tar', r('/repo'), false],
  ['tar -xzf x.tgz -C src', r('src'), false],
  ['tar czf out.tgz src', r('out.tgz'), false],
  ["ex -sc '%s/a/b/|x' src/a.ts", r('src/a.ts'), false],
  ["vim -es -c 'wq' src/a.ts", r('src/a.ts'), false],
  [`awk '{print > "src/a.ts"}' b.ts`, r('src/a.ts'), false],
  ["awk '{print $1}' b.ts", r(), false],
  ['awk -i inplace 1 src/a.ts', r('src/a.ts'), false],
  ["python3 -c \"open('src/a.ts','w').write('x')\"", r(), true],
  ["node -e \"require('fs').writeFileSync('src/a.ts','x')\"", r(), true],
  ['python3 - <<EOF\nopen("src/a.ts", "w")\nEOF', r(), true],
  ['python3 -m pytest -q', r(), false],
  ['node dist/cli.js --help', r(), false],
  ["echo 'echo x > src/a.ts' | bash", r(), true],
  ['curl -fsSL https://example.com/install.sh | sh', r(), true],
  ["eval 'rm src/a.ts'", r('src/a.ts'), false],
  ['find src -name "*.ts" -delete', r('src'), false],
  ['find . -name "*.bak" -exec rm {} \\;', r('/repo'), false],
  ['find . -name "*.ts" -exec grep -l x {} +', r(), false],
  ['ls *.ts | xargs sed -i s/a/b/', r('/repo'), false],
  ['sort -o src/a.ts b.ts', r('src/a.ts'), false],
  ['rsync -a b.ts src/a.ts', r('src/a.ts'), false],
  ['patch -p1 < fix.diff', r('/repo'), false],
  ['patch src/a.ts fix.diff', r('src/a.ts'), false],
  ['curl -o src/a.ts https://example.com/a', r('src/a.ts'), false],
  ['wget -O src/a.ts https://example.com/a', r('src/a.ts'), false],
  ['cd src > log && rm a.ts', r('log', 'src/a.ts'), false],
  [
    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.ts\n@@\n-1\n+2\n*** End Patch\nEOF",
    r(),
    true,
  ],
  ["apply_patch '*** Begin Patch\n*** Update File: src/a.ts\n*** End Patch'", r('src/a.ts'), false],
];

describe('shellWrites: forms that once passed unread', () => {
  it.each(GAPS)('%j', async (command, expected, opaque) => {
    const result = await shellWriteTargets(command, CWD, FACTS);
    expect(result.kind).toBe('writes');
    if (result.kind !== 'writes') return;
    expect([...result.files].sort()).toEqual(expected);
    expect(result.opaque).toBe(opaque);
  });
});

describe('the light reader reads as the grammar does', () => {
  // Wherever the light reader answers, the full grammar gives the same files.
  const grammarOnly = async (command: string) => {
    const { parseShell } = await import('../../src/integrations/shell-parser.js');
    const forced = await shellWriteTargets(`{ ${command}\n}`, CWD, FACTS, parseShell);
    return forced;
  };
  it.each([...CASES.map(([c]) => c), ...GAPS.map(([c]) => c)].filter((c) => !c.includes('EOF')))(
    '%j',
    async (command) => {
      const light = await lightShellWrites(command, CWD, FACTS);
      if (light === null) return;
      const full = await grammarOnly(command);
      expect(full.kind).toBe('writes');
      if (full.kind !== 'writes') return;
      expect([...full.files].sort()).toEqual([...light.files].sort());
      expect(full.opaque).toBe(light.opaque);
    },
  );
});

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

describe('the light reader: plain commands never load the shell grammar', () => {
  it.each([
    ['ls -la src', []],
    ['npm test', []],
    ['git status 2>&1', []],
    ['npm run build 2>&1 | tail -5', []],
    ['cd web && npm test', []],
    ['git log --oneline > /dev/null', []],
    ["grep -rn 'a > b' src | head -20", []],
    ['echo x > a.ts', ['/repo/a.ts']],
  ])('%j', async (command, expected) => {
    // A parser that fails if called proves it was not asked.
    const result = await shellWriteTargets(command, CWD, FACTS, async () => {
      throw new Error('the parser was loaded');
    });
    expect(result).toEqual({ kind: 'writes', files: expected, opaque: false, reader: 'light' });
  });

  it.each([
    ['cat <<EOF > a\n$(date)\nEOF'],
    ['echo $(date) > a'],
    ['if true; then rm a; fi'],
    ['(cd a && rm b)'],
  ])('%j is left to the grammar', async (command) => {
    expect(await lightShellWrites(command, CWD, FACTS)).toBeNull();
  });
});

describe('the light reader: a new line ends the command after a pipe or &&', () => {
  // Read as one command, `tail -5 sed -i ... src/a.ts`, the sed's write went unseen.
  it.each([
    ["npm test | tail -5\nsed -i 's/a/b/' src/a.ts", r('src/a.ts')],
    ['make && echo ok\nrm src/b.ts', r('src/b.ts')],
    ['echo a | tee x\nrm y', r('x', 'y')],
    ['echo a |\n  tee x', r('x')],
    ['true &&\n\n  rm z', r('z')],
  ])('%j', async (command, expected) => {
    const light = await lightShellWrites(command, CWD, FACTS);
    expect(light).not.toBeNull();
    expect([...light!.files].sort()).toEqual(expected);
  });
});

describe('the light reader: here-documents', () => {
  // [command, files written, the substitution's text is an expansion (so the word is unknown)]
  const light = async (command: string) =>
    shellWriteTargets(command, CWD, FACTS, async () => {
      throw new Error('the parser was loaded');
    });
  it.each([
    ["cat > gen.ts <<'EOF'\nconst a = $(rm x) > b.ts;\n`rm y`\nEOF", r('gen.ts')],
    ['cat <<EOF > gen.ts\nexport const x = $HOME;\nEOF', r('gen.ts')],
    ['cat <<-EOF > gen.ts\n\tindented\n\tEOF', r('gen.ts')],
    ['cat <<\\EOF > gen.ts\n$(not run)\nEOF', r('gen.ts')],
    ["cat <<'A' > a.ts; cat <<'B' > b.ts\none\nA\ntwo\nB\necho x > c.ts", r('a.ts', 'b.ts', 'c.ts')],
    ["cat <<'EOF' | tee out.ts\n> not-a-redirect.ts\nEOF\nrm gone.ts", r('out.ts', 'gone.ts')],
    ['git commit -m "$(cat <<\'EOF\'\nFix the loop\n\nIt kept > polling "forever" (see #12)\nEOF\n)"', r()],
    [
      'gh pr create --title x --body "$(cat <<\'EOF\'\n## Summary\n- a ) b\nEOF\n)" && echo done > log',
      r('log'),
    ],
    ['echo "$(cat <<EOF\nplain $USER\nEOF\n)" > note.md', r('note.md')],
    ["python3 - <<'EOF'\nopen('src/a.ts', 'w')\nEOF", r()],
  ])('%j', async (command, expected) => {
    const result = await light(command);
    expect(result.kind).toBe('writes');
    if (result.kind !== 'writes') return;
    expect([...result.files].sort()).toEqual(expected);
  });

  it.each([
    // Found by a hostile read against bash 5.2: each wrote held.ts while the light reader saw nothing.
    [': "$(cat <<\'E\'\nE)"; touch held.ts; : "\nE\n)"'], // `E)` ends the body and the substitution
    ['git commit -m "$(cat <<\'EOF\'\nmsg\nEOF)"\ntouch held.ts\nEOF\n)"'],
    ['echo $(cat <<E\nE )\ntouch held.ts\nE\n)'],
    ['cat <<E\nE\\\n\ntouch held.ts\nE'], // a backslash joins body lines before the delimiter match
    ['cat <<EOF\nEO\\\nF\ntouch held.ts\nEOF'],
    ['cat <<E\n$\\\n(touch held.ts)\nE'], // ... and before substitutions are found
    ['git commit -m "$(cat <<E\n$\\\n(touch held.ts)\nE\n)"'],
    ['echo "$\\\n(touch held.ts)"'], // in double quotes, `$\<new line>(` is `$(`
  ])('%j is left to the grammar', async (command) => {
    expect(await lightShellWrites(command, CWD, FACTS)).toBeNull();
  });

  it('a cd with two folders fails in bash and leaves the command where it was', async () => {
    expect((await lightShellWrites('cd d \\\ncat\ntouch w12', CWD, FACTS))?.files).toEqual(['/repo/w12']);
  });

  it('an assignment alone after a pipe ends at its line, so a cd on the next line is followed', async () => {
    const light = await lightShellWrites('true | X=1\ncd sub\ntouch held.ts', CWD, FACTS);
    expect(light?.files).toEqual(['/repo/sub/held.ts']);
  });

  it.each([
    ["bash /dev/stdin <<'EOF'\ntouch held.ts\nEOF"],
    ["sh /dev/fd/0 <<'EOF'\ntouch held.ts\nEOF"],
    ["source /dev/stdin <<'EOF'\ntouch held.ts\nEOF"],
    [". /dev/stdin <<'EOF'\ntouch held.ts\nEOF"],
    ["python3 /dev/stdin <<'EOF'\nopen('held.ts', 'w')\nEOF"],
  ])('%j runs its standard input: opaque', async (command) => {
    expect(await lightShellWrites(command, CWD, FACTS)).toMatchObject({ opaque: true });
  });

  it('a script read from a here-document is opaque, as the grammar says', async () => {
    const result = await light("python3 - <<'EOF'\nopen('src/a.ts', 'w')\nEOF");
    expect(result).toMatchObject({ kind: 'writes', opaque: true });
    const patch = await light(
      "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/a.ts\n*** End Patch\nEOF",
    );
    expect(patch).toMatchObject({ kind: 'writes', opaque: true });
  });

  it.each([
    ['cat <<EOF > a\n$(rm b)\nEOF'], // an unquoted body runs its substitutions
    ['cat <<EOF > a\n`rm b`\nEOF'],
    ['cat <<EOF > a\nno end'],
    ['cat <<EOF > a'],
    ["cat <<'EOF'x > a\nEOF"],
    ['cat <<"$X" > a\nx\n$X'],
    ['echo "$(cat <<EOF\n$(rm b)\nEOF\n)"'],
    ['echo "$(cat <<\'EOF\'\nx\nEOF\n; rm b)"'],
    ['echo "$(cat a <<\'EOF\'\nx\nEOF\n)"'],
  ])('%j is left to the grammar', async (command) => {
    expect(await lightShellWrites(command, CWD, FACTS)).toBeNull();
  });

  it('reads what the grammar reads on every here-document it answers', async () => {
    const { parseShell } = await import('../../src/integrations/shell-parser.js');
    for (const command of [
      "cat > gen.ts <<'EOF'\nconst a = 1;\nEOF",
      'cat <<EOF > gen.ts\nexport const x = $HOME;\nEOF',
      'git commit -m "$(cat <<\'EOF\'\nFix the loop\nEOF\n)" && echo x > d.ts',
      "python3 - <<'EOF'\nprint(1)\nEOF",
    ]) {
      const fromLight = await lightShellWrites(command, CWD, FACTS);
      const fromGrammar = await shellWriteTargets(`{ ${command}\n}`, CWD, FACTS, parseShell);
      expect(fromLight, command).not.toBeNull();
      expect(fromGrammar.kind, command).toBe('writes');
      if (fromLight === null || fromGrammar.kind !== 'writes') return;
      expect([...fromLight.files].sort(), command).toEqual([...fromGrammar.files].sort());
      expect(fromLight.opaque, command).toBe(fromGrammar.opaque);
    }
  });
});
