import type { IncomingMessage, ServerResponse } from 'node:http'
import { toNodeHandler } from '@modelcontextprotocol/node'
import type {
  JSONRPCMessage,
  MessageExtraInfo,
  Transport,
  TransportSendOptions,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server'

// Server-to-client requests (sampling, elicitation, roots) carry ids the replica that sent them
// can recognise: `<replica>.<n>`. Whichever replica the client's answer reaches relays it there.
const RELAYED_ID = /^([0-9a-f]{12})\.(\d{1,15})$/

/** The replica that sent the server-to-client request `id` answers, and the id it used locally. */
export function ownerOf(id: unknown): { replica: string; id: number } | undefined {
  if (typeof id !== 'string') return undefined
  const match = RELAYED_ID.exec(id)
  return match?.[1] && match[2] ? { replica: match[1], id: Number(match[2]) } : undefined
}

type Message = Record<string, unknown>

/**
 * A session's Streamable HTTP transport on one replica: the SDK's web-standard transport, served
 * to Node through the SDK's adapter, with the ids of server-to-client requests made unique across
 * replicas, and a way to hand it an answer that reached another replica.
 */
export class RelayTransport implements Transport {
  onclose?: () => void
  onerror?: (error: Error) => void
  onmessage?: <T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void
  readonly #node: ReturnType<typeof toNodeHandler>

  constructor(
    readonly inner: WebStandardStreamableHTTPServerTransport,
    private readonly replica: string,
    private readonly store?: { relatedRequest: string | number | undefined },
  ) {
    this.#node = toNodeHandler({ fetch: (request, options) => inner.handleRequest(request, options) })
    inner.onmessage = (message, extra) => this.onmessage?.(this.#incoming(message), extra)
    inner.onclose = () => this.onclose?.()
    inner.onerror = (error) => this.onerror?.(error)
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId
  }

  start(): Promise<void> {
    return this.inner.start()
  }

  close(): Promise<void> {
    return this.inner.close()
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.inner.setSupportedProtocolVersions(versions)
  }

  setScopeChallengeResolver(
    resolver: Parameters<WebStandardStreamableHTTPServerTransport['setScopeChallengeResolver']>[0],
  ): void {
    this.inner.setScopeChallengeResolver(resolver)
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    // The event store records which client request each stored event belongs to: the SDK stores
    // the event synchronously inside send, so the value holds exactly for this message.
    const raw = message as Message
    const related =
      options?.relatedRequestId ??
      (raw.method === undefined && (typeof raw.id === 'string' || typeof raw.id === 'number')
        ? raw.id
        : undefined)
    if (this.store) this.store.relatedRequest = related
    try {
      return this.inner.send(this.#outgoing(message), options)
    } finally {
      if (this.store) this.store.relatedRequest = undefined
    }
  }

  /** Serves one HTTP request of this session (the body already parsed). */
  handleRequest(req: IncomingMessage, res: ServerResponse, parsedBody?: unknown): Promise<void> {
    return this.#node(req, res, parsedBody)
  }

  /** An answer to one of this replica's server-to-client requests that reached another replica. */
  deliver(message: JSONRPCMessage): void {
    this.onmessage?.(this.#incoming(message))
  }

  #outgoing(message: JSONRPCMessage): JSONRPCMessage {
    const raw = message as Message
    if (typeof raw.method === 'string' && typeof raw.id === 'number')
      return { ...raw, id: `${this.replica}.${raw.id}` } as JSONRPCMessage
    // The server withdraws one of its own requests (timeout, abort): name it as the client knows it.
    const params = raw.params as Message | undefined
    if (raw.method === 'notifications/cancelled' && typeof params?.requestId === 'number')
      return {
        ...raw,
        params: { ...params, requestId: `${this.replica}.${params.requestId}` },
      } as unknown as JSONRPCMessage
    return message
  }

  #incoming<T extends JSONRPCMessage>(message: T): T {
    const raw = message as Message
    if (raw.method !== undefined) return message
    const owner = ownerOf(raw.id)
    return owner && owner.replica === this.replica ? ({ ...raw, id: owner.id } as T) : message
  }
}
