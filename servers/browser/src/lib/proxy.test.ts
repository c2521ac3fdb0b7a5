import { createServer, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UrlPolicy } from './policy.js'
import { PolicyProxy } from './proxy.js'

// A loopback origin standing for the intranet, and proxies with different policies in front of it.
let origin: ReturnType<typeof createServer>
let port: number
const hits: string[] = []
beforeAll(async () => {
  origin = createServer((incoming, response) => {
    hits.push(`${incoming.headers.host} ${incoming.url}`)
    response.end('inside')
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  port = (origin.address() as AddressInfo).port
})
afterAll(async () => {
  origin.closeAllConnections()
  await new Promise((resolve) => origin.close(resolve))
})

function policy(options: Partial<ConstructorParameters<typeof UrlPolicy>[0]> = {}) {
  return new UrlPolicy(
    { allowedOrigins: [], blockedOrigins: [], allowPrivateNetwork: false, allowFileUrls: false, ...options },
    async (host) => {
      if (host === 'public.test') return ['93.184.216.34']
      if (host === 'sneaky.test') return ['10.0.0.7']
      throw new Error('ENOTFOUND')
    },
  )
}

async function withProxy<T>(proxy: PolicyProxy, use: (address: string) => Promise<T>): Promise<T> {
  const address = await proxy.start()
  try {
    return await use(address)
  } finally {
    await proxy.close()
  }
}

/** A plain-http request through the proxy: status and body. */
function viaProxy(address: string, url: string): Promise<{ status: number; body: string }> {
  const [host, proxyPort] = address.split(':')
  return new Promise((resolve, reject) => {
    const outgoing = request({
      host,
      port: Number(proxyPort),
      method: 'GET',
      path: url,
      headers: { host: new URL(url).host },
    })
    outgoing.on('response', (response) => {
      let body = ''
      response.on('data', (chunk) => {
        body += chunk
      })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    outgoing.on('error', reject)
    outgoing.end()
  })
}

/** A CONNECT through the proxy: the status line it answers. */
function connectVia(address: string, target: string): Promise<number> {
  const [host, proxyPort] = address.split(':')
  return new Promise((resolve, reject) => {
    const outgoing = request({ host, port: Number(proxyPort), method: 'CONNECT', path: target })
    outgoing.on('connect', (response, socket) => {
      socket.destroy()
      resolve(response.statusCode ?? 0)
    })
    outgoing.on('response', (response) => resolve(response.statusCode ?? 0))
    outgoing.on('error', reject)
    outgoing.end()
  })
}

describe('PolicyProxy', () => {
  it('refuses plain requests and tunnels to private addresses and names that resolve to them', async () => {
    const refused: string[] = []
    const before = hits.length
    await withProxy(new PolicyProxy(policy(), (target) => refused.push(target)), async (address) => {
      expect((await viaProxy(address, `http://127.0.0.1:${port}/x`)).status).toBe(403)
      expect((await viaProxy(address, `http://sneaky.test:${port}/x`)).status).toBe(403)
      expect(await connectVia(address, `127.0.0.1:${port}`)).toBe(403)
      expect(await connectVia(address, `[::1]:${port}`)).toBe(403)
    })
    expect(hits.length).toBe(before)
    expect(refused).toEqual([
      `127.0.0.1:${port}`,
      `sneaky.test:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
    ])
  })

  it('dials the judged address of an allowed name, and forwards what is allowed', async () => {
    // public.test is judged public; the test seam dials it on loopback, where the origin listens.
    const proxy = new PolicyProxy(
      policy(),
      () => undefined,
      (host) => (host === 'public.test' ? '127.0.0.1' : undefined),
    )
    await withProxy(proxy, async (address) => {
      const answer = await viaProxy(address, `http://public.test:${port}/page`)
      expect(answer).toEqual({ status: 200, body: 'inside' })
      expect(await connectVia(address, `public.test:${port}`)).toBe(200)
    })
    expect(hits.at(-1)).toBe(`public.test:${port} /page`)
  })

  it('opens exactly an allowed origin, private or not, and the block list wins', async () => {
    const open = policy({ allowedOrigins: [`http://127.0.0.1:${port}`] })
    await withProxy(new PolicyProxy(open, () => undefined), async (address) => {
      expect((await viaProxy(address, `http://127.0.0.1:${port}/y`)).status).toBe(200)
      expect((await viaProxy(address, `http://127.0.0.1:${port + 1}/y`)).status).toBe(403)
    })
    const blocked = policy({ allowPrivateNetwork: true, blockedOrigins: [`http://127.0.0.1:${port}`] })
    await withProxy(new PolicyProxy(blocked, () => undefined), async (address) => {
      expect((await viaProxy(address, `http://127.0.0.1:${port}/z`)).status).toBe(403)
      expect(await connectVia(address, `127.0.0.1:${port}`)).toBe(403)
    })
  })
})
