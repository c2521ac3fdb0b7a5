import { defineServer, defineTool, ToolError, z } from '@keel-mcp/core'
import pkg from '../package.json' with { type: 'json' }

// The names, arguments and texts below are fixed by the server scenarios of
// @modelcontextprotocol/conformance (`conformance list --server`), not by Keel's naming rules.

/** A 1×1 PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='
/** A 16-bit mono WAV with 8 silent samples. */
const WAV = 'UklGRjQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YRAAAAAAAAAAAAAAAAAAAAAAAAAA'

const readOnly = { readOnlyHint: true, openWorldHint: false } as const

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer)
        reject(signal.reason)
      },
      { once: true },
    )
  })

const simpleText = defineTool({
  name: 'test_simple_text',
  title: 'Simple text',
  description: 'Returns one text block.',
  input: {},
  annotations: readOnly,
  run: () => ({ text: 'This is a simple text response for testing.' }),
})

const imageContent = defineTool({
  name: 'test_image_content',
  title: 'Image content',
  description: 'Returns one PNG image block.',
  input: {},
  annotations: readOnly,
  run: () => ({ content: [{ type: 'image', data: PNG, mimeType: 'image/png' }] }),
})

const audioContent = defineTool({
  name: 'test_audio_content',
  title: 'Audio content',
  description: 'Returns one WAV audio block.',
  input: {},
  annotations: readOnly,
  run: () => ({ content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }] }),
})

const embeddedResource = defineTool({
  name: 'test_embedded_resource',
  title: 'Embedded resource',
  description: 'Returns one embedded text resource.',
  input: {},
  annotations: readOnly,
  run: () => ({
    content: [
      {
        type: 'resource',
        resource: {
          uri: 'test://embedded-resource',
          mimeType: 'text/plain',
          text: 'This is an embedded resource content.',
        },
      },
    ],
  }),
})

const multipleContentTypes = defineTool({
  name: 'test_multiple_content_types',
  title: 'Multiple content types',
  description: 'Returns a text, an image and an embedded resource block.',
  input: {},
  annotations: readOnly,
  run: () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  }),
})

const toolWithLogging = defineTool({
  name: 'test_tool_with_logging',
  title: 'Tool with logging',
  description: 'Sends three log notifications, 50 ms apart.',
  input: {},
  annotations: readOnly,
  async run(_args, { log, signal }) {
    log.info('Tool execution started')
    await sleep(50, signal)
    log.info('Tool processing data')
    await sleep(50, signal)
    log.info('Tool execution completed')
    return { text: 'Logging test completed' }
  },
})

const errorHandling = defineTool({
  name: 'test_error_handling',
  title: 'Error handling',
  description: 'Always fails with a tool error (isError: true).',
  input: {},
  annotations: readOnly,
  run() {
    throw new ToolError('internal', 'This tool intentionally returns an error for testing')
  },
})

const toolWithProgress = defineTool({
  name: 'test_tool_with_progress',
  title: 'Tool with progress',
  description: 'Reports progress 0, 50 and 100 of 100, 50 ms apart.',
  input: {},
  annotations: readOnly,
  async run(_args, { progress, signal }) {
    await progress(0, 100)
    await sleep(50, signal)
    await progress(50, 100)
    await sleep(50, signal)
    await progress(100, 100)
    return { text: 'Progress test completed' }
  },
})

const sampling = defineTool({
  name: 'test_sampling',
  title: 'Sampling',
  description: "Asks the client's model to answer a prompt (sampling/createMessage).",
  input: { prompt: z.string().describe('The prompt to send to the model') },
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run({ prompt }, { client }) {
    const result = (await client.sample({
      messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
      maxTokens: 100,
    })) as { content?: { type?: string; text?: string } }
    const text = result.content?.type === 'text' ? result.content.text : JSON.stringify(result.content)
    return { text: `LLM response: ${text}` }
  },
})

