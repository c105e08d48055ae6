/**
 * The Claude Code PreToolUse payload's schema. The hook (claude-hook.ts) reads a plainly well-formed
 * payload itself and loads this only for one it must reject, for zod's account of what is wrong.
 */
// zod/mini: full zod would be half of the hook's load time.
import * as z from 'zod/mini';

/** The fields this hook reads; Claude Code sends more (transcript_path, permission_mode, ...). */
export const PayloadSchema = z.looseObject({
  session_id: z.string().check(z.trim(), z.minLength(1)),
  tool_name: z.string().check(z.minLength(1)),
  tool_input: z._default(z.record(z.string(), z.unknown()), {}),
  cwd: z.optional(z.string()),
  hook_event_name: z.optional(z.string()),
  /** Present only when a sub-agent makes the call. */
  agent_id: z.optional(z.string()),
  agent_type: z.optional(z.string()),
});
export type PreToolUsePayload = z.infer<typeof PayloadSchema>;
