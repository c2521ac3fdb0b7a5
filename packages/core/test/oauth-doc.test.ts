import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type HttpEndpoint, serveHttp } from '../src/http.js'
import { defineServer, defineTool } from '../src/index.js'
import { prepare } from '../src/run.js'

// docs/oauth.md, the way a reader uses it: its issuer.mjs runs as written (only the two ports
// changed to free ones), a server starts with its flags and env, and the requests of its curl
// lines and its client program succeed.

const CORE = fileURLToPath(new URL('..', import.meta.url))
const DOC = fileURLToPath(new URL('../../../docs/oauth.md', import.meta.url))

function block(markdown: string, language: string, marker: string): string {
  const blocks = [...markdown.matchAll(/```(\w+)\n([\s\S]*?)```/g)]
  const found = blocks.find(([, lang, body]) => lang === language && body?.includes(marker))
  if (!found?.[2]) throw new Error(`docs/oauth.md has no ${language} block with ${marker}`)
  return found[2]
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const spec = defineServer({
  name: 'oauth-doc',
  version: '1.0.0',
  description: 'docs/oauth.md check',
  tools: [
    defineTool({
      name: 'read_thing',
      title: 'Read thing',
      description: 'Reads.',
      input: {},
      annotations: { readOnlyHint: true, openWorldHint: false },
      run: (_input, { auth }) => ({ text: `hello ${auth?.subject}` }),
    }),
  ],
  createDeps: () => ({}),
})

describe('docs/oauth.md, "Try it on one machine"', () => {
  let doc: string
  let work: string
  let issuerProcess: ChildProcess
  let endpoint: HttpEndpoint
  let issuerUrl: string
  let serverOrigin: string

  beforeAll(async () => {
    doc = await readFile(DOC, 'utf8')
    const issuerPort = await freePort()
    const serverPort = await freePort()
    issuerUrl = `http://127.0.0.1:${issuerPort}`
    serverOrigin = `http://127.0.0.1:${serverPort}`
    const withPorts = (text: string) =>
      text
        .replaceAll('127.0.0.1:4000', `127.0.0.1:${issuerPort}`)
        .replaceAll('listen(4000', `listen(${issuerPort}`)
        .replaceAll('127.0.0.1:3000', `127.0.0.1:${serverPort}`)
        .replaceAll('--port 3000', `--port ${serverPort}`)
    // Under the package's node_modules (ignored by git), so `oidc-provider` resolves as after `npm i`.
    work = await mkdtemp(join(CORE, 'node_modules', '.oauth-doc-'))
    await writeFile(join(work, 'issuer.mjs'), withPorts(block(doc, 'js', '// issuer.mjs')))
    issuerProcess = spawn(process.execPath, [join(work, 'issuer.mjs')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let issuerErrors = ''
    issuerProcess.stderr?.on('data', (chunk: Buffer) => {
      issuerErrors += chunk.toString()
    })
    // Bounded wait for the issuer to listen (at most 200 tries, 20 s).
    for (let attempt = 0; ; attempt++) {
      if (issuerProcess.exitCode !== null) throw new Error(`issuer.mjs exited: ${issuerErrors}`)
      const status = (await fetch(`${issuerUrl}/.well-known/openid-configuration`).catch(() => undefined))
        ?.status
      if (status === 200) break
      if (attempt >= 200) throw new Error(`issuer.mjs did not start: ${issuerErrors}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }

    const command = withPorts(block(doc, 'sh', 'MCP_AUTH_ISSUER=http://127.0.0.1')).trim()
    const words = command.split(/\s+/)
    const env: Record<string, string> = { LOG_LEVEL: 'silent' }
    while (words[0]?.includes('=')) {
      const [name, ...value] = (words.shift() as string).split('=')
      env[name as string] = value.join('=')
    }
    words.shift() // the bin
    const argv: string[] = []
    for (let index = 0; index < words.length; index++) {
      const word = words[index] as string
      if (!word.startsWith('--')) continue // the server's own positionals (a directory)
      argv.push(word)
      const next = words[index + 1]
      if (next !== undefined && !next.startsWith('--')) {
        argv.push(next)
        index++
      }
    }
    expect(env.MCP_AUTH_ISSUER).toBe(issuerUrl)
    const runtime = await prepare(spec, { argv, env })
    endpoint = await serveHttp(runtime)
    expect(endpoint.url).toBe(`${serverOrigin}/mcp`)
  }, 60_000)

  afterAll(async () => {
    await endpoint?.close()
    issuerProcess?.kill()
    if (work) await rm(work, { recursive: true, force: true })
  })

  it('answers the first curl with 401 and a challenge naming the metadata', async () => {
    expect(doc).toContain('curl -si -X POST http://127.0.0.1:3000/mcp')
    const response = await fetch(`${serverOrigin}/mcp`, { method: 'POST' })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toContain(
      `resource_metadata="${serverOrigin}/.well-known/oauth-protected-resource/mcp"`,
    )
  })

  it('serves the metadata the second curl reads', async () => {
    expect(doc).toContain('curl -s http://127.0.0.1:3000/.well-known/oauth-protected-resource/mcp')
    const metadata = await (await fetch(`${serverOrigin}/.well-known/oauth-protected-resource/mcp`)).json()
    expect(metadata).toMatchObject({ resource: `${serverOrigin}/mcp`, authorization_servers: [issuerUrl] })
  })

  it('accepts the read-only token of the third curl on the fourth', async () => {
    const credentials = /-u (\w+):(\S+) -d grant_type=client_credentials/.exec(doc)
    if (!credentials) throw new Error('no token curl in docs/oauth.md')
    const token = (await (
      await fetch(`${issuerUrl}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${credentials[1]}:${credentials[2]}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          scope: 'mcp:read',
          resource: `${serverOrigin}/mcp`,
        }),
      })
    ).json()) as { access_token: string }
    const initialize = /-d '(\{"jsonrpc":"2.0","id":1,"method":"initialize".*\})'/.exec(doc)?.[1]
    if (!initialize) throw new Error('no initialize curl in docs/oauth.md')
    const response = await fetch(`${serverOrigin}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: initialize,
    })
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('"protocolVersion"')
  })

  it('lets the documented client program list and call tools', async () => {
    const program = block(doc, 'ts', 'ClientCredentialsProvider')
    const field = (name: string) => new RegExp(`${name}: '([^']+)'`).exec(program)?.[1] as string
    const authProvider = new ClientCredentialsProvider({
      clientId: field('clientId'),
      clientSecret: field('clientSecret'),
      scope: field('scope'),
      expectedIssuer: issuerUrl,
    })
    const client = new Client({ name: 'demo', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${serverOrigin}/mcp`), { authProvider }))
    try {
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name)).toEqual(['read_thing'])
      const result = await client.callTool({ name: 'read_thing', arguments: {} })
      expect(result.content).toEqual([{ type: 'text', text: 'hello writer' }])
    } finally {
      await client.close()
    }
  })
})
