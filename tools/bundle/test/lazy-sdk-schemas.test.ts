import { spawnSync } from 'node:child_process'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundledFixture } from './fixture.js'

// The bin's copy of the SDK builds its 2025-era wire schemas, its protocol schemas and its OAuth
// schemas on first use (lazy-sdk-schemas.mjs). The same server, bundled and run from the SDK's own files, must answer
// every message the same way, register the same spec types, and the bundled one must build fewer
// zod schemas before its first tools/list. The fixture lives under packages/core/node_modules so
// that it resolves the SDK and zod the way core does.
let work: string

// Counts every zod schema constructed (zod calls its global config's postProcessor for each); it is
// imported first, before zod or the SDK evaluates.
const COUNT = `globalThis.__zod_globalConfig = { postProcessor: () => { globalThis.schemasBuilt = (globalThis.schemasBuilt ?? 0) + 1 } }
`

const SERVER = `import './count.mjs'
import { McpServer, inputRequired, isSpecType, specTypeSchemas } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import { z } from 'zod'

if (process.env.FIXTURE_SPEC_TYPES === '1') {
  const tokens = { access_token: 'a', token_type: 'bearer', expires_in: 60 }
  const metadata = {
    issuer: 'https://auth.example.com',
    authorization_endpoint: 'https://auth.example.com/authorize',
    token_endpoint: 'https://auth.example.com/token',
    response_types_supported: ['code'],
  }
  const report = {
    keys: Object.keys(specTypeSchemas),
    predicates: Object.keys(isSpecType),
    frozen: Object.isFrozen(specTypeSchemas) && Object.isFrozen(isSpecType),
    same: specTypeSchemas.OAuthTokens === specTypeSchemas.OAuthTokens,
    tokens: [isSpecType.OAuthTokens(tokens), isSpecType.OAuthTokens({ token_type: 'bearer' })],
    parsed: specTypeSchemas.OAuthTokens.safeParse(tokens),
    refused: specTypeSchemas.OAuthMetadata.safeParse({ ...metadata, token_endpoint: 'javascript:alert(1)' }).success,
    metadata: [isSpecType.OAuthMetadata(metadata), isSpecType.OAuthClientMetadata({ redirect_uris: ['https://a.example/cb'] })],
    tool: isSpecType.Tool({ name: 'x', inputSchema: { type: 'object' } }),
    // Elicitation with a zod schema: the SDK's key sets made from its elicitation schemas.
    elicit: inputRequired.elicit({
      message: 'm',
      requestedSchema: z.object({ email: z.email(), age: z.number().int().min(0), kind: z.enum(['a', 'b']), ok: z.boolean() }),
    }),
    refusedElicit: (() => {
      try {
        return inputRequired.elicit({ message: 'm', requestedSchema: z.object({ code: z.string().regex(/^x/) }) })
      } catch (error) {
        return String(error)
      }
    })(),
  }
  process.stdout.write(JSON.stringify(report) + '\\n')
  process.exit(0)
}

function factory() {
  const server = new McpServer({ name: 'fixture', version: '1.0.0' }, { capabilities: { logging: {} } })
  server.registerTool(
    'echo',
    { description: 'Echoes.', inputSchema: { text: z.string().max(10) }, outputSchema: { text: z.string() } },
    ({ text }) => ({ content: [{ type: 'text', text }], structuredContent: { text } }),
  )
  server.registerPrompt('greet', { description: 'Greets.', argsSchema: { name: z.string() } }, ({ name }) => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'hello ' + name } }],
  }))
  server.registerResource('note', 'note://one', { mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri: uri.href, text: 'one' }],
  }))
  return server
}
serveStdio(factory)
let listed = false
process.stdout.on('data', () => {})
const write = process.stdout.write.bind(process.stdout)
process.stdout.write = (chunk, ...rest) => {
  if (!listed && String(chunk).includes('"tools"')) {
    listed = true
    process.stderr.write('schemas built by the first tools/list: ' + globalThis.schemasBuilt + '\\n')
  }
  return write(chunk, ...rest)
}
`

const initialize = (version: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: version,
    capabilities: { sampling: {} },
    clientInfo: { name: 'test', version: '1' },
  },
})
// Valid and invalid messages of the 2025 generation: the SDK's answers (results and errors alike)
// must be the same from the bundle.
const SESSION_2025 = [
  initialize('2025-06-18'),
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' } } },
  {
    jsonrpc: '2.0',
    id: 4,
    method: 'tools/call',
    params: { name: 'echo', arguments: { text: 'far too long' } },
  },
  { jsonrpc: '2.0', id: 5, method: 'tools/call', params: { arguments: {} } },
  { jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'missing', arguments: {} } },
  { jsonrpc: '2.0', id: 7, method: 'prompts/list' },
  { jsonrpc: '2.0', id: 8, method: 'prompts/get', params: { name: 'greet', arguments: { name: 'Ada' } } },
  { jsonrpc: '2.0', id: 9, method: 'prompts/get', params: { name: 'greet' } },
  { jsonrpc: '2.0', id: 10, method: 'resources/list' },
  { jsonrpc: '2.0', id: 11, method: 'resources/templates/list' },
  { jsonrpc: '2.0', id: 12, method: 'resources/read', params: { uri: 'note://one' } },
  { jsonrpc: '2.0', id: 13, method: 'resources/read', params: {} },
  { jsonrpc: '2.0', id: 14, method: 'logging/setLevel', params: { level: 'debug' } },
  { jsonrpc: '2.0', id: 15, method: 'logging/setLevel', params: { level: 'loud' } },
  { jsonrpc: '2.0', id: 16, method: 'ping' },
  {
    jsonrpc: '2.0',
    id: 17,
    method: 'completion/complete',
    params: { ref: { type: 'ref/prompt', name: 'greet' } },
  },
  { jsonrpc: '2.0', id: 18, method: 'no/such/method' },
  { jsonrpc: '2.0', id: 19, method: 'tools/list', params: { cursor: 7 } },
  { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99 } },
  { jsonrpc: '2.0', method: 'notifications/roots/list_changed' },
  { jsonrpc: '2.0', id: 20, result: {} },
  { jsonrpc: '2.0', id: 21, method: 'ping', params: { _meta: { progressToken: 'p' } } },
]
// The 2026 generation: discovery, then requests carrying the envelope in _meta.
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'test', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
}
const SESSION_2026 = [
  { jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: META } },
  { jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: META } },
  {
    jsonrpc: '2.0',
    id: 3,
    method: 'tools/call',
    params: { _meta: META, name: 'echo', arguments: { text: 'hi' } },
  },
  { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { _meta: META, name: 'echo', arguments: {} } },
  { jsonrpc: '2.0', id: 5, method: 'prompts/get', params: { _meta: META, name: 'greet' } },
  { jsonrpc: '2.0', id: 6, method: 'ping', params: {} },
]

