import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { connectHttp } from '@keel-mcp/core/testing'
import {
  Client,
  ClientCredentialsProvider,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client'
import { afterAll, describe, expect, it } from 'vitest'
import { CLIENTS, startIssuer } from '../../../packages/core/test/oauth-issuer.js'
import { freePort, startNginx, startRedis, startReplicas, stopAll } from '../src/harness.js'

// docs/deploying.md as a user meets it: its nginx block (addresses swapped for loopback ones) in
// front of three replicas configured with the variables it names.

const docFile = resolve(dirname(fileURLToPath(import.meta.url)), '../../../docs/deploying.md')

afterAll(stopAll)

async function documentedSite(): Promise<(port: number, upstreams: string[]) => string> {
  const doc = await readFile(docFile, 'utf8')
  const block = /```nginx\n([\s\S]*?)```/.exec(doc)?.[1]
  if (!block) throw new Error('docs/deploying.md has no nginx block')
  const servers = block.match(/^\s*server \d+\.\d+\.\d+\.\d+:\d+[^\n]*$/gm) ?? []
  expect(servers).toHaveLength(3)
  expect(block).toMatch(/^\s*listen 80;$/m)
  return (port, upstreams) => {
    let index = 0
    return block
      .replace(/server \d+\.\d+\.\d+\.\d+:\d+/g, () => `server ${upstreams[index++]}`)
      .replace(/listen 80;/, `listen 127.0.0.1:${port};`)
  }
}

describe('docs/deploying.md', () => {
  it('serves sessions and multi-round calls through its nginx block with REDIS_URL and MCP_STATE_SECRET_FILE', async () => {
    const site = await documentedSite()
    const redis = await startRedis()
    const secretFile = join(await mkdtemp(join(tmpdir(), 'keel-doc-')), 'mcp-state-secret')
    await writeFile(secretFile, 'a-long-random-state-secret-for-the-doc-test\n', { mode: 0o600 })
    const replicas = await startReplicas(3, {
      env: { REDIS_URL: redis.url, MCP_STATE_SECRET_FILE: secretFile },
    })
    const nginx = await startNginx(
      replicas.map((replica) => replica.port),
      site,
    )
    const onElicit = (params: Record<string, any>) =>
      params.message === 'Your name?'
        ? { action: 'accept', content: { name: 'Ada' } }
        : { action: 'accept', content: { colour: 'teal' } }

    const legacy = await connectHttp(nginx.url, { onElicit })
    try {
      const pids = new Set<number>()
      for (let call = 0; call < 3; call++) {
        pids.add(
          ((await legacy.client.callTool({ name: 'whoami' })).structuredContent as { pid: number }).pid,
        )
        const asked = await legacy.client.callTool({ name: 'ask_name' }, { timeout: 20_000 })
        expect(asked.content[0].text).toMatch(/^Ada likes teal/)
      }
      expect(pids.size).toBe(3)
    } finally {
      await legacy.close()
    }

    const modern = await connectHttp(nginx.url, { era: 'modern', onElicit })
    try {
      const asked = await modern.client.callTool({ name: 'ask_name' })
      expect(asked.content[0].text).toMatch(/^Ada likes teal/)
    } finally {
      await modern.close()
    }
    const replicaIds = new Set(
      (await nginx.accessLog())
        .split('\n')
        .map((line) => line.split(' ')[3])
        .filter((id) => id && id !== '-'),
    )
    expect(replicaIds.size).toBe(3)
  })

  it('serves an OAuth session on every replica with the variables of its "OAuth with replicas" block', async () => {
    const doc = await readFile(docFile, 'utf8')
    const section = doc.slice(doc.indexOf('## OAuth with replicas'))
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1]
    if (!block) throw new Error('docs/deploying.md has no sh block under "OAuth with replicas"')
    const documented = Object.fromEntries(
      [...block.matchAll(/^([A-Z_]+)=(\S+) \\$/gm)].map((match) => [match[1] as string, match[2] as string]),
    )
    expect(Object.keys(documented).sort()).toEqual(
      [
        'MCP_AUTH_ISSUER',
        'MCP_AUTH_RESOURCE',
        'MCP_AUTH_SCOPES',
        'MCP_STATE_SECRET_FILE',
        'REDIS_URL',
      ].sort(),
    )
    const issuer = await startIssuer()
    try {
      const redis = await startRedis()
      const secretFile = join(await mkdtemp(join(tmpdir(), 'keel-doc-')), 'mcp-state-secret')
      await writeFile(secretFile, 'a-long-random-state-secret-for-the-doc-test\n', { mode: 0o600 })
      const port = await freePort()
      issuer.resource = `http://127.0.0.1:${port}/mcp`
      // The doc's variables, with the addresses of this machine's issuer, nginx and Redis.
      const loopback: Record<string, string> = {
        MCP_AUTH_ISSUER: issuer.url,
        MCP_AUTH_RESOURCE: issuer.resource,
        REDIS_URL: redis.url,
        MCP_STATE_SECRET_FILE: secretFile,
      }
      const env = Object.fromEntries(
        Object.entries(documented).map(([name, value]) => [name, loopback[name] ?? value]),
      )
      const replicas = await startReplicas(3, { env })
      const nginx = await startNginx(
        replicas.map((replica) => replica.port),
        await documentedSite(),
        port,
      )
      for (const replica of replicas) expect(replica.stderr()).not.toMatch(/no --auth-resource/)
      const provider = new ClientCredentialsProvider({
        clientId: 'writer',
        clientSecret: CLIENTS.writer.secret,
        scope: CLIENTS.writer.scope,
        expectedIssuer: issuer.url,
      })
      const mcp = new Client({ name: 'deploying-doc', version: '1.0.0' })
      await mcp.connect(new StreamableHTTPClientTransport(new URL(nginx.url), { authProvider: provider }))
      try {
        const seen = []
        for (let call = 0; call < 6; call++)
          seen.push(
            (await mcp.callTool({ name: 'whoami' })).structuredContent as {
              pid: number
              session: string
              subject: string
            },
          )
        expect(new Set(seen.map((who) => who.pid)).size).toBe(3)
        expect(new Set(seen.map((who) => who.session)).size).toBe(1)
        expect(new Set(seen.map((who) => who.subject))).toEqual(new Set(['writer']))
      } finally {
        await mcp.close()
      }
    } finally {
      await stopAll()
      await issuer.close()
    }
  })
})
