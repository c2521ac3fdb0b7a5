import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  createRequestStateCodec,
  inputRequired,
  inputResponse,
  type McpServer,
} from '@modelcontextprotocol/server'
import type { AskOptions, ClientAccess } from './define.js'
import { ToolError } from './errors.js'
import type { InstanceState } from './instance.js'
import { nodeCrypto } from './lazy-crypto.js'
import type { Logger } from './logger.js'

// What a tool can ask of the client mid-call (roots, sampling, elicitation), in both eras.

/** A connection's client access, and its view bound to one incoming request. */
export interface ConnectionClientAccess extends ClientAccess {
  /**
   * The same access, with every request to the client sent as related to the incoming request
   * `requestId`: on Streamable HTTP it travels on that request's own response stream, which the
   * client is reading, not on the standalone GET stream, which a client may not have opened (and
   * which, behind a load balancer, another replica may hold).
   */
  forRequest(requestId: string | number): ClientAccess
}

/** The client access of a 2025-era connection: requests go to the client and are awaited. */
export function createClientAccess(
  server: McpServer['server'],
  state: InstanceState,
  logger: Logger,
): ConnectionClientAccess {
  const accessFor = (relatedRequestId: string | number | undefined): ClientAccess => {
    const options = relatedRequestId === undefined ? undefined : { relatedRequestId }
    return {
      get info() {
        const version = server.getClientVersion()
        return version ? { name: version.name, version: version.version } : undefined
      },
      get capabilities() {
        return server.getClientCapabilities() as Record<string, unknown> | undefined
      },
      roots() {
        if (!server.getClientCapabilities()?.roots) return Promise.resolve(undefined)
        state.roots ??= server.listRoots(undefined, options).then(
          (result) =>
            result.roots.map((root) => ({ uri: root.uri, ...(root.name ? { name: root.name } : {}) })),
          (error: unknown) => {
            state.roots = undefined
            logger.debug('the client did not answer roots/list', { error: (error as Error).message })
            return undefined
          },
        )
        return state.roots
      },
      // MCP: no request for a capability the client did not declare. The SDK does not check
      // sampling, and a stateless request has no declared capabilities and no way back for an
      // answer: without these checks such a call waits for the tool timeout instead of failing.
      sample: async (params) => {
        if (!server.getClientCapabilities()?.sampling) throw notOffered('sampling')
        return server.createMessage(params as never, options)
      },
      elicit: async (params) => {
        if (!server.getClientCapabilities()?.elicitation) throw notOffered('elicitation')
        return server.elicitInput(params as never, options)
      },
    }
  }
  return Object.assign(accessFor(undefined), { forRequest: accessFor })
}

function notOffered(capability: 'sampling' | 'elicitation'): ToolError {
  return new ToolError(
    'unavailable',
    `The client does not offer ${capability} (it did not declare the capability)`,
  )
}

/**
 * Thrown inside a 2026-07-28 tool call when the tool needs an answer from the client: the call
 * ends with an `input_required` result carrying the requests, the client answers and retries,
 * and the tool runs again from the start with the answers available.
 */
export class InputNeeded extends Error {
  constructor(
    readonly requests: Record<string, ReturnType<typeof inputRequired.elicit>>,
    readonly answers: Record<string, unknown>,
  ) {
    super('input required')
  }
}

/**
 * Earlier rounds' answers ride along in `requestState` (the client only echoes the latest round's
 * `inputResponses`). The state is HMAC-signed so it cannot be altered; it is not secret, and holds
 * nothing the client did not send. The key comes from `--state-secret` (shared by every replica
 * behind a load balancer, so a retry may land on any of them) or is drawn at random per process.
 */
let stateCodec: ReturnType<typeof createRequestStateCodec<{ answers: Record<string, unknown> }>> | undefined
let stateKey: Uint8Array | undefined
export function requestStateCodec() {
  stateCodec ??= createRequestStateCodec<{ answers: Record<string, unknown> }>({
    key: stateKey ?? nodeCrypto().randomBytes(32),
    ttlSeconds: 900,
  })
  return stateCodec
}

/**
 * Sets the process's `requestState` signing key from a shared secret (at least 32 characters).
 * The key is derived (HKDF-SHA256) so the secret itself never signs anything directly.
 */
export function useStateSecret(secret: string): void {
  if (secret.length < 32) throw new RangeError('the state secret must be at least 32 characters')
  stateKey = new Uint8Array(nodeCrypto().hkdfSync('sha256', secret, 'keel-mcp', 'requestState v1', 32))
  stateCodec = undefined
}

/** True when the instance serves the 2026-07-28 (or later) revision: no server-to-client pushes. */
export function servesModernEra(server: McpServer['server']): boolean {
  const version = server.getNegotiatedProtocolVersion()
  return version !== undefined && version >= '2026-07-28'
}

/**
 * The client access of one 2026-07-28 tool call. Sampling and elicitation become embedded
 * requests of an `input_required` result; on the retry the tool runs again from the start and
 * each question finds its answer by key (the n-th question of the run by default). Tools therefore
 * ask before they act: everything before the question runs again on the retry. Every
 * `input_required` result carries a signed `requestState` holding the answers to the questions
 * asked so far, and only those: keys the tool never asked for are not carried.
 */
export function modernClientAccess(
  base: ClientAccess,
  mcpReq: {
    envelope?: Record<string, unknown>
    inputResponses?: Record<string, unknown>
    requestState?: () => { answers?: Record<string, unknown> } | undefined
  },
): ClientAccess {
  const capabilities = mcpReq.envelope?.[CLIENT_CAPABILITIES_META_KEY] as Record<string, unknown> | undefined
  const answers: Record<string, unknown> = { ...mcpReq.requestState?.()?.answers, ...mcpReq.inputResponses }
  const carried: Record<string, unknown> = {}
  const used = new Set<string>()
  let asked = 0
  const keyFor = (kind: 'sample' | 'elicit', options: AskOptions | undefined): string => {
    const key = options?.key ?? `keel_${kind}_${asked}`
    asked++
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(key)) {
      throw new ToolError('internal', `invalid question key "${key.slice(0, 80)}"`)
    }
    if (used.has(key)) throw new ToolError('internal', `question key "${key}" used twice in one call`)
    used.add(key)
    return key
  }
  return {
    // The request's own identity (its envelope's client info), else the connection's.
    get info() {
      const own = mcpReq.envelope?.[CLIENT_INFO_META_KEY] as { name?: unknown; version?: unknown } | undefined
      return typeof own?.name === 'string' && typeof own.version === 'string'
        ? { name: own.name, version: own.version }
        : base.info
    },
    capabilities,
    // Roots are not offered to servers on 2026-07-28 requests (SEP-2577): the configured roots apply.
    roots: async () => undefined,
    // A question for a capability the request did not declare still goes out as an embedded
    // request: the SDK refuses it with -32021 (missing client capability), as 2026-07-28 requires.
    async sample(params, options) {
      const key = keyFor('sample', options)
      const view = inputResponse(answers, key)
      if (view.kind === 'sampling') {
        carried[key] = answers[key]
        return view.result
      }
      throw new InputNeeded({ [key]: inputRequired.createMessage(params as never) }, carried)
    },
    async elicit(params, options) {
      const key = keyFor('elicit', options)
      const view = inputResponse(answers, key)
      if (view.kind === 'elicit') {
        carried[key] = answers[key]
        return { action: view.action, ...(view.content ? { content: view.content } : {}) }
      }
      throw new InputNeeded({ [key]: inputRequired.elicit(params as never) }, carried)
    },
  }
}
