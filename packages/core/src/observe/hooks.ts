// What the rest of core calls to report what it does. Until an observer is installed (one of the
// operations flags is set) every hook is a no-op behind one `undefined` check: nothing of observe/
// loads, and a call pays nothing for it.

/** A JSON-RPC request being served, from receipt to its response. */
export interface RequestObservation {
  /** Runs `work` inside this request's context (its span is the parent of what `work` starts). */
  run<T>(work: () => T): T
  /**
   * The response went out; `errorCode` when it was a JSON-RPC error. `sent` is the result the
   * response carried and the bytes of its JSON, when the transport serialized it on its own (stdio):
   * the size of a call's result for the audit log, measured once instead of twice.
   */
  end(errorCode?: number, sent?: SentResult): void
}

/** A response's result and the length of its JSON in bytes, as the transport wrote it. */
export interface SentResult {
  result: unknown
  bytes: number
}

/** What a tool call reports at its start. */
export interface CallStart {
  tool: string
  readOnly: boolean
  /** `stdio`, `http` or `memory` (in-process test connections). */
  transport: 'stdio' | 'http' | 'memory'
  session: string | undefined
  subject: string | undefined
  /** 2026-07-28 (`modern`) or 2025-era (`legacy`). */
  era: 'modern' | 'legacy'
  /**
   * With {@link ObserverHooks.sizes}: the arguments as the client sent them, whose size the audit
   * line measures when it is made (with the other lines of its write, off the call's path).
   */
  sent?: unknown
  /** Argument values the tool marked safe to record (audit log). */
  safeArguments: Record<string, unknown> | undefined
}

export interface CallEnd {
  /** `ok`, `error`, `cancelled`, `timeout`, `input_required`, `rate_limited`. */
  outcome: string
  /** The ToolError kind when the call failed. */
  errorKind?: string
  /**
   * The result's size in bytes, or (with {@link ObserverHooks.sizes}) the result itself in
   * `result`: its size is then taken from the bytes the transport writes for it (see
   * {@link RequestObservation.end}), or measured when the audit line is written. 0 without sizes.
   */
  resultBytes?: number
  result?: unknown
  /**
   * The state handle the call was bound to (a 2026-07-28 client's, carried or minted by the call):
   * recorded only as a hash, like a session id, so that one session's calls can be told apart.
   */
  handle?: string
}

/** One tool call, from validation to its result. */
export interface CallObservation {
  run<T>(work: () => Promise<T>): Promise<T>
  end(result: CallEnd): void
}

/** A rate-limit decision for one call. */
export interface Admission {
  allowed: boolean
  retryAfterMs: number
  budget?: string
}

export interface ObserverHooks {
  /**
   * Whether calls report their argument and result sizes (the audit log records them): without it
   * a call keeps neither (no `sent`, and `resultBytes` is 0).
   */
  readonly sizes: boolean
  request(info: {
    method: string
    id: string | number
    transport: 'stdio' | 'http'
    params: unknown
  }): RequestObservation
  call(start: CallStart): CallObservation
  /**
   * Takes a token from the client's budgets; undefined when no limit is set. A budget held in
   * process answers at once (no promise); a shared one (Redis) answers with a promise.
   */
  admit?(client: string, readOnly: boolean): Admission | Promise<Admission>
  upstream<T>(
    system: string,
    operation: string,
    work: () => Promise<T>,
    attributes?: Record<string, string | number>,
  ): Promise<T>
}

let active: ObserverHooks | undefined

/** The installed observer, or undefined (operations features off). */
export function observer(): ObserverHooks | undefined {
  return active
}

export function installObserver(hooks: ObserverHooks | undefined): void {
  active = hooks
}

/**
 * Reports one call to an upstream system (a database query, an HTTP API request, a browser
 * action) as a child span of the tool call it serves, and in the upstream metrics. Servers wrap
 * their upstream calls with it; with observability off it is `work()`.
 */
export function traceUpstream<T>(
  system: string,
  operation: string,
  work: () => Promise<T>,
  attributes?: Record<string, string | number>,
): Promise<T> {
  return active ? active.upstream(system, operation, work, attributes) : work()
}
