// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${__dirname} and ${user_config.x} are the MCP Bundle manifest's own placeholders
import { execFileSync } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connectStdio } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startPostgres } from '../../../servers/postgres/test/harness/postgres.js'
import { buildBundles, mcpb } from '../src/build.mjs'
import { resolveLaunch } from '../src/manifest.mjs'

type Manifest = Record<string, any>
const SERVERS = ['browser', 'fs', 'github', 'postgres', 'slack']

let work: string
let built: Array<{ slug: string; file: string; manifest: Manifest }>

/** Unpacks a built bundle with the mcpb CLI, as a desktop client does on install. */
async function unpack(slug: string): Promise<{ dir: string; manifest: Manifest }> {
  const bundle = built.find((entry) => entry.slug === slug)
  if (!bundle) throw new Error(`no ${slug} bundle was built`)
  const dir = join(work, `unpacked-${slug}`)
  await rm(dir, { recursive: true, force: true })
  mcpb(['unpack', bundle.file, dir])
  return { dir, manifest: JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8')) }
}

/** Starts an unpacked bundle the way its manifest says, with the user's answers. */
async function launch(slug: string, answers: Record<string, unknown>, extraEnv: Record<string, string> = {}) {
  const { dir, manifest } = await unpack(slug)
  const { command, args, env } = resolveLaunch(manifest, dir, answers)
  // A desktop client runs the bundle with the Node it has, from a directory of its own, and
  // passes only the manifest's environment: nothing of this workspace's may leak in.
  const stderr: string[] = []
  const connection = await connectStdio({
    command: command === 'node' ? process.execPath : command,
    args,
    env: { ...env, ...extraEnv, NODE_PATH: '' },
    cwd: tmpdir(),
    onStderr: (chunk) => stderr.push(chunk),
  })
  return { ...connection, dir, stderr }
}

/** A loopback HTTP server answering `reply(request)` as JSON. */
async function jsonServer(
  reply: (request: IncomingMessage) => { status?: number; body: unknown },
): Promise<Server> {
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume()
    request.on('end', () => {
      const { status = 200, body } = reply(request)
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' })
      response.end(JSON.stringify(body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}
const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const textOf = (result: Record<string, any>) =>
  (result.content as Array<{ type: string; text?: string }>).map((block) => block.text ?? '').join('\n')

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'keel-mcpb-test-'))
  built = await buildBundles({ outDir: join(work, 'out') })
}, 180_000)

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true })
})

describe('pnpm bundle:mcpb', () => {
  it('builds one bundle per published server, named by slug and version', async () => {
    expect(built.map((entry) => entry.slug).sort()).toEqual(SERVERS)
    for (const { slug, file, manifest } of built) {
      const pkg = JSON.parse(
        await readFile(join(import.meta.dirname, '../../../servers', slug, 'package.json'), 'utf8'),
      )
      expect(file.endsWith(`${slug}-${pkg.version}.mcpb`)).toBe(true)
      expect(manifest.version).toBe(pkg.version)
    }
  })

  it('writes manifests the mcpb CLI validates, read back from the packed files', async () => {
    for (const slug of SERVERS) {
      const { dir, manifest } = await unpack(slug)
      expect(mcpb(['validate', join(dir, 'manifest.json')])).toMatch(/valid/i)
      expect(manifest.server).toMatchObject({ type: 'node', entry_point: 'server/dist/index.js' })
      expect(manifest.server.mcp_config.args[0]).toBe('${__dirname}/server/dist/index.js')
    }
  })

  it('refuses a manifest the schema rejects (the validation is real)', async () => {
    const dir = join(work, 'broken')
    await mkdir(dir, { recursive: true })
    await writeFile(join(dir, 'manifest.json'), JSON.stringify({ manifest_version: '0.3', name: 'x' }))
    expect(() => mcpb(['validate', join(dir, 'manifest.json')])).toThrow()
  })

  it('asks a desktop user for exactly what each server needs, secrets marked sensitive', () => {
    const config = Object.fromEntries(built.map(({ slug, manifest }) => [slug, manifest.user_config]))
    expect(config.fs.allowed_directories).toMatchObject({ type: 'directory', multiple: true, required: true })
    expect(config.postgres).toEqual({
      database_url: expect.objectContaining({ type: 'string', sensitive: true, required: true }),
    })
    expect(config.github.github_token).toMatchObject({ sensitive: true, required: true })
    expect(config.slack.bot_token).toMatchObject({ sensitive: true, required: true })
    expect(config.slack.user_token).toMatchObject({ sensitive: true, required: false })
    expect(config.browser.executable_path).toMatchObject({ type: 'file', required: false })
  })

  it('ships only the runtime packages a bin loads: nothing keel-bundle inlined', async () => {
    const { dir } = await unpack('postgres')
    const pkg = JSON.parse(await readFile(join(dir, 'server', 'package.json'), 'utf8'))
    expect(Object.keys(pkg.dependencies).sort()).toEqual(['libpg-query', 'pg'])
    expect(pkg.devDependencies).toBeUndefined()
    await expect(
      readFile(join(dir, 'server', 'node_modules', '@keel-mcp', 'core', 'package.json')),
    ).rejects.toThrow()
    await expect(
      readFile(join(dir, 'server', 'node_modules', 'pg', 'package.json'), 'utf8'),
    ).resolves.toContain('"name": "pg"')
  })
})

