/**
 * A scripted model server on 127.0.0.1 that the real harnesses talk to instead of a vendor. It
 * speaks the four wire formats the harnesses use (Anthropic Messages, OpenAI Responses, OpenAI Chat
 * Completions, Gemini generateContent), streamed or not, and answers statelessly from the request:
 *
 * - a request that offers tools gets the next tool call of the current case (step n when the
 *   conversation holds n tool results), and the final text once every step has its result;
 * - anything else (title generation, summaries, quota probes) gets a short text.
 *
 * Every request is kept (`requests`), so a test can read the tool result that reached the model.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Wire = 'anthropic' | 'responses' | 'chat' | 'gemini';

/** One tool call: the tool's name and its arguments (a string for a freeform tool such as apply_patch). */
export interface ToolCall {
  readonly name: string;
  readonly args: Record<string, unknown> | string;
}

export interface Plan {
  /**
   * The calls of this case, from the tools offered (their names, since each harness names its tools
   * its own way); step n is answered when the conversation holds n tool results. Past the last step
   * (or when none fits) the final text.
   */
  readonly steps: (tools: readonly string[], wire: Wire) => ToolCall[];
  readonly final: string;
  /**
   * Holds back the answer to step n while the returned promise is pending (a session whose turn
   * must stay open while another session runs); called only for requests that offer tools.
   */
  readonly gate?: (step: number, tools: readonly string[], wire: Wire) => Promise<void> | undefined;
}

export interface LoggedRequest {
  readonly wire: Wire | 'other';
  readonly method: string;
  readonly url: string;
  readonly body: unknown;
  /** The text of every tool result in the conversation, in order. */
  readonly toolResults: string[];
  /** Hook context the harness put in the conversation as text of its own (Cline's <hook_context>). */
  readonly hookContexts: string[];
  /** What the server answered: a tool call, or text. */
  answered: ToolCall | string | null;
  /** The marker of the routed plan that answered it (see ModelServer.route), else null. */
  readonly session: string | null;
  /** The request body as sent. */
  readonly raw: string;
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(textOf).join('\n');
  if (isObject(value)) {
    if (typeof value.text === 'string') return value.text;
    if (value.content !== undefined) return textOf(value.content);
    if (value.output !== undefined) return textOf(value.output);
    if (value.response !== undefined) return textOf(value.response);
    return JSON.stringify(value);
  }
  return value === undefined || value === null ? '' : String(value);
}

/** The tool names a request offers, and the tool results its conversation holds. */
function readRequest(wire: Wire, body: Json): { tools: string[]; results: string[]; contexts: string[] } {
  const tools: string[] = [];
  const results: string[] = [];
  const contexts: string[] = [];
  const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
  if (wire === 'anthropic') {
    for (const t of list(body.tools)) if (isObject(t) && typeof t.name === 'string') tools.push(t.name);
    for (const m of list(body.messages)) {
      if (!isObject(m)) continue;
      for (const c of list(m.content)) {
        if (isObject(c) && c.type === 'tool_result') results.push(textOf(c.content));
      }
    }
  } else if (wire === 'responses') {
    for (const t of list(body.tools)) {
      if (!isObject(t)) continue;
      if (typeof t.name === 'string') tools.push(t.name);
      else if (typeof t.type === 'string') tools.push(t.type);
    }
    for (const item of list(body.input)) {
      if (!isObject(item)) continue;
      if (
        item.type === 'function_call_output' ||
        item.type === 'custom_tool_call_output' ||
        item.type === 'local_shell_call_output'
      ) {
        results.push(textOf(item.output));
      }
    }
  } else if (wire === 'chat') {
    for (const t of list(body.tools)) {
      if (isObject(t) && isObject(t.function) && typeof t.function.name === 'string')
        tools.push(t.function.name);
    }
    for (const m of list(body.messages)) {
      if (isObject(m) && m.role === 'tool') results.push(textOf(m.content));
      // The Cline SDK hands a pre-tool hook's context to the model as a user message after the result.
      else if (isObject(m) && m.role === 'user' && textOf(m.content).includes('<hook_context')) {
        contexts.push(textOf(m.content));
      }
    }
  } else {
    for (const t of list(body.tools)) {
      if (!isObject(t)) continue;
      for (const f of list(t.functionDeclarations)) {
        if (isObject(f) && typeof f.name === 'string') tools.push(f.name);
      }
    }
    for (const c of list(body.contents)) {
      if (!isObject(c)) continue;
      for (const p of list(c.parts)) {
        if (isObject(p) && isObject(p.functionResponse)) results.push(textOf(p.functionResponse.response));
      }
    }
  }
  return { tools, results, contexts };
}