const elicitation = defineTool({
  name: 'test_elicitation',
  title: 'Elicitation',
  description: 'Asks the user for a username and an email (elicitation/create).',
  input: { message: z.string().describe('The message to show the user') },
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run({ message }, { client }) {
    const result = (await client.elicit({
      message,
      requestedSchema: {
        type: 'object',
        properties: {
          username: { type: 'string', description: "User's response" },
          email: { type: 'string', description: "User's email address" },
        },
        required: ['username', 'email'],
      },
    })) as { action: string; content?: unknown }
    return { text: `User response: action=${result.action}, content=${JSON.stringify(result.content ?? {})}` }
  },
})

const elicitationDefaults = defineTool({
  name: 'test_elicitation_sep1034_defaults',
  title: 'Elicitation defaults (SEP-1034)',
  description: 'Elicits a form whose every primitive field has a default.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.elicit({
      message: 'Please review and update the form fields with defaults',
      requestedSchema: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'User name', default: 'John Doe' },
          age: { type: 'integer', description: 'User age', default: 30 },
          score: { type: 'number', description: 'User score', default: 95.5 },
          status: {
            type: 'string',
            description: 'User status',
            enum: ['active', 'inactive', 'pending'],
            default: 'active',
          },
          verified: { type: 'boolean', description: 'Verification status', default: true },
        },
      },
    })) as { action: string; content?: unknown }
    return {
      text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`,
    }
  },
})

const elicitationEnums = defineTool({
  name: 'test_elicitation_sep1330_enums',
  title: 'Elicitation enums (SEP-1330)',
  description: 'Elicits a form with all five enum variants.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.elicit({
      message: 'Please select options from the enum fields',
      requestedSchema: {
        type: 'object',
        properties: {
          untitledSingle: {
            type: 'string',
            description: 'Select one option',
            enum: ['option1', 'option2', 'option3'],
          },
          titledSingle: {
            type: 'string',
            description: 'Select one option with titles',
            oneOf: [
              { const: 'value1', title: 'First Option' },
              { const: 'value2', title: 'Second Option' },
              { const: 'value3', title: 'Third Option' },
            ],
          },
          legacyEnum: {
            type: 'string',
            description: 'Select one option (legacy)',
            enum: ['opt1', 'opt2', 'opt3'],
            enumNames: ['Option One', 'Option Two', 'Option Three'],
          },
          untitledMulti: {
            type: 'array',
            description: 'Select multiple options',
            minItems: 1,
            items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
          },
          titledMulti: {
            type: 'array',
            description: 'Select multiple options with titles',
            minItems: 1,
            items: {
              anyOf: [
                { const: 'value1', title: 'First Choice' },
                { const: 'value2', title: 'Second Choice' },
                { const: 'value3', title: 'Third Choice' },
              ],
            },
          },
        },
        required: [],
      },
    })) as { action: string; content?: unknown }
    return {
      text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`,
    }
  },
})

const address = z
  .object({ street: z.string().optional(), city: z.string().optional() })
  .meta({ id: 'address' })

const jsonSchema202012 = defineTool({
  name: 'json_schema_2020_12_tool',
  title: 'JSON Schema 2020-12',
  description: 'Tool with JSON Schema 2020-12 features ($defs, $ref, additionalProperties).',
  input: { name: z.string().optional(), address: address.optional() },
  annotations: readOnly,
  run: (args) => ({ text: `JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}` }),
})

const reconnection = defineTool({
  name: 'test_reconnection',
  title: 'Reconnection',
  description: 'Closes its SSE stream mid-call; the client resumes with Last-Event-ID (SEP-1699).',
  input: {},
  annotations: readOnly,
  async run(_args, { signal }) {
    await sleep(100, signal)
    return { text: 'Reconnection test completed successfully' }
  },
})

// Diagnostic tools of the 2026-07-28 `server-stateless` scenario (conformance 0.2.x).

const missingCapability = defineTool({
  name: 'test_missing_capability',
  title: 'Missing capability',
  description: 'Asks for sampling; a client that did not declare sampling must get -32021.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    await client.sample({
      messages: [{ role: 'user', content: { type: 'text', text: 'ping' } }],
      maxTokens: 10,
    })
    return { text: 'sampled' }
  },
})

// Tools of the 2026-07-28 `input-required-result-*` scenarios (SEP-2322, multi round-trip
// requests). On 2026-07-28 requests core turns ctx.client.elicit()/sample() into input_required
// rounds: the embedded request keys are core's own (`keel_elicit_<n>`, `keel_sample_<n>`), one
// question per round, and requestState appears only once there are earlier answers to carry.

