/**
 * The OpenCode plugin `alock hooks install --for opencode` writes to `.opencode/plugins/`. OpenCode
 * has no command hooks: a plugin's `tool.execute.before` runs before each tool call and refuses it by
 * throwing. The plugin only forwards the call to `alock hooks opencode-pre-tool-use` (the decision
 * stays in one place) and throws the reason of a deny. A child session (a sub-agent started by the
 * task tool) is sent with its parent's session id, so it counts as its parent's sub-agent.
 */
export function opencodePlugin(command: string): string {
  const [program, ...args] = command.split(' ');
  // The end of a session's turn (session.idle) or of the session (session.deleted) ends the claims
  // its edits took (docs/claims.md); with --no-claim there are none.
  const ends = args.includes('--no-claim')
    ? {}
    : {
        'session.idle': args.map((a) => a.replace('opencode-pre-tool-use', 'opencode-turn-end')),
        'session.deleted': args.map((a) => a.replace('opencode-pre-tool-use', 'opencode-session-end')),
      };
  return `// agent-lock: refuses edits of files other agents hold. Written by \`alock hooks install --for opencode\`;
// \`alock hooks uninstall --for opencode\` removes it. The decision is made by: ${command}
import { spawnSync } from 'node:child_process';

const CHECKED = new Set(['edit', 'write', 'multiedit', 'patch', 'apply_patch', 'bash']);

export const AgentLock = async ({ client, directory }) => {
  const parents = new Map();
  const parentOf = async (sessionID) => {
    if (!parents.has(sessionID)) {
      let parent;
      try {
        const session = await client.session.get({ path: { id: sessionID } });
        parent = session?.data?.parentID;
      } catch {
        parent = undefined;
      }
      parents.set(sessionID, parent);
    }
    return parents.get(sessionID);
  };
  const ENDS = ${JSON.stringify(ends)};
  return {
    event: async ({ event }) => {
      const endArgs = ENDS[event?.type];
      const sessionID = event?.properties?.sessionID ?? event?.properties?.info?.id;
      if (!endArgs || !sessionID) return;
      const payload = { sessionID, directory, event: event.type };
      const parentSessionID = event?.properties?.info?.parentID ?? (await parentOf(sessionID));
      if (parentSessionID) payload.parentSessionID = parentSessionID;
      const program = process.env.AGENT_LOCK_BIN || ${JSON.stringify(program)};
      // Never in the way of the session: a claim left behind ends with its lease or its process.
      spawnSync(program, endArgs, { input: JSON.stringify(payload), encoding: 'utf8' });
    },
    'tool.execute.before': async (input, output) => {
      if (!CHECKED.has(input.tool)) return;
      const payload = {
        tool: input.tool,
        sessionID: input.sessionID,
        callID: input.callID,
        args: output.args,
        directory,
      };
      const parentSessionID = await parentOf(input.sessionID);
      if (parentSessionID) payload.parentSessionID = parentSessionID;
      const program = process.env.AGENT_LOCK_BIN || ${JSON.stringify(program)};
      const run = spawnSync(program, ${JSON.stringify(args)}, { input: JSON.stringify(payload), encoding: 'utf8' });
      if (run.error || run.status !== 0) {
        const why = run.error ? run.error.message : (run.stderr || '').trim() || \`exit \${run.status}\`;
        // Not decided: AGENT_LOCK_HOOK_ON_ERROR says whether the call goes through (deny by default).
        if (process.env.AGENT_LOCK_HOOK_ON_ERROR === 'allow') return;
        throw new Error(\`agent-lock could not check this tool call: \${why}. Set AGENT_LOCK_HOOK_ON_ERROR=allow to let tool calls through unchecked.\`);
      }
      const text = (run.stdout || '').trim();
      if (text === '') return;
      const answer = JSON.parse(text);
      if (answer.decision === 'deny') throw new Error(answer.reason);
    },
  };
};
`;
}
