import { z } from 'zod'
import {
  type AnyTool,
  type HandleBinding,
  type HandleKindSpec,
  type SessionAccess,
  shapeOf,
} from './define.js'
import { ToolError } from './errors.js'
import type { Runtime } from './instance.js'
import { nodeCrypto } from './lazy-crypto.js'

// Explicit state handles (SEP-2567). A 2026-07-28 request belongs to no connection, so state that
// spans calls (a browser context, a transaction) travels in a handle the server mints and the
// model passes back as an ordinary tool argument. This module mints them, resolves them on each
// call, expires them when idle and caps them per subject. The state itself stays with the server
// (keyed by the handle's `key`); core only says when it begins and ends.
//
// A handle reads `<kind>.<replica>.<id>.<mac>`: the kind (`session`), the process that holds the
// state (12 hex digits; with --redis-url the replica a call is relayed to), 128 random bits, and
// an HMAC-SHA256 (truncated to 128 bits) of the rest under a key derived from --state-secret, or
// drawn at random per process. Unguessable by the id, unforgeable by the MAC: a replica that
// shares the secret refuses a made-up handle before relaying it anywhere.

const TOKEN = /^([a-z][a-z0-9_]{0,31})\.([0-9a-f]{12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{22})$/

/** Handles of one kind one subject keeps (as many as 2025-era sessions one client keeps). */
const DEFAULT_MAX_PER_SUBJECT = 32
/** Handles of one kind a process keeps, all subjects together (as many as 2025-era sessions). */
const DEFAULT_MAX_TOTAL = 1024

/** A parsed handle (its MAC not yet checked). */
export interface ParsedHandle {
  kind: string
  replica: string
  id: string
  mac: string
}

/** Splits a handle into its parts; `undefined` when it is not shaped like one. */
export function parseHandle(token: string): ParsedHandle | undefined {
  const match = TOKEN.exec(token)
  if (!match) return undefined
  const [, kind, replica, id, mac] = match as unknown as [string, string, string, string, string]
  return { kind, replica, id, mac }
}

interface Entry {
  kind: string
  id: string
  token: string
  /** Who opened it: the OAuth subject, or `''` without OAuth (every caller is the same one). */
  subject: string
  lastSeen: number
  /** When it was last used, in this registry's order of uses (times tie within a millisecond). */
  lastUse: number
  /** Calls using it right now: a busy handle neither expires nor gives way to a new one. */
  active: number
}

/** The handles of one process. Made on the first stateful call (a start never pays for it). */
export class HandleRegistry {
  /** This process's id: the `<replica>` of the handles it mints. */
  readonly replica: string
  readonly #key: Uint8Array
  readonly #entries = new Map<string, Entry>()
  /** Counts uses (mint, the start and end of a call): the least recently used is the lowest. */
  #uses = 0
  readonly #sweep: NodeJS.Timeout
  readonly #idleMs: number

  constructor(
    private readonly runtime: Runtime<unknown, unknown>,
    options: { replica?: string; now?: () => number } = {},
  ) {
    const crypto = nodeCrypto()
    this.replica = options.replica ?? crypto.randomBytes(6).toString('hex')
    const secret = runtime.config.stateSecret
    // Derived from the shared secret with its own label, so a requestState key and a handle key
    // are never the same key.
    this.#key = secret
      ? new Uint8Array(crypto.hkdfSync('sha256', secret, 'keel-mcp', 'state handles v1', 32))
      : new Uint8Array(crypto.randomBytes(32))
    this.#idleMs = runtime.config.sessionIdleMs
    this.#sweep = setInterval(() => this.sweep(), Math.max(1000, Math.min(60_000, this.#idleMs / 4)))
    this.#sweep.unref()
    // With metrics on, from the first stateful call (when the registry is made) on.
    runtime.operations?.observer.gauge(
      'mcp_handles',
      'Open state handles (2026-07-28) in this process.',
      () => this.size,
    )
  }

  #mac(kind: string, replica: string, id: string): string {
    return nodeCrypto()
      .createHmac('sha256', this.#key)
      .update(`${kind}.${replica}.${id}`)
      .digest()
      .subarray(0, 16)
      .toString('base64url')
  }

  /** Whether a handle's MAC is this process's key's (constant time). */
  authentic(parsed: ParsedHandle): boolean {
    const expected = Buffer.from(this.#mac(parsed.kind, parsed.replica, parsed.id))
    const given = Buffer.from(parsed.mac)
    return expected.length === given.length && nodeCrypto().timingSafeEqual(expected, given)
  }

  #spec(kind: string): HandleKindSpec<unknown> {
    const spec = this.runtime.spec.handles?.[kind]
    if (!spec) throw new Error(`core: no handle kind "${kind}" is declared in the server's spec`)
    return spec as HandleKindSpec<unknown>
  }

  #limit(value: number | ((deps: unknown) => number) | undefined, fallback: number): number {
    return typeof value === 'function' ? value(this.runtime.deps) : (value ?? fallback)
  }

  /** Mints a new handle of `kind` for `subject`, making room under the subject's cap. */
  mint(kind: string, subject: string): Entry {
    const spec = this.#spec(kind)
    const hint = `Wait for a call to finish, or end one you no longer need with ${spec.closer ?? spec.opener}.`
    const caps: Array<[(entry: Entry) => boolean, number, string]> = [
      [
        (entry) => entry.subject === subject,
        this.#limit(spec.maxPerSubject, DEFAULT_MAX_PER_SUBJECT),
        'of this caller',
      ],
      [() => true, this.#limit(spec.maxTotal, DEFAULT_MAX_TOTAL), 'of this server'],
    ]
    // Abandoned handles never lock anyone out: the least recently used idle one gives way, first
    // the caller's own (at its cap), then anyone's (at the process's cap).
    for (const [which, cap, whose] of caps) {
      const open = [...this.#entries.values()].filter((entry) => entry.kind === kind && which(entry))
      if (open.length < cap) continue
      const victim = open.filter((entry) => entry.active === 0).sort((a, b) => a.lastUse - b.lastUse)[0]
      if (!victim)
        throw new ToolError('rate_limited', `All ${cap} open ${kind} handles ${whose} are in use`, { hint })
      this.runtime.logger.debug('a handle gave way: at the cap', { kind, cap, whose })
      void this.#end(victim, 'evicted')
    }
    const id = nodeCrypto().randomBytes(16).toString('base64url')
    const token = `${kind}.${this.replica}.${id}.${this.#mac(kind, this.replica, id)}`
    const entry: Entry = { kind, id, token, subject, lastSeen: Date.now(), lastUse: ++this.#uses, active: 0 }
    this.#entries.set(id, entry)
    return entry
  }

  /**
   * The live entry a presented handle names, for `subject`; a tool error that says what to do
   * when it is not shaped like a handle, forged, another process's, gone, or another subject's.
   */
  resolve(kind: string, token: string, subject: string): Entry {
    const spec = this.#spec(kind)
    const again = `Call ${spec.opener} to start a new one and pass the handle it returns.`
    const parsed = parseHandle(token)
    if (!parsed || parsed.kind !== kind)
      throw new ToolError(
        'invalid_argument',
        `${kind} is not a ${kind} handle: ${JSON.stringify(short(token))}`,
        {
          hint: `Pass the handle exactly as ${spec.opener} returned it, or leave ${kind} out.`,
        },
      )
    // Another process's handle (one that stopped, or a replica that is gone: a live replica's
    // handles are relayed to it before they get here) cannot be checked without a shared key,
    // and what it held is gone either way.
    if (parsed.replica !== this.replica)
      throw new ToolError(
        'unavailable',
        `The ${kind} handle belongs to a server process that is no longer running; what it held is gone`,
        { hint: again },
      )
    if (!this.authentic(parsed))
      throw new ToolError('invalid_argument', `The ${kind} handle was not issued by this server`, {
        hint: `It was altered or made up. ${again}`,
      })
    const entry = this.#entries.get(parsed.id)
    if (!entry)
      throw new ToolError(
        'not_found',
        `The ${kind} handle has ended (closed, or idle longer than ${Math.round(this.#idleMs / 1000)} s)`,
        { hint: again },
      )
    if (entry.subject !== subject)
      throw new ToolError('permission_denied', `The ${kind} handle belongs to another caller`, {
        hint: `${again} Handles are bound to the user who opened them.`,
      })
    return entry
  }

  /** Marks a handle in use for the length of a call; the returned function ends that. */
  hold(entry: Entry): () => void {
    entry.active++
    entry.lastSeen = Date.now()
    entry.lastUse = ++this.#uses
    let released = false
    return () => {
      if (released) return
      released = true
      entry.active--
      entry.lastSeen = Date.now()
      entry.lastUse = ++this.#uses
    }
  }

  /** Ends a handle: it is forgotten and the server frees what it held. */
  async close(entry: Entry): Promise<void> {
    await this.#end(entry, 'closed')
  }

  #end(entry: Entry, why: string): Promise<void> {
    if (this.#entries.get(entry.id) !== entry) return Promise.resolve()
    this.#entries.delete(entry.id)
    this.runtime.logger.debug('handle ended', { kind: entry.kind, why })
    const failed = (error: unknown) => this.runtime.logger.warn('freeing a handle failed', { error })
    try {
      // Started at once: the state is on its way out before the next call can see it.
      return Promise.resolve(this.#spec(entry.kind).close(keyOf(entry), this.runtime.deps)).catch(failed)
    } catch (error) {
      failed(error)
      return Promise.resolve()
    }
  }

  /** Ends the handles idle longer than the idle time. */
  sweep(now = Date.now()): void {
    for (const entry of [...this.#entries.values()]) {
      if (entry.active === 0 && now - entry.lastSeen > this.#idleMs) void this.#end(entry, 'idle')
    }
  }

  /** Open handles (health and tests). */
  get size(): number {
    return this.#entries.size
  }

  /** Stops the sweep (the state itself is freed by the server's `dispose`). */
  stop(): void {
    clearInterval(this.#sweep)
  }
}

function short(token: string): string {
  return token.length > 80 ? `${token.slice(0, 77)}...` : token
}

/** The key the server keeps a handle's state under (never the handle itself: that is the secret). */
function keyOf(entry: Entry): string {
  return `handle:${entry.id}`
}

const registries = new WeakMap<Runtime<unknown, unknown>, HandleRegistry>()

/** The process's handle registry, made on first use. */
export function handlesOf(runtime: Runtime<unknown, unknown>): HandleRegistry {
  let registry = registries.get(runtime)
  if (!registry) {
    registry = new HandleRegistry(runtime)
    registries.set(runtime, registry)
  }
  return registry
}

/** Stops the registry's sweep, if one was made. */
export function closeHandles(runtime: Runtime<unknown, unknown>): void {
  registries.get(runtime)?.stop()
}

/** What a call needs to bind its handle. */
export interface HandleCall {
  args: Record<string, unknown>
  session: SessionAccess
  subject: string | undefined
}

/**
 * Binds a stateful call to its state: the handle passed as the kind's argument; else, on a
 * connection (stdio, a 2025-era session), the connection's own state, so those clients need no
 * handle; else, on a lone request, a new handle where the tool opens state — and a tool error
 * naming the tool that does where it does not.
 */
export function bindHandle(
  runtime: Runtime<unknown, unknown>,
  tool: AnyTool,
  call: HandleCall,
): HandleBinding | undefined {
  const declared = tool.handle
  if (!declared) return undefined
  const kind = declared.kind
  const spec = runtime.spec.handles?.[kind] as HandleKindSpec<unknown> | undefined
  if (!spec)
    throw new Error(`core: tool ${tool.name} uses handle kind "${kind}", which the server does not declare`)
  const subject = call.subject ?? ''
  const passed = call.args[kind]
  const registry = (): HandleRegistry => handlesOf(runtime)
  const bound = (entry: Entry, minted: boolean): HandleBinding => {
    const release = registry().hold(entry)
    return {
      kind,
      key: keyOf(entry),
      token: entry.token,
      minted,
      release,
      close: async () => {
        release()
        await registry().close(entry)
      },
    }
  }
  if (declared.opens === 'always') return bound(registry().mint(kind, subject), true)
  if (typeof passed === 'string' && passed !== '')
    return bound(registry().resolve(kind, passed, subject), false)
  const connection = call.session.id
  if (connection !== undefined) {
    return {
      kind,
      key: connection,
      token: undefined,
      minted: false,
      release: () => {},
      close: () => Promise.resolve(spec.close(connection, runtime.deps)),
    }
  }
  if (declared.opens === 'when-missing') return bound(registry().mint(kind, subject), true)
  throw new ToolError(
    'invalid_argument',
    `${tool.name} needs ${kind}: this request belongs to no connection`,
    {
      hint: `Pass the ${kind} handle ${spec.opener} returned (call ${spec.opener} first if you have none).`,
    },
  )
}

/**
 * After the call: a handle minted for a call that failed is ended (the model never saw it); a
 * minted handle is added to the result — in `structuredContent` under the kind's name and as a
 * line of text the model reads.
 */
export async function settleHandle(
  binding: HandleBinding | undefined,
  result: Record<string, unknown>,
  spec: HandleKindSpec<unknown> | undefined,
): Promise<Record<string, unknown>> {
  if (!binding) return result
  binding.release()
  if (result.isError === true) {
    if (binding.minted) await binding.close()
    return result
  }
  if (binding.token === undefined) return result
  const structured = result.structuredContent as Record<string, unknown> | undefined
  const withToken = structured
    ? { ...result, structuredContent: { ...structured, [binding.kind]: binding.token } }
    : result
  if (!binding.minted) return withToken
  const line =
    spec?.mintedText?.(binding.token) ??
    `${binding.kind}: ${binding.token} (pass ${binding.kind}="${binding.token}" on every later call)`
  const content = (withToken.content as Array<{ type: string; text?: string }> | undefined) ?? []
  const first = content.findIndex((block) => block.type === 'text')
  const next =
    first === -1
      ? [{ type: 'text', text: line }, ...content]
      : content.map((block, index) =>
          index === first ? { ...block, text: `${line}\n${block.text ?? ''}` } : block,
        )
  return { ...withToken, content: next }
}

/** Checks at start that every stateful tool takes its kind's argument (else no handle could reach it). */
export function checkHandleTools(spec: { handles?: Record<string, unknown> }, tools: AnyTool[]): void {
  for (const tool of tools) {
    const kind = tool.handle?.kind
    if (kind === undefined) continue
    if (!spec.handles?.[kind])
      throw new Error(`core: tool ${tool.name} uses undeclared handle kind "${kind}"`)
    if (tool.handle?.opens !== 'always' && !(kind in shapeOf(tool.input)))
      throw new Error(`core: stateful tool ${tool.name} must take the "${kind}" argument (handleArgument)`)
  }
}

/**
 * The argument a stateful tool takes its handle in (name it after the kind: `session`). Bounded,
 * so a made-up value is refused before anything looks at it.
 */
export function handleArgument(description: string) {
  return z.string().max(200).optional().describe(description)
}

/**
 * Where the state of a `tools/call` message lives, for routing between replicas: `{ owner }` when
 * it carries a handle another replica minted; `connection` when it is a stateful call without a
 * handle (bound to its connection's own state, wherever that is kept); `undefined` when this
 * replica serves it either way (not stateful, opening new state, or this replica's handle).
 */
export function stateRoute(
  runtime: Runtime<unknown, unknown>,
  message: unknown,
): { owner: string } | 'connection' | undefined {
  const request = message as { method?: unknown; params?: { name?: unknown; arguments?: unknown } } | null
  if (typeof request !== 'object' || request === null || request.method !== 'tools/call') return undefined
  const name = request.params?.name
  const args = request.params?.arguments as Record<string, unknown> | undefined
  const tool = runtime.tools.find((candidate) => candidate.name === name)
  const kind = tool?.handle?.kind
  if (!kind || tool?.handle?.opens === 'always') return undefined
  const token = args?.[kind]
  if (token === undefined || token === '') return 'connection'
  const parsed = typeof token === 'string' ? parseHandle(token) : undefined
  if (!parsed || parsed.kind !== kind) return undefined
  const registry = handlesOf(runtime)
  if (parsed.replica === registry.replica) return undefined
  // With a shared secret a made-up handle is refused here, never relayed.
  if (runtime.config.stateSecret && !registry.authentic(parsed)) return undefined
  return { owner: parsed.replica }
}