const nameSchema = {
  type: 'object',
  properties: { name: { type: 'string' } },
  required: ['name'],
} as const

type ElicitAnswer = { action: string; content?: Record<string, unknown> }
type SampleAnswer = { content?: { type?: string; text?: string } }

const inputRequiredElicitation = defineTool({
  name: 'test_input_required_result_elicitation',
  title: 'Input required: elicitation',
  description: 'Asks the user for a name through one input_required round, then greets them.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    // The suite names this question "user_name".
    const result = (await client.elicit(
      { message: 'What is your name?', requestedSchema: nameSchema },
      { key: 'user_name' },
    )) as ElicitAnswer
    return { text: `Hello, ${String(result.content?.name ?? 'stranger')}!` }
  },
})

const inputRequiredSampling = defineTool({
  name: 'test_input_required_result_sampling',
  title: 'Input required: sampling',
  description: "Asks the client's model a question through one input_required round.",
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.sample({
      messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
      maxTokens: 100,
    })) as SampleAnswer
    const text = result.content?.type === 'text' ? result.content.text : JSON.stringify(result.content)
    return { text: `Model answered: ${text}` }
  },
})

const inputRequiredRequestState = defineTool({
  name: 'test_input_required_result_request_state',
  title: 'Input required: request state',
  description: 'Asks for a confirmation; the retry must echo the requestState of the round.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.elicit({
      message: 'Please confirm',
      requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
    })) as ElicitAnswer
    return { text: `state-ok: action=${result.action}, ok=${String(result.content?.ok)}` }
  },
})

const inputRequiredMultiRound = defineTool({
  name: 'test_input_required_result_multi_round',
  title: 'Input required: multi round',
  description: 'Asks for a name, then a favourite colour, one input_required round each.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const step1 = (await client.elicit({
      message: 'Step 1: What is your name?',
      requestedSchema: nameSchema,
    })) as ElicitAnswer
    const step2 = (await client.elicit({
      message: 'Step 2: What is your favorite color?',
      requestedSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
    })) as ElicitAnswer
    return { text: `${String(step1.content?.name)} likes ${String(step2.content?.color)}` }
  },
})

const inputRequiredTamperedState = defineTool({
  name: 'test_input_required_result_tampered_state',
  title: 'Input required: tampered state',
  description: 'Asks for a confirmation; a retry with an altered requestState must be rejected.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.elicit({
      message: 'Please confirm',
      requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
    })) as ElicitAnswer
    return { text: `confirmed: action=${result.action}` }
  },
})

const inputRequiredCapabilities = defineTool({
  name: 'test_input_required_result_capabilities',
  title: 'Input required: capabilities',
  description: 'Asks only through what the request declared: sampling, else elicitation, else nothing.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const declared = client.capabilities ?? {}
    if (declared.sampling) {
      const result = (await client.sample({
        messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
        maxTokens: 50,
      })) as SampleAnswer
      return { text: `sampled: ${result.content?.text ?? ''}` }
    }
    if (declared.elicitation) {
      const result = (await client.elicit({
        message: 'What is your name?',
        requestedSchema: nameSchema,
      })) as ElicitAnswer
      return { text: `elicited: action=${result.action}` }
    }
    return { text: 'The client declared neither sampling nor elicitation; nothing to ask.' }
  },
})

const streamingElicitation = defineTool({
  name: 'test_streaming_elicitation',
  title: 'Streaming elicitation',
  description: 'Elicits a name while the call is in flight.',
  input: {},
  annotations: { readOnlyHint: true, openWorldHint: true },
  async run(_args, { client }) {
    const result = (await client.elicit({
      message: 'What is your name?',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    })) as { action: string; content?: unknown }
    return {
      text: `Elicitation completed: action=${result.action}, content=${JSON.stringify(result.content ?? {})}`,
    }
  },
})

