/**
 * The MCP server's ask and reply tools: the same contract as `alock ask` and `alock reply`, with
 * the CLI's envelope. The server's own agent is `lead`; the holder is an agent of the command line.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { takeMailHints } from '../../src/integrations/mail.js';
import { openLocks } from '../../src/locks.js';
import { makeSandbox } from '../cli/cli-harness.js';
import { type Connected, connect } from './mcp-harness.js';

let mcp: Connected;

beforeEach(async () => {
  // Hints for the agents' hooks stay in the sandbox, not the shared temp folder.
  const sandbox = makeSandbox();
  mcp = await connect('lead', sandbox, { TMPDIR: sandbox.outside });
});

afterEach(async () => {
  await mcp.close();
  mcp.sandbox.cleanup();
});

async function as(agentId: string) {
  return openLocks({ dir: mcp.sandbox.tree, env: mcp.sandbox.envFor(agentId), identity: { agentId } });
}

describe('ask and reply tools', () => {
  it('leave a request for the holder and an answer for the asker, each taken once', async () => {
    expect((await mcp.sandbox.run('holder', ['acquire', 'src/a.ts'])).code).toBe(0);
    const asked = await mcp.call('ask', { scope: 'src/a.ts', text: 'please finish' });
    expect(asked.isError).toBe(false);
    expect(asked.body).toMatchObject({ command: 'ask', status: 'asked', ok: true, exit_code: 0 });
    expect(asked.body.locks.map((l) => l.agent_id)).toEqual(['holder']);
    const holder = await as('holder');
    try {
      expect((await holder.takeMail()).map((m) => [m.type, m.from, m.text])).toEqual([
        ['ask', 'lead', 'please finish'],
      ]);
      expect(await holder.takeMail()).toEqual([]);
      // The server's sub-agent never asked: nothing to answer.
      expect((await holder.reply('lead/alice', 'hi')).status).toBe('not_found');
      expect((await holder.reply('lead', 'two minutes')).status).toBe('replied');
    } finally {
      await holder.close();
    }
    const lead = await mcp.serverLocks();
    expect((await lead.takeMail()).map((m) => [m.type, m.from, m.text])).toEqual([
      ['reply', 'holder', 'two minutes'],
    ]);
    // The holder's answer through the tool: the server holds a lock a sub-agent asked about.
    expect((await mcp.call('acquire', { scopes: ['src/b.ts'] })).isError).toBe(false);
    expect((await mcp.call('ask', { scope: 'src/b.ts', text: 'mine?', agent_id: 'alice' })).body.status).toBe(
      'mine',
    );
    const other = await as('other');
    try {
      expect((await other.ask('src/b.ts', 'may I?')).status).toBe('asked');
    } finally {
      await other.close();
    }
    const replied = await mcp.call('reply', { agent: 'other', text: 'soon' });
    expect(replied.body).toMatchObject({ command: 'reply', status: 'replied', ok: true });
    const none = await mcp.call('reply', { agent: 'nobody', text: 'soon' });
    expect(none.isError).toBe(true);
    expect(none.body).toMatchObject({ status: 'not_found', ok: false, exit_code: 1 });
  });

  it('leave those who asked a hint, on release and on break, so that their next tool call hears', async () => {
    const hints = (agent: string) => takeMailHints({ TMPDIR: mcp.sandbox.outside }, agent);
    expect((await mcp.call('acquire', { scopes: ['src/c.ts'] })).isError).toBe(false);
    expect((await mcp.sandbox.run('holder', ['acquire', 'src/d.ts'])).code).toBe(0);
    const other = await as('other');
    try {
      expect((await other.ask('src/c.ts', 'done yet?')).status).toBe('asked');
      expect((await other.ask('src/d.ts', 'and this?')).status).toBe('asked');
    } finally {
      await other.close();
    }
    expect(hints('other')).toEqual([]);
    expect((await mcp.call('release', { scopes: ['src/c.ts'] })).body.status).toBe('released');
    expect(hints('other')).toEqual([mcp.sandbox.tree]);
    expect((await mcp.call('break', { scopes: ['src/d.ts'], reason: 'holder gone' })).body.status).toBe(
      'broken',
    );
    expect(hints('other')).toEqual([mcp.sandbox.tree]);
  });

  it('answers free as a tool error, and refuses bad text with E_USAGE', async () => {
    const free = await mcp.call('ask', { scope: 'src/free.ts', text: 'anyone?' });
    expect(free.isError).toBe(true);
    expect(free.body).toMatchObject({ status: 'free', ok: false, exit_code: 1 });
    expect((await mcp.sandbox.run('holder', ['acquire', 'src/a.ts'])).code).toBe(0);
    const long = await mcp.call('ask', { scope: 'src/a.ts', text: 'x'.repeat(1001) });
    expect(long.isError).toBe(true);
    expect(long.body).toMatchObject({ status: 'error', error: { code: 'E_USAGE' } });
    const holder = await as('holder');
    try {
      expect(await holder.takeMail()).toEqual([]);
    } finally {
      await holder.close();
    }
  });
});