describe('a bundle unpacked and started as a desktop client starts it', () => {
  it('fs: serves the chosen directories and nothing else', async () => {
    const project = await mkdtemp(join(tmpdir(), 'keel-mcpb-project-'))
    await writeFile(join(project, 'notes.txt'), 'hello from the bundle\n')
    const server = await launch('fs', { allowed_directories: [project], read_only: true })
    try {
      const { tools } = await server.client.listTools()
      const names = tools.map((tool) => tool.name)
      expect(names).toContain('read_text_file')
      expect(names).not.toContain('write_file')
      const read = await server.client.callTool({
        name: 'read_text_file',
        arguments: { path: join(project, 'notes.txt') },
      })
      expect(textOf(read)).toContain('hello from the bundle')
      const outside = await server.client.callTool({
        name: 'read_text_file',
        arguments: { path: '/etc/hostname' },
      })
      expect(outside.isError).toBe(true)
    } finally {
      await server.close()
      await rm(project, { recursive: true, force: true })
    }
  })

  it('postgres: queries a real database through the pg and parser packages in the bundle', async () => {
    const postgres = await startPostgres()
    const server = await launch('postgres', { database_url: postgres.url })
    try {
      const result = await server.client.callTool({
        name: 'query',
        arguments: { sql: 'SELECT 40 + 2 AS answer' },
      })
      expect(result.isError).toBeFalsy()
      expect(textOf(result)).toContain('42')
      const refused = await server.client.callTool({ name: 'query', arguments: { sql: 'DROP TABLE x' } })
      expect(refused.isError).toBe(true)
    } finally {
      await server.close()
      await postgres.stop()
    }
  }, 60_000)

  it('github: calls the API with the token the user gave, through the bundled Octokit', async () => {
    const seen: string[] = []
    const api = await jsonServer((request) => {
      seen.push(`${request.method} ${request.url} ${request.headers.authorization}`)
      return {
        body: {
          login: 'octocat',
          id: 1,
          type: 'User',
          name: 'The Octocat',
          html_url: 'https://github.com/octocat',
        },
      }
    })
    const server = await launch(
      'github',
      { github_token: 'ghp_bundletoken0000000000000000000000000' },
      { GITHUB_API_URL: urlOf(api) },
    )
    try {
      const result = await server.client.callTool({ name: 'get_me', arguments: {} })
      expect(result.isError).toBeFalsy()
      expect(textOf(result)).toContain('octocat')
      expect(
        seen.some(
          (line) => line.startsWith('GET /user') && line.endsWith('ghp_bundletoken0000000000000000000000000'),
        ),
      ).toBe(true)
    } finally {
      await server.close()
      api.close()
    }
  })

  it('slack: lists channels through the bundled Web API client', async () => {
    const api = await jsonServer(() => ({
      body: {
        ok: true,
        channels: [{ id: 'C0BUNDLE', name: 'bundled', is_channel: true, is_member: true, num_members: 3 }],
        response_metadata: { next_cursor: '' },
      },
    }))
    const server = await launch(
      'slack',
      { bot_token: 'xoxb-bundle-token' },
      { SLACK_API_URL: `${urlOf(api)}/api/` },
    )
    try {
      const result = await server.client.callTool({ name: 'list_channels', arguments: {} })
      expect(result.isError).toBeFalsy()
      expect(textOf(result)).toContain('bundled')
    } finally {
      await server.close()
      api.close()
    }
  })

  it('browser: drives the Chromium the user pointed it at through the bundled puppeteer-core', async () => {
    const page = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' })
      response.end('<title>Bundled</title><button>Press me</button>')
    })
    await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve))
    const executable = process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium'
    const server = await launch(
      'browser',
      { executable_path: executable, allowed_origins: urlOf(page) },
      { BROWSER_ALLOW_PRIVATE_NETWORK: '1' },
    )
    try {
      const result = await server.client.callTool({ name: 'navigate', arguments: { url: `${urlOf(page)}/` } })
      expect(result.isError, textOf(result)).toBeFalsy()
      expect(textOf(result)).toContain('Press me')
    } finally {
      await server.close()
      page.close()
    }
  }, 60_000)
})

describe('resolveLaunch', () => {
  const manifest = {
    server: {
      mcp_config: {
        command: 'node',
        args: ['${__dirname}/server/dist/index.js', '${user_config.dirs}', '--limit=${user_config.limit}'],
        env: { TOKEN: '${user_config.token}', OPTIONAL: '${user_config.optional}' },
      },
    },
    user_config: {
      dirs: { type: 'directory', multiple: true, required: true },
      limit: { type: 'number', default: 5 },
      token: { type: 'string', required: true },
      optional: { type: 'string' },
    },
  }

  it('expands a list answer standing alone into one argument per item, and defaults', () => {
    expect(resolveLaunch(manifest, '/b', { dirs: ['/a', '/c d'], token: 't' })).toEqual({
      command: 'node',
      args: ['/b/server/dist/index.js', '/a', '/c d', '--limit=5'],
      env: { TOKEN: 't', OPTIONAL: '' },
    })
  })

  it('refuses to start without a required answer', () => {
    expect(() => resolveLaunch(manifest, '/b', { dirs: ['/a'] })).toThrow(/user_config.token is required/)
  })
})

// The CLI a user runs is the same code: `pnpm bundle:mcpb` with an unknown slug says which exist.
it('names the servers it can bundle when asked for one it cannot', () => {
  let message = ''
  try {
    execFileSync(
      process.execPath,
      [join(import.meta.dirname, '../src/build.mjs'), '--out', join(work, 'x'), 'nosuch'],
      {
        encoding: 'utf8',
        stdio: 'pipe',
      },
    )
  } catch (error) {
    message = String((error as { stderr?: string }).stderr)
  }
  expect(message).toContain('no bundle for nosuch')
  expect(message).toContain('fs')
})