function wireOf(method: string, url: string): Wire | 'other' {
  if (method !== 'POST') return 'other';
  const p = url.split('?')[0] ?? '';
  if (p.endsWith('/messages')) return 'anthropic';
  if (p.endsWith('/responses')) return 'responses';
  if (p.endsWith('/chat/completions')) return 'chat';
  if (/:(stream)?generateContent$/i.test(p)) return 'gemini';
  return 'other';
}

let counter = 0;
function id(prefix: string): string {
  counter++;
  return `${prefix}${Date.now().toString(36)}${counter}`;
}

function sse(res: ServerResponse, events: Array<{ event?: string; data: unknown }>): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'close',
  });
  for (const e of events) {
    const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data);
    res.write(`${e.event ? `event: ${e.event}\n` : ''}data: ${data}\n\n`);
  }
  res.end();
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
  res.end(JSON.stringify(body));
}

const usage = { input_tokens: 10, output_tokens: 5 };

function answerAnthropic(res: ServerResponse, body: Json, answer: ToolCall | string): void {
  const model = typeof body.model === 'string' ? body.model : 'claude-sonnet-4-5';
  const msgId = id('msg_');
  const block =
    typeof answer === 'string'
      ? { type: 'text', text: answer }
      : { type: 'tool_use', id: id('toolu_'), name: answer.name, input: answer.args };
  const stop = typeof answer === 'string' ? 'end_turn' : 'tool_use';
  if (body.stream !== true) {
    json(res, 200, {
      id: msgId,
      type: 'message',
      role: 'assistant',
      model,
      content: [block],
      stop_reason: stop,
      stop_sequence: null,
      usage,
    });
    return;
  }
  const start =
    block.type === 'text'
      ? { type: 'text', text: '' }
      : { type: 'tool_use', id: block.id, name: block.name, input: {} };
  const delta =
    block.type === 'text'
      ? { type: 'text_delta', text: block.text }
      : { type: 'input_json_delta', partial_json: JSON.stringify(block.input) };
  sse(res, [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: msgId,
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      },
    },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: start } },
    { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta } },
    { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    {
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: 5 },
      },
    },
    { event: 'message_stop', data: { type: 'message_stop' } },
  ]);
}

function answerResponses(res: ServerResponse, body: Json, answer: ToolCall | string, tools: Json[]): void {
  const model = typeof body.model === 'string' ? body.model : 'gpt-5';
  const respId = id('resp_');
  let item: Json;
  if (typeof answer === 'string') {
    item = {
      type: 'message',
      id: id('msg_'),
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: answer, annotations: [] }],
    };
  } else {
    const tool = tools.find((t) => t.name === answer.name);
    const freeform = tool?.type === 'custom' || typeof answer.args === 'string';
    item = freeform
      ? {
          type: 'custom_tool_call',
          id: id('ctc_'),
          call_id: id('call_'),
          name: answer.name,
          input: typeof answer.args === 'string' ? answer.args : JSON.stringify(answer.args),
          status: 'completed',
        }
      : {
          type: 'function_call',
          id: id('fc_'),
          call_id: id('call_'),
          name: answer.name,
          arguments: JSON.stringify(answer.args),
          status: 'completed',
        };
  }
  const response = (status: string, output: Json[]) => ({
    id: respId,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model,
    status,
    output,
    usage: {
      input_tokens: 10,
      output_tokens: 5,
      total_tokens: 15,
      input_tokens_details: { cached_tokens: 0 },
    },
  });
  if (body.stream === false) {
    json(res, 200, response('completed', [item]));
    return;
  }
  sse(res, [
    { event: 'response.created', data: { type: 'response.created', response: response('in_progress', []) } },
    {
      event: 'response.output_item.added',
      data: { type: 'response.output_item.added', output_index: 0, item },
    },
    {
      event: 'response.output_item.done',
      data: { type: 'response.output_item.done', output_index: 0, item },
    },
    {
      event: 'response.completed',
      data: { type: 'response.completed', response: response('completed', [item]) },
    },
  ]);
}

function answerChat(res: ServerResponse, body: Json, answer: ToolCall | string): void {
  const model = typeof body.model === 'string' ? body.model : 'gpt-4o';
  const chatId = id('chatcmpl-');
  const created = Math.floor(Date.now() / 1000);
  const call =
    typeof answer === 'string'
      ? null
      : {
          id: id('call_'),
          type: 'function',
          function: { name: answer.name, arguments: JSON.stringify(answer.args) },
        };
  const finish = call ? 'tool_calls' : 'stop';
  const u = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (body.stream !== true) {
    json(res, 200, {
      id: chatId,
      object: 'chat.completion',
      created,
      model,
      choices: [
        {
          index: 0,
          message: call
            ? { role: 'assistant', content: null, tool_calls: [call] }
            : { role: 'assistant', content: answer },
          finish_reason: finish,
        },
      ],
      usage: u,
    });
    return;
  }
  const chunk = (delta: Json, finish_reason: string | null, extra: Json = {}) => ({
    data: {
      id: chatId,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, finish_reason }],
      ...extra,
    },
  });
  sse(res, [
    chunk({ role: 'assistant', content: '' }, null),
    call ? chunk({ tool_calls: [{ index: 0, ...call }] }, null) : chunk({ content: answer }, null),
    chunk({}, finish, { usage: u }),
    { data: '[DONE]' },
  ]);
}