const loggingTool = defineTool({
  name: 'test_logging_tool',
  title: 'Logging tool',
  description: 'Logs at every level; nothing may reach a client that asked for no log level.',
  input: {},
  annotations: readOnly,
  run(_args, { log }) {
    log.debug('debug message from test_logging_tool')
    log.info('info message from test_logging_tool')
    log.warn('warning message from test_logging_tool')
    log.error('error message from test_logging_tool')
    return { text: 'Logging completed' }
  },
})

/** The conformance fixture: every tool, resource and prompt the official server scenarios call. */
export const server = defineServer({
  name: 'conformance-fixture',
  version: pkg.version,
  description: 'Fixture server for the official MCP conformance suite, built on @keel-mcp/core.',
  bin: 'mcp-server-conformance-fixture',
  tools: [
    simpleText,
    imageContent,
    audioContent,
    embeddedResource,
    multipleContentTypes,
    toolWithLogging,
    errorHandling,
    toolWithProgress,
    sampling,
    elicitation,
    elicitationDefaults,
    elicitationEnums,
    jsonSchema202012,
    reconnection,
    missingCapability,
    streamingElicitation,
    loggingTool,
    inputRequiredElicitation,
    inputRequiredSampling,
    inputRequiredRequestState,
    inputRequiredMultiRound,
    inputRequiredTamperedState,
    inputRequiredCapabilities,
  ],
  resources: [
    {
      name: 'static-text',
      uri: 'test://static-text',
      title: 'Static text',
      description: 'A static text resource.',
      mimeType: 'text/plain',
      read: (uri) => [
        { uri: uri.href, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
      ],
    },
    {
      name: 'static-binary',
      uri: 'test://static-binary',
      title: 'Static binary',
      description: 'A static binary resource (PNG).',
      mimeType: 'image/png',
      read: (uri) => [{ uri: uri.href, mimeType: 'image/png', blob: PNG }],
    },
    {
      name: 'watched-resource',
      uri: 'test://watched-resource',
      title: 'Watched resource',
      description: 'A resource clients may subscribe to.',
      mimeType: 'text/plain',
      read: (uri) => [{ uri: uri.href, mimeType: 'text/plain', text: 'Watched resource content.' }],
      subscribe: () => () => {},
    },
  ],
  resourceTemplates: [
    {
      name: 'template-data',
      uriTemplate: 'test://template/{id}/data',
      title: 'Template data',
      description: 'JSON data for one id.',
      mimeType: 'application/json',
      complete: { id: (value) => ['1', '2', '3', '123'].filter((id) => id.startsWith(value)) },
      read: (uri, { id }) => [
        {
          uri: uri.href,
          mimeType: 'application/json',
          text: JSON.stringify({ id: String(id), templateTest: true, data: `Data for ID: ${String(id)}` }),
        },
      ],
    },
  ],
  prompts: [
    {
      name: 'test_simple_prompt',
      title: 'Simple prompt',
      description: 'A prompt without arguments.',
      run: () => ({
        messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
      }),
    },
    {
      name: 'test_prompt_with_arguments',
      title: 'Prompt with arguments',
      description: 'A prompt with two required arguments.',
      args: {
        arg1: z.string().describe('First test argument'),
        arg2: z.string().describe('Second test argument'),
      },
      complete: {
        arg1: (value) =>
          ['paris', 'park', 'party', 'test', 'testing'].filter((word) => word.startsWith(value)),
      },
      run: ({ arg1, arg2 }) => ({
        messages: [
          {
            role: 'user',
            content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` },
          },
        ],
      }),
    },
    {
      name: 'test_prompt_with_embedded_resource',
      title: 'Prompt with embedded resource',
      description: 'A prompt that embeds the resource it is given.',
      args: { resourceUri: z.string().describe('URI of the resource to embed') },
      run: ({ resourceUri }) => ({
        messages: [
          {
            role: 'user',
            content: {
              type: 'resource',
              resource: {
                uri: resourceUri ?? 'test://example-resource',
                mimeType: 'text/plain',
                text: 'Embedded resource content for testing.',
              },
            },
          },
          { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
        ],
      }),
    },
    {
      name: 'test_prompt_with_image',
      title: 'Prompt with image',
      description: 'A prompt with an image.',
      run: () => ({
        messages: [
          { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
          { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
        ],
      }),
    },
  ],
  createDeps: () => ({}),
})
