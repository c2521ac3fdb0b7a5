import { UriTemplate } from '@modelcontextprotocol/server'
import type { ClientAccess, HandlerContext, ServerSpec, Unsubscribe } from './define.js'
import { ToolError } from './errors.js'
import type { Runtime } from './instance.js'

// 2026-07-28 change streams (`subscriptions/listen`, SEP-2575). The SDK serves the stream itself
// (ack, SSE on HTTP, stamping on stdio) and delivers what it is told has changed; nothing tells it,
// unless the resources a stream names are watched. This module does that: before the SDK sees a
// listen request, the front door (http/streams.ts, stdio through run.ts) asks {@link ListenWatches} to
// watch each URI through the same `subscribe` hook the 2025 `resources/subscribe` path calls, and
// narrows the request to the URIs it could watch — so the acknowledged (`honored`) set is what
// will really be delivered. Each URI is watched once per process however many streams name it;
// the watch ends with the last stream. A change is handed to `emit`: the SDK's event bus on HTTP
// (Redis pub/sub across replicas), the pinned instance's `sendResourceUpdated` on stdio.

/** A `subscribe` hook, bound to the resource or template that declares it. */
type SubscribeHook<D> = (
  uri: URL,
  notify: () => void,
  context: HandlerContext<D>,
) => Unsubscribe | Promise<Unsubscribe>

/**
 * The `subscribe` hook of the resource or template that serves `uri`, or `undefined` when no
 * subscribable one does. Shared by `resources/subscribe` and `subscriptions/listen`.
 */
export function subscriptionHook<D>(spec: ServerSpec<D, any>): (uri: string) => SubscribeHook<D> | undefined {
  const resources = spec.resources ?? []
  const matchers = (spec.resourceTemplates ?? [])
    .filter((template) => template.subscribe)
    .map((template) => ({ template, matcher: new UriTemplate(template.uriTemplate) }))
  return (uri) => {
    const fixed = resources.find((resource) => resource.uri === uri && resource.subscribe)
    if (fixed?.subscribe) return fixed.subscribe.bind(fixed)
    const matched = matchers.find(({ matcher }) => matcher.match(uri))?.template
    return matched?.subscribe?.bind(matched)
  }
}

// A listen stream has no connection to ask the client anything on: configured roots apply (as on
// every 2026-07-28 request), and sampling or elicitation are refused.
const streamClient: ClientAccess = {
  info: undefined,
  capabilities: undefined,
  roots: async () => undefined,
  sample: async () => {
    throw new ToolError('unavailable', 'A change stream cannot ask the client for sampling')
  },
  elicit: async () => {
    throw new ToolError('unavailable', 'A change stream cannot ask the client for elicitation')
  },
}

interface Watch {
  streams: number
  /** Resolves with the disposer once the hook has answered; rejects when it refused. */
  ready: Promise<() => void>
}

/** The watches behind a process's open `subscriptions/listen` streams. */
export class ListenWatches<D, C> {
  readonly #watches = new Map<string, Watch>()
  readonly #hookFor: (uri: string) => SubscribeHook<D> | undefined

  constructor(
    private readonly runtime: Runtime<D, C>,
    private readonly emit: (uri: string) => void,
  ) {
    this.#hookFor = subscriptionHook(runtime.spec)
  }

  /** URIs watched right now (for tests and health). */
  get size(): number {
    return this.#watches.size
  }

  /**
   * Watches the URIs one listen stream asks for. Resolves with those being watched (a URI no
   * subscribable resource serves, or whose hook refused it — outside the allowed directories, over
   * a watch limit — is left out and logged) and `release`, to call once when the stream ends.
   */
  async open(uris: readonly string[]): Promise<{ watched: string[]; release: () => void }> {
    const unique = [...new Set(uris)]
    const outcomes = await Promise.all(unique.map((uri) => this.#acquire(uri)))
    const watched = unique.filter((_uri, index) => outcomes[index])
    let released = false
    return {
      watched,
      release: () => {
        if (released) return
        released = true
        for (const uri of watched) this.#release(uri)
      },
    }
  }

  async #acquire(uri: string): Promise<boolean> {
    let watch = this.#watches.get(uri)
    if (!watch) {
      const started = this.#start(uri)
      if (!started) return false
      watch = { streams: 0, ready: started }
      this.#watches.set(uri, watch)
    }
    watch.streams++
    try {
      await watch.ready
      return true
    } catch (error) {
      watch.streams--
      if (this.#watches.get(uri) === watch) this.#watches.delete(uri)
      const reason = ToolError.is(error) ? `${error.kind}: ${error.message}` : (error as Error).message
      this.runtime.logger.info('a change stream cannot watch a resource', { uri, reason })
      return false
    }
  }

  #start(uri: string): Promise<() => void> | undefined {
    const hook = this.#hookFor(uri)
    if (!hook) return undefined
    let url: URL
    try {
      url = new URL(uri)
    } catch {
      return undefined
    }
    const context: HandlerContext<D> = {
      deps: this.runtime.deps,
      signal: this.runtime.shutdownSignal,
      log: this.runtime.logger,
      client: streamClient,
    }
    return Promise.resolve()
      .then(() => hook(url, () => this.emit(uri), context))
      .then((dispose) => dispose ?? (() => {}))
  }

  #release(uri: string): void {
    const watch = this.#watches.get(uri)
    if (!watch) return
    watch.streams--
    if (watch.streams > 0) return
    this.#watches.delete(uri)
    void watch.ready.then((dispose) => dispose()).catch(() => {})
  }

