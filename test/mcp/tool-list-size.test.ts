/**
 * What mounting the MCP server costs an agent: the tool list it reads into its context on every
 * session. Kept under 9 KB, with every tool, its inputs and its answer shape still there (8 KB
 * until ask and reply came: each tool costs about 550 bytes of schema however short its words).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Connected, connect } from './mcp-harness.js';

let mcp: Connected;
beforeEach(async () => {
  mcp = await connect('size-agent');
});
afterEach(async () => {
  await mcp.close();
  mcp.sandbox.cleanup();
});

describe('the MCP tool list', () => {
  it('is under 9 KB as JSON, with the same tools', async () => {
    const { tools } = await mcp.client.listTools();
    const bytes = Buffer.byteLength(JSON.stringify(tools));
    console.log(`MCP tool list: ${bytes} bytes, ${tools.length} tools`);
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        'acquire',
        'ask',
        'break',
        'check',
        'list',
        'lock',
        'mine',
        'note',
        'release',
        'renew',
        'reply',
        'resume',
      ].sort(),
    );
    expect(bytes).toBeLessThan(9 * 1024);
  });

  it('still describes every input, and the answer every contract tool gives', async () => {
    const { tools } = await mcp.client.listTools();
    for (const tool of tools) {
      expect(tool.description?.length, tool.name).toBeGreaterThan(10);
      expect(tool.inputSchema.type).toBe('object');
      if (tool.name !== 'lock') {
        const out = tool.outputSchema as { required?: string[] } | undefined;
        expect(out?.required, tool.name).toEqual(['status', 'ok']);
      }
    }
    // The rest of the envelope is described once, where the client reads it once.
    const instructions = mcp.client.getInstructions() ?? '';
    for (const field of ['schema', 'exit_code', 'locks', 'conflicts', 'message', 'error', 'fence', 'token']) {
      expect(instructions).toContain(field);
    }
    const acquire = tools.find((t) => t.name === 'acquire')!;
    expect(Object.keys(acquire.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['scopes', 'intent', 'ttl', 'shared', 'enforce', 'force', 'wait', 'agent_id']),
    );
  });
});
