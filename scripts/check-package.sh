#!/usr/bin/env bash
# The package as a user gets it: packs it (`npm pack`, which builds through `prepack`), installs the
# tarball into a temporary prefix with production dependencies only, and runs the README's quick
# start with the installed `alock` in a new git repository (acquire, then list, on the file store).
# Fails on any npm warning during the install (such as a lifecycle script naming a file the tarball
# lacks) and on a development dependency installed beside the package. Runnable by hand:
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
