import {
  createServer,
  request as httpRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import { connect, isIP, type Socket } from 'node:net'
import type { UrlPolicy } from './policy.js'

/**
 * The browser's only way out. Chromium is started with this loopback proxy as its proxy for every
 * destination (loopback included), so every connection it makes — pages, frames, sub-resources,
 * fetches from workers and service workers, WebSockets, pop-ups — is judged here, on the address
 * actually dialled. Request interception in the page gives the model precise errors; this is the
 * guarantee underneath it.
 */
export class PolicyProxy {
  private server: Server | undefined
  private readonly sockets = new Set<Socket>()

  constructor(
    private readonly policy: UrlPolicy,
    private readonly onRefused: (target: string, reason: string) => void,
    /** Test seam: where to connect once a host is judged (tests reach "public" names on loopback). */
    private readonly redirect?: (host: string) => string | undefined,
  ) {}

  /** Starts listening on 127.0.0.1; returns `host:port`. */
  async start(): Promise<string> {
    const server = createServer((request, response) => {
      void this.forward(request, response)
    })
    server.on('connect', (request: IncomingMessage, socket: Socket, head: Buffer) => {
      void this.tunnel(request, socket, head)
    })
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket)
      socket.on('close', () => this.sockets.delete(socket))
    })
    server.on('clientError', (_error, socket) => socket.destroy())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    this.server = server
    const address = server.address()
    if (!address || typeof address === 'string') throw new Error('the proxy did not get a port')
    return `127.0.0.1:${address.port}`
  }

  private async target(host: string, port: number, schemes: string[]): Promise<string | { reason: string }> {
    const decision = await this.policy.dial(host, port, schemes)
    if ('reason' in decision) {
      this.onRefused(`${host}:${port}`, decision.reason)
      return decision
    }
    return this.redirect?.(host) ?? decision.address
  }

  /** CONNECT host:port — https and WebSocket tunnels. */
  private async tunnel(request: IncomingMessage, client: Socket, head: Buffer): Promise<void> {
    client.on('error', () => client.destroy())
    const match = /^(\[[0-9a-fA-F:.]+\]|[^:]+):(\d{1,5})$/.exec(request.url ?? '')
    if (!match?.[1] || !match[2]) {
      client.end('HTTP/1.1 400 Bad Request\r\n\r\n')
      return
    }
    const host = match[1]
    const port = Number(match[2])
    const schemes = port === 443 ? ['https:'] : ['https:', 'http:']
    const address = await this.target(host, port, schemes)
    if (typeof address !== 'string') {
      client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n')
      return
    }
    const upstream = connect({ host: address, port, family: isIP(address) || undefined })
    upstream.on('error', () => {
      if (client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n')
      else client.destroy()
    })
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      if (head.length) upstream.write(head)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  }

  /** Plain http://: an absolute-form request, forwarded to the judged address. */
  private async forward(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let url: URL
    try {
      url = new URL(request.url ?? '')
    } catch {
      response.writeHead(400).end()
      return
    }
    if (url.protocol !== 'http:') {
      response.writeHead(400).end()
      return
    }
    const port = Number(url.port || 80)
    const address = await this.target(url.hostname, port, ['http:'])
    if (typeof address !== 'string') {
      response.writeHead(403, { 'content-type': 'text/plain' }).end('Refused by the browser server policy')
      return
    }
    const headers = { ...request.headers }
    delete headers['proxy-connection']
    delete headers['proxy-authorization']
    const upstream = httpRequest({
      host: address,
      port,
      method: request.method,
      path: `${url.pathname}${url.search}`,
      headers,
      family: isIP(address) || undefined,
    })
    upstream.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, answer.rawHeaders)
      answer.pipe(response)
    })
    upstream.on('error', () => {
      if (!response.headersSent) response.writeHead(502).end()
      else response.destroy()
    })
    response.on('close', () => upstream.destroy())
    request.pipe(upstream)
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy()
    const server = this.server
    this.server = undefined
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