function answerGemini(res: ServerResponse, url: string, answer: ToolCall | string): void {
  const part =
    typeof answer === 'string'
      ? { text: answer }
      : { functionCall: { name: answer.name, args: answer.args } };
  const body = {
    candidates: [{ content: { role: 'model', parts: [part] }, finishReason: 'STOP', index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: 'gemini-2.5-pro',
  };
  if (/streamGenerateContent/i.test(url)) sse(res, [{ data: body }]);
  else json(res, 200, body);
}

export class ModelServer {
  readonly requests: LoggedRequest[] = [];
  plan: Plan = { steps: () => [], final: 'Done.' };
  /** Plans chosen by a marker in the request (two sessions at once, each with a prompt of its own). */
  private readonly routes = new Map<string, Plan>();
  private server: Server | null = null;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Forgets the log and sets the next case's script. */
  reset(plan: Plan): void {
    this.requests.length = 0;
    this.plan = plan;
    this.routes.clear();
  }

  /** Answers every request whose body holds `marker` (a session's prompt) from `plan`. */
  route(marker: string, plan: Plan): void {
    this.routes.set(marker, plan);
  }

  /** The requests of one routed session. */
  of(marker: string): LoggedRequest[] {
    return this.requests.filter((r) => r.session === marker);
  }

  /** Every tool result text that reached the model in this case. */
  toolResults(): string[] {
    const seen = new Set<string>();
    for (const r of this.requests) for (const t of r.toolResults) seen.add(t);
    return [...seen];
  }

  /** The hook context the harness showed the model in this case (see LoggedRequest.hookContexts). */
  hookContexts(): string[] {
    const seen = new Set<string>();
    for (const r of this.requests) for (const t of r.hookContexts) seen.add(t);
    return [...seen];
  }

  /** The tool calls the server made in this case. */
  calls(): ToolCall[] {
    return this.requests.flatMap((r) => (r.answered && typeof r.answered !== 'string' ? [r.answered] : []));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw === '' ? null : JSON.parse(raw);
      } catch {
        // kept as text
      }
      const url = req.url ?? '/';
      const method = req.method ?? 'GET';
      const wire = wireOf(method, url);
      const session = [...this.routes.keys()].find((m) => raw.includes(m)) ?? null;
      const plan = (session === null ? undefined : this.routes.get(session)) ?? this.plan;
      const logged: LoggedRequest = {
        wire,
        method,
        url,
        body,
        toolResults: [],
        hookContexts: [],
        answered: null,
        session,
        raw,
      };
      this.requests.push(logged);
      if (wire === 'other' || !isObject(body)) {
        this.other(req, res, url);
        return;
      }
      const { tools, results, contexts } = readRequest(wire, body);
      logged.toolResults.push(...results);
      logged.hookContexts.push(...contexts);
      let answer: ToolCall | string = results.length === 0 ? 'OK' : plan.final;
      if (tools.length > 0) {
        await plan.gate?.(results.length, tools, wire);
        answer = plan.steps(tools, wire)[results.length] ?? plan.final;
      }
      logged.answered = answer;
      if (wire === 'anthropic') answerAnthropic(res, body, answer);
      else if (wire === 'responses') {
        const toolList = (Array.isArray(body.tools) ? body.tools : []).filter(isObject);
        answerResponses(res, body, answer, toolList);
      } else if (wire === 'chat') answerChat(res, body, answer);
      else answerGemini(res, url, answer);
    });
  }

  /** Model lists and the odd probe: enough for each harness to go on. */
  private other(req: IncomingMessage, res: ServerResponse, url: string): void {
    const p = url.split('?')[0] ?? '';
    if (p.endsWith('/models')) {
      json(res, 200, {
        object: 'list',
        data: [{ id: 'e2e-model', object: 'model', created: 0, owned_by: 'e2e' }],
        models: [],
      });
      return;
    }
    if (p.endsWith('/count_tokens')) {
      json(res, 200, { input_tokens: 10 });
      return;
    }
    if (req.method === 'HEAD' || req.method === 'GET') {
      json(res, 200, {});
      return;
    }
    json(res, 404, { error: { message: `e2e model server: no route for ${req.method} ${url}` } });
  }
}