  /** Ends every watch (at shutdown). */
  close(): void {
    for (const [uri, watch] of this.#watches) {
      this.#watches.delete(uri)
      void watch.ready.then((dispose) => dispose()).catch(() => {})
    }
  }
}

/** The URIs a `subscriptions/listen` request asks to watch, or `undefined` for any other message. */
export function listenedUris(message: unknown): string[] | undefined {
  const request = message as {
    method?: unknown
    params?: { notifications?: { resourceSubscriptions?: unknown } }
  }
  if (request?.method !== 'subscriptions/listen') return undefined
  const uris = request.params?.notifications?.resourceSubscriptions
  return Array.isArray(uris) ? uris.filter((uri): uri is string => typeof uri === 'string') : []
}

/**
 * The listen request with its resource subscriptions narrowed to `watched`, so the SDK
 * acknowledges only what will be delivered. Anything else in the request is kept as it came.
 */
export function narrowListen<T>(message: T, watched: string[]): T {
  const request = message as { params: { notifications: Record<string, unknown> } }
  const { resourceSubscriptions: _dropped, ...rest } = request.params.notifications
  return {
    ...message,
    params: {
      ...request.params,
      notifications: { ...rest, ...(watched.length ? { resourceSubscriptions: watched } : {}) },
    },
  }
}

/**
 * Prepares a message on its way to the SDK: a `subscriptions/listen` request gets its URIs watched
 * and narrowed (see {@link ListenWatches.open}); `release` is handed what must run when its stream
 * ends. Any other message passes unchanged.
 */
export async function prepareListen<T>(
  watches: ListenWatches<any, any> | undefined,
  message: T,
  onStreamEnd: (release: () => void) => void,
): Promise<T> {
  const uris = watches ? listenedUris(message) : undefined
  if (!watches || !uris?.length) return message
  const { watched, release } = await watches.open(uris)
  onStreamEnd(release)
  return narrowListen(message, watched)
}

/**
 * Change streams on one stdio connection: the line transport hands every inbound message to
 * `prepare` (a listen request is watched and narrowed; a cancellation of it releases its watches),
 * and changes go out through the connection's 2026-07-28 instance, whose outbound notifications
 * the SDK stamps onto the streams that asked for them.
 */
export function stdioChangeStreams<D, C>(runtime: Runtime<D, C>) {
  let modern:
    | { isConnected(): boolean; server: { sendResourceUpdated(params: { uri: string }): Promise<void> } }
    | undefined
  const subscribable = [...(runtime.spec.resources ?? []), ...(runtime.spec.resourceTemplates ?? [])].some(
    (resource) => resource.subscribe,
  )
  const watches = subscribable
    ? new ListenWatches(runtime, (uri) => {
        if (modern?.isConnected()) void modern.server.sendResourceUpdated({ uri }).catch(() => {})
      })
    : undefined
  const streams = new Map<string | number, () => void>()
  return {
    /** Remembers the instance serving the 2026-07-28 era on this connection. */
    attach(instance: NonNullable<typeof modern>, era: string | undefined) {
      if (era === 'modern') modern = instance
    },
    prepare(message: unknown): Promise<unknown> | undefined {
      const note = message as { method?: string; params?: { requestId?: string | number } }
      if (note.method === 'notifications/cancelled' && note.params?.requestId !== undefined) {
        streams.get(note.params.requestId)?.()
        streams.delete(note.params.requestId)
        return undefined
      }
      const id = (message as { id?: string | number }).id
      if (!watches || id === undefined || !listenedUris(message)?.length) return undefined
      return prepareListen(watches, message, (release) => {
        streams.get(id)?.()
        streams.set(id, release)
      })
    },
    close() {
      streams.clear()
      watches?.close()
    },
  }
}