function serve(args: string[], messages: object[], env: Record<string, string> = {}) {
  const run = spawnSync(process.execPath, args, {
    cwd: work,
    input: `${messages.map((message) => JSON.stringify(message)).join('\n')}\n`,
    env: { ...process.env, KEEL_COMPILE_CACHE: '0', ...env },
    encoding: 'utf8',
  })
  expect(run.status, run.stderr).toBe(0)
  // Requests are served concurrently: answers are compared in the order of their ids.
  const id = (line: string) => Number((JSON.parse(line) as { id?: number }).id ?? -1)
  const lines = run.stdout.trim().split('\n').filter(Boolean)
  return { lines: lines.sort((a, b) => id(a) - id(b)), stderr: run.stderr }
}
const bundled = (messages: object[], env?: Record<string, string>) =>
  serve([join(work, 'dist/index.js')], messages, env)
const sdk = (messages: object[], env?: Record<string, string>) =>
  serve([join(work, 'src/index.mjs')], messages, env)

beforeAll(async () => {
  work = await bundledFixture(
    { 'src/count.mjs': COUNT, 'src/index.mjs': SERVER },
    { keel: { entries: { index: 'src/index.mjs' } } },
  )
})

afterAll(async () => {
  await rm(work, { recursive: true, force: true })
  if (withClient) await rm(withClient, { recursive: true, force: true })
})

// A bundle that also holds the SDK's client, which imports the OAuth and protocol schemas by name,
// is built with those schemas eager (the first build fails on those imports; the second one leaves
// them as the SDK has them) and answers as the SDK does.
let withClient: string | undefined

describe("the bundled SDK's lazy schemas", () => {
  it('answers every message of a 2025-era session as the SDK does', () => {
    const ours = bundled(SESSION_2025).lines
    expect(ours).toEqual(sdk(SESSION_2025).lines)
    // The session went through: results and errors both.
    expect(ours.length).toBe(20)
    expect(ours.some((line) => line.includes('"isError":true'))).toBe(true)
    expect(ours.some((line) => line.includes('"error":{"code":-32602'))).toBe(true)
  })

  it('answers a 2026-era session as the SDK does', () => {
    const ours = bundled(SESSION_2026).lines
    expect(ours).toEqual(sdk(SESSION_2026).lines)
    expect(ours.length).toBe(SESSION_2026.length)
  })

  it('keeps the schemas eager in a bundle that imports them by name, and answers the same', async () => {
    withClient = await bundledFixture(
      {
        'src/count.mjs': COUNT,
        'src/index.mjs': `import { Client } from '@modelcontextprotocol/client'\nglobalThis.clientClass = Client\n${SERVER}`,
      },
      { keel: { entries: { index: 'src/index.mjs' } } },
    )
    const run = (args: string[]) => serve(args, SESSION_2025.slice(0, 8)).lines
    expect(run([join(withClient, 'dist/index.js')])).toEqual(run([join(withClient, 'src/index.mjs')]))
  })

  it('registers the same spec types, the OAuth ones included, with the same verdicts, and elicits alike', () => {
    const ours = JSON.parse(bundled([], { FIXTURE_SPEC_TYPES: '1' }).lines[0] ?? '')
    const theirs = JSON.parse(sdk([], { FIXTURE_SPEC_TYPES: '1' }).lines[0] ?? '')
    expect(ours).toEqual(theirs)
    expect(ours.keys).toContain('OAuthTokens')
    expect(ours.same).toBe(true)
    expect(ours.tokens).toEqual([true, false])
    expect(ours.refused).toBe(false)
    // The elicitation schema converted and checked with the SDK's key sets, and one refused.
    expect(ours.elicit.params.requestedSchema.properties.kind).toMatchObject({
      type: 'string',
      enum: ['a', 'b'],
    })
    expect(ours.refusedElicit).toMatch(/unsupported JSON Schema constraint/)
  })

  it('builds neither the whole 2025-era set, nor every protocol schema, nor the OAuth ones for a handshake', () => {
    const built = (stderr: string) =>
      Number(/schemas built by the first tools\/list: (\d+)/.exec(stderr)?.[1])
    const handshake = SESSION_2025.slice(0, 3)
    const ours = built(bundled(handshake).stderr)
    const theirs = built(sdk(handshake).stderr)
    // Of about 750 era schemas, 800 protocol schemas and 270 OAuth ones, a handshake builds about
    // 300 (counts, not times).
    expect(theirs).toBeGreaterThan(1800)
    expect(ours).toBeLessThan(theirs - 1300)
    expect(ours).toBeGreaterThan(0)
  })
})
