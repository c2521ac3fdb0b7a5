import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AuthInfo } from '@modelcontextprotocol/server'
import type { Redis } from 'ioredis'
import type { Logger } from '../logger.js'

// Calls that carry a state handle are served where the state lives. A handle names the replica
// that minted it (handles.ts); a 2026-07-28 request carrying another replica's handle is relayed
// there over Redis pub/sub, served by that replica's own request handler, and its answer relayed
// back. When the owner no longer listens (it stopped or died), nothing is relayed: the receiving
// replica serves the call itself, and the handle is refused with a tool error saying its state is
// gone and how to start anew.

/** A call relayed to the replica that holds its handle's state. */
interface RelayedCall {
  id: string
  from: string
  body: unknown
  headers: Record<string, string>
  auth?: AuthInfo
  /** A 2025-era session's call: served through that session (restored on the owner) as `principal`'s. */
  session?: { id: string; principal?: string }
}

/** The owner's answer, as its request handler gave it. */
interface RelayedAnswer {
  id: string
  status: number
  contentType: string | null
  body: string
}

/**
 * Serves one relayed request on the owner: a lone request through the replica's own 2026-07-28
 * request handler; a session's request through that session's transport.
 */
export type ServeRelayed = (
  request: Request,
  authInfo: AuthInfo | undefined,
  body: unknown,
  session: { id: string; principal?: string } | undefined,
) => Promise<Response>

// The request headers a relayed call keeps: the protocol's own and content negotiation. Never the
// Authorization header (the verified AuthInfo travels instead) nor hop-by-hop headers.
const KEPT_HEADER = /^(mcp-|accept$|content-type$|last-event-id$)/

/** The relay of one replica: sends calls to owners, serves calls relayed to it. */
export class HandleRelay {
  readonly #pending = new Map<string, (answer: RelayedAnswer) => void>()
  #serve: ServeRelayed | undefined

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly replica: string,
    private readonly logger: Logger,
    /** How long a relayed call may take before the caller is answered with a timeout. */
    private readonly timeoutMs: number,
  ) {}

  /** The channels this replica listens on for relayed calls and their answers. */
  get channels(): string[] {
    return [this.#calls(this.replica), this.#answers(this.replica)]
  }

  #calls(replica: string) {
    return `${this.prefix}handle-calls:${replica}`
  }

  #answers(replica: string) {
    return `${this.prefix}handle-answers:${replica}`
  }

  /** Sets how this replica serves calls relayed to it. */
  serveWith(serve: ServeRelayed): void {
    this.#serve = serve
  }

  /** Whether `channel` is one of the relay's; if so, the message is handled. */
  dispatch(channel: string, text: string): boolean {
    if (channel === this.#answers(this.replica)) {
      let answer: RelayedAnswer
      try {
        answer = JSON.parse(text)
      } catch {
        return true
      }
      this.#pending.get(answer.id)?.(answer)
      return true
    }
    if (channel === this.#calls(this.replica)) {
      let call: RelayedCall
      try {
        call = JSON.parse(text)
      } catch {
        return true
      }
      this.#answer(call).catch((error: unknown) =>
        this.logger.warn('a relayed call could not be answered', { error }),
      )
      return true
    }
    return false
  }

  async #answer(call: RelayedCall): Promise<void> {
    let answer: RelayedAnswer
    if (!this.#serve) {
      answer = { id: call.id, status: 503, contentType: 'application/json', body: '{}' }
    } else {
      const request = new Request('http://localhost/mcp', {
        method: 'POST',
        headers: call.headers,
        body: JSON.stringify(call.body),
      })
      const response = await this.#serve(request, call.auth, call.body, call.session)
      answer = {
        id: call.id,
        status: response.status,
        contentType: response.headers.get('content-type'),
        body: await response.text(),
      }
    }
    await this.redis.publish(this.#answers(call.from), JSON.stringify(answer))
  }

  /**
   * Relays a call to the replica `owner` and writes its answer to `res`. False, with nothing
   * written, when the owner does not listen (gone): the caller serves the call itself.
   */
  async relay(
    owner: string,
    req: IncomingMessage,
    res: ServerResponse,
    body: unknown,
    auth: AuthInfo | undefined,
    session?: { id: string; principal?: string },
  ): Promise<boolean> {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(req.headers))
      if (KEPT_HEADER.test(name) && typeof value === 'string') headers[name] = value
    const id = randomUUID()
    const answered = new Promise<RelayedAnswer | undefined>((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        resolve(undefined)
      }, this.timeoutMs)
      timer.unref()
      this.#pending.set(id, (answer) => {
        clearTimeout(timer)
        this.#pending.delete(id)
        resolve(answer)
      })
    })
    const call: RelayedCall = {
      id,
      from: this.replica,
      body,
      headers,
      ...(auth ? { auth: relayedAuth(auth) } : {}),
      ...(session ? { session } : {}),
    }
    const heard = await this.redis.publish(this.#calls(owner), JSON.stringify(call))
    if (!heard) {
      this.#pending.get(id)?.({ id, status: 0, contentType: null, body: '' })
      await answered
      this.logger.info('a call carried the handle of a replica that is gone', { owner })
      return false
    }
    this.logger.debug('relayed a call to the replica holding its handle', { to: owner })
    const answer = await answered
    if (!answer) {
      const message = (body as { id?: unknown }).id
      res.writeHead(504, { 'content-type': 'application/json' })
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: message ?? null,
          error: { code: -32001, message: 'The replica holding this handle did not answer in time' },
        }),
      )
      return true
    }
    res.writeHead(answer.status, answer.contentType ? { 'content-type': answer.contentType } : {})
    res.end(answer.body)
    return true
  }
}

/**
 * The verified credential as the owner needs it. Under OAuth the access token is for this server
 * only and never reaches a tool, so it does not travel (a placeholder marks the request as
 * authenticated); without OAuth the bearer token is what a tool may act with, so it does.
 */
function relayedAuth(auth: AuthInfo): AuthInfo {
  const verified = typeof (auth.extra as { issuer?: unknown } | undefined)?.issuer === 'string'
  return verified ? { ...auth, token: 'relayed' } : auth
}
