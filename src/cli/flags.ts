/** Flags several commands share. */
import type { FlagSpec } from './command.js';

/** `--wait[=S]`, `-w S` and `-n`: shared by acquire and run. */
export const WAIT_FLAGS: readonly FlagSpec[] = [
  {
    flags: '--wait [seconds]',
    description:
      'wait in line while held (fair: arrival order): --wait=S for at most S seconds, bare for ever',
  },
  { flags: '-w <seconds>', description: 'same as --wait=SECONDS' },
  { flags: '-n, --no-wait', description: 'answer at once when held (the default)' },
];

export const TOKEN: FlagSpec = {
  flags: '--token <token>',
  description: 'prove ownership with the lease token (from another process)',
};

export const WORKTREES_FLAG: FlagSpec = {
  flags: '--worktrees',
  description: 'group the locks by the worktree and branch they were taken in',
};
