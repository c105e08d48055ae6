/** Flags several commands share. */
import type { FlagSpec } from './command.js';

/** `--wait[=S]`, `-w S` and `-n`: shared by acquire and run. */
// `as const`: each command's options type is read from these strings (OptionsOf).
export const WAIT_FLAGS = [
  {
    flags: '--wait [seconds]',
    description:
      'wait in line while held (fair: arrival order): --wait=S for at most S seconds, bare for ever',
  },
  { flags: '-w <seconds>', description: 'same as --wait=SECONDS' },
  { flags: '-n, --no-wait', description: 'answer at once when held (the default)' },
] as const satisfies readonly FlagSpec[];

export const TOKEN = {
  flags: '--token <token>',
  description: 'prove ownership with the lease token (from another process)',
} as const satisfies FlagSpec;

export const WORKTREES_FLAG = {
  flags: '--worktrees',
  description: 'group the locks by the worktree and branch they were taken in',
} as const satisfies FlagSpec;
