import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Connection, connectHttp } from '@keel-mcp/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Cluster, startCluster, stopAll } from '../src/harness.js'

// State handles behind a round-robin balancer: three replicas of the browser server share Redis
// behind nginx; a 2026-07-28 client (no session) drives one browser session through them. Each
// call lands on the next replica; a call carrying the session handle is relayed to the replica
// that holds the browser, and refused clearly once that replica is gone.

const BROWSER_BIN = join(
  resolve(dirname(fileURLToPath(import.meta.url)), '../../..'),
  'servers/browser/dist/index.js',
)

const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body>${body}</body></html>`

let site: Server
let siteUrl: string
let cluster: Cluster
beforeAll(async () => {
  site = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://localhost')
    const set = url.searchParams.get('set')
    const body =
      url.pathname === '/form'
        ? page(
            'Form',
            '<form action="/submitted"><label>Name <input name="name"></label><button type="submit">Send</button></form>',
          )
        : url.pathname === '/submitted'
          ? page('Submitted', `<h1>Thanks ${(url.searchParams.get('name') ?? '').replace(/</g, '')}</h1>`)
          : page('Cookie', `<h1>cookie: ${(request.headers.cookie ?? 'none').replace(/</g, '')}</h1>`)
    response.writeHead(200, {
      'content-type': 'text/html; charset=utf-8',
      ...(set ? { 'set-cookie': `k=${encodeURIComponent(set)}; Path=/` } : {}),
    })
    response.end(body)
  })
  await new Promise<void>((done) => site.listen(0, '127.0.0.1', done))
  siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  cluster = await startCluster(3, {
    bin: BROWSER_BIN,
    args: ['--allow-private-network'],
    env: { LOG_LEVEL: 'debug' },
  })
})
afterAll(async () => {
  await stopAll()
  await new Promise((done) => site.close(done))
})

function textOf(result: Record<string, any>): string {
  return ((result.content ?? []) as Array<{ text?: string }>).map((block) => block.text ?? '').join('\n')
}

async function call(connection: Connection, name: string, args: Record<string, unknown>) {
  const result = await connection.client.callTool({ name, arguments: args }, { timeout: 60_000 })
  return { isError: result.isError === true, text: textOf(result), structured: result.structuredContent }
}

function refOf(text: string, pattern: RegExp): string {
  const line = text.split('\n').find((candidate) => pattern.test(candidate)) ?? ''
  const ref = /#(e\d+)/.exec(line)?.[1]
  if (!ref) throw new Error(`no ref for ${pattern} in:\n${text}`)
  return ref
}

/** navigate → snapshot → type → click → new_tab → list_tabs → select_tab → go_back, on one session. */
async function flow(connection: Connection, session?: string) {
  const on = (args: Record<string, unknown>) => (session ? { ...args, session } : args)
  const form = await call(connection, 'navigate', on({ url: `${siteUrl}/form` }))
  expect(form.isError, form.text).toBe(false)
  const snapshot = await call(connection, 'snapshot', on({}))
  expect(snapshot.text).toMatch(/textbox "Name"/)
  const typed = await call(
    connection,
    'type',
    on({ ref: refOf(snapshot.text, /textbox "Name"/), text: 'Ada' }),
  )
  expect(typed.isError, typed.text).toBe(false)
  const clicked = await call(connection, 'click', on({ ref: refOf(snapshot.text, /button "Send"/) }))
  expect(clicked.text).toContain('Thanks Ada')
  expect((await call(connection, 'new_tab', on({}))).structured?.tab).toBe('t2')
  expect((await call(connection, 'list_tabs', on({}))).structured?.tabs).toHaveLength(2)
  await call(connection, 'select_tab', on({ tab: 't1' }))
  const back = await call(connection, 'go_back', on({}))
  expect(back.structured?.url).toBe(`${siteUrl}/form`)
}

describe('browser sessions across three replicas behind nginx', () => {
  it('serves a 2025-era session (v1 client, no handle) from the replica that holds its browser', async () => {
    const connection = await connectHttp(cluster.nginx.url, { generation: 'v1' })
    try {
      await call(connection, 'navigate', { url: `${siteUrl}/cookie?set=beta` })
      await flow(connection)
      expect((await call(connection, 'navigate', { url: `${siteUrl}/cookie` })).text).toContain(
        'cookie: k=beta',
      )
      // One replica launched a browser for the session; the others relayed its calls there.
      const launched = cluster.replicas.filter((replica) => replica.stderr().includes('browser launched'))
      expect(launched).toHaveLength(1)
    } finally {
      await connection.close()
    }
  })

  it('relays every call carrying the handle to the replica holding the browser, then refuses it clearly once that replica is gone', async () => {
    const { replicas, nginx } = cluster
    const connection = await connectHttp(nginx.url, { era: 'modern' })
    try {
      const before = (await nginx.accessLog()).split('\n').filter(Boolean).length
      const opened = await call(connection, 'navigate', { url: `${siteUrl}/cookie?set=alpha` })
      expect(opened.isError, opened.text).toBe(false)
      const session = opened.structured?.session as string
      expect(session).toMatch(/^session\.[0-9a-f]{12}\./)
      const owner = session.split('.')[1] as string

      await flow(connection, session)
      // The cookie set by the first call is in the same browser context, wherever the call landed.
      expect((await call(connection, 'navigate', { url: `${siteUrl}/cookie`, session })).text).toContain(
        'cookie: k=alpha',
      )

      // Round robin spread the calls over every replica; one of them held the browser throughout.
      const lines = (await nginx.accessLog()).split('\n').filter(Boolean).slice(before)
      expect(new Set(lines.map((line) => line.split(' ')[2])).size).toBe(3)
      const holder = replicas.find((replica) => replica.stderr().includes(`replica=${owner}`))
      expect(holder).toBeDefined()
      expect(holder?.stderr()).toContain('browser launched')
      for (const other of replicas.filter((replica) => replica !== holder))
        expect(other.stderr()).toContain('relayed a call to the replica holding its handle')

      await holder?.kill()
      const gone = await call(connection, 'list_tabs', { session })
      expect(gone.isError).toBe(true)
      expect(gone.text).toMatch(
        /^unavailable: The session handle belongs to a server process that is no longer running[\s\S]*open_session/,
      )
      // A new session works on the replicas left.
      const fresh = await call(connection, 'navigate', { url: `${siteUrl}/cookie` })
      expect(fresh.isError, fresh.text).toBe(false)
      expect(fresh.text).toContain('cookie: none')
    } finally {
      await connection.close()
    }
  })
})
