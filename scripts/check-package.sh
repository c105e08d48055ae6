#!/usr/bin/env bash
# The package as a user gets it: packs it (`npm pack`, which builds through `prepack`), installs the
# tarball into a temporary prefix with production dependencies only, and runs the README's quick
# start with the installed `alock` in a new git repository (acquire, then list, on the file store).
# Fails on any npm warning during the install (such as a lifecycle script naming a file the tarball
# lacks), on a development dependency installed beside the package, and on an install of more than
# 40 packages or 12 MB (it prints both figures). Runnable by hand:
#   scripts/check-package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/alock-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
  echo "check-package: FAIL: $*" >&2
  exit 1
}

npm pack --pack-destination "$work" --silent >"$work/pack.log" 2>&1 || {
  cat "$work/pack.log" >&2
  fail "npm pack failed"
}
tarball=$(ls "$work"/agent-lock-*.tgz)
version=$(node -p 'require("./package.json").version')

# A global install into a prefix of our own: what `npm install -g ./agent-lock-VERSION.tgz` gives a
# user (and `npm install -g agent-lock`, once the package is published).
npm install --global --prefix "$work/prefix" --omit=dev --no-audit --no-fund "$tarball" >"$work/install.log" 2>&1 || {
  cat "$work/install.log" >&2
  fail "npm install of the tarball failed"
}
if grep -i 'warn' "$work/install.log" >&2; then fail "the install printed warnings (above)"; fi
installed="$work/prefix/lib/node_modules/agent-lock"
for dev in $(node -p 'Object.keys(require("./package.json").devDependencies).join(" ")'); do
  [ ! -e "$installed/node_modules/$dev" ] || fail "development dependency $dev was installed"
done

# What a user's install costs: every package folder (the package itself and each dependency, nested
# ones included) and the bytes on disk. The runtime bundles carry commander, zod, the MCP SDK and the
# rest inside; only what runs unbundled (picomatch, and ioredis for the library) is installed.
packages=$(node -e '
  const fs = require("node:fs");
  const path = require("node:path");
  // Each folder of a node_modules (a scope holds folders of its own) is a package; each may nest more.
  const count = (dir) => {
    const modules = path.join(dir, "node_modules");
    if (!fs.existsSync(modules)) return 1;
    let n = 1;
    for (const name of fs.readdirSync(modules)) {
      if (name.startsWith(".")) continue;
      const inner = name.startsWith("@") ? fs.readdirSync(path.join(modules, name)).map((s) => path.join(name, s)) : [name];
      for (const pkg of inner) n += count(path.join(modules, pkg));
    }
    return n;
  };
  console.log(count(process.argv[1]));
' "$installed")
kilobytes=$(du -sk "$installed" | cut -f1)
echo "check-package: installed $packages packages, $((kilobytes / 1024)) MB ($kilobytes kB) with production dependencies"
[ "$packages" -le 40 ] || fail "the install has $packages packages (at most 40)"
[ "$kilobytes" -le $((12 * 1024)) ] || fail "the install takes $kilobytes kB (at most 12 MB)"

# The quick start, with nothing of this repository or of the caller's agent settings in reach.
alock="$work/prefix/bin/alock"
repo="$work/repo"
mkdir -p "$repo/src"
git -C "$repo" init -q
run() {
  (cd "$repo" && env -i PATH="$PATH" HOME="$work/home" AGENT_ID=quickstart AGENT_PARENT_ID=none AGENT_LOCK_BACKEND=file \
    AGENT_LOCK_REDIS_PROBE=off "$alock" "$@")
}
[ "$(run --version)" = "$version" ] || fail "alock --version is not $version"
acquired=$(run acquire 'src/**' -m "first lock") || fail "acquire failed: $acquired"
echo "$acquired"
case "$acquired" in "ACQUIRED src/**"*) ;; *) fail "acquire did not answer ACQUIRED src/**" ;; esac
listed=$(run list) || fail "list failed: $listed"
echo "$listed"
case "$listed" in "LISTED 1 lock"*) ;; *) fail "list did not show the one lock" ;; esac
grep -q 'src/\*\*' <<<"$listed" || fail "list does not name src/**"
[ -f "$repo/.git/agent-locks/locks.log" ] || fail "the lock is not in the repository's store"
# explain loads picomatch from node_modules (not bundled): the one command that broke when a
# dependency it needs was missing from the install.
explained=$(run explain 'src/*.ts' 'src/a.*') && fail "explain answered exit 0 for two overlapping globs: $explained"
case "$explained" in "CONFLICT"*) ;; *) fail "explain did not answer CONFLICT: $explained" ;; esac

# The library through the package's exports map, as `import 'agent-lock'` resolves it.
mkdir -p "$work/app/node_modules"
ln -s "$installed" "$work/app/node_modules/agent-lock"
echo '{"type":"module"}' >"$work/app/package.json"
(cd "$work/app" && node --input-type=module -e "
  const { openLocks } = await import('agent-lock');
  const locks = await openLocks({ dir: '$repo', backend: 'memory' });
  const r = await locks.acquire(['@check']);
  await locks.close();
  if (r.status !== 'acquired') throw new Error('library acquire answered ' + r.status);
") || fail "the library does not load from the installed package"
echo "check-package: OK ($(basename "$tarball"), $(du -k "$tarball" | cut -f1) kB)"
