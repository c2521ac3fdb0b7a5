import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { isRecord } from './jsonrpc.js'

// Tool schemas as listed, kept between starts of a bin.
//
// Converting every tool's zod schemas to JSON Schema is most of what a server does between
// answering `initialize` and answering the first `tools/list` (about 10 ms for 20 tools, on every
// start). The conversion's result depends only on the code and on the configuration the tools were
// built from, so a bin keeps it next to its V8 code cache: the launcher (tools/bundle/launcher.cjs)
// names a directory only this user can write to and a key that changes with the bundle's content
// and the V8 version, and core adds a fingerprint of the configuration. A file that cannot be read
// or does not hold what is expected is ignored and written again; KEEL_COMPILE_CACHE=0 turns both
// caches off. Without the launcher (tests, a server embedded in another program) nothing is kept.

/** What the launcher publishes when it has a private cache directory. */
interface LauncherCache {
  directory: string
  key: string
  /**
   * How far this process has served (see {@link noteServed}): its code cache holds the functions
   * of each stage it reached, and the launcher replaces a cache written by a process that got
   * less far (tools/bundle/launcher.cjs).
   */
  stage?: number
}

/** What a process has answered, in the order a client asks: `tools/list`, then a tool call. */
export const SERVED_STAGE = { toolsListed: 1, callAnswered: 2 } as const

let stageNoted = 0

/**
 * Tells the bin's launcher how far this process has served. A code cache written by a process
 * that never answered `tools/list`, or never a tool call, lacks the functions that answer them (V8
 * compiles them on first use), and every later start would compile them again: the launcher
 * replaces such a cache, once for each stage, at the exit of a process that got further.
 */
export function noteServed(stage: (typeof SERVED_STAGE)[keyof typeof SERVED_STAGE]): void {
  if (stage <= stageNoted) return
  stageNoted = stage
  const place = (globalThis as { __keelCache?: LauncherCache }).__keelCache
  if (place && typeof place === 'object') place.stage = stage
}

/** One tool's JSON Schemas, as `tools/list` gives them. */
export interface CachedSchemas {
  input: Record<string, unknown>
  output?: Record<string, unknown>
}

export interface SchemaCache {
  get(tool: string): CachedSchemas | undefined
  /** Remembers a tool's schemas; the file is written once the current turn of the event loop ends. */
  set(tool: string, schemas: CachedSchemas): void
}

function validEntry(value: unknown): value is CachedSchemas {
  return isRecord(value) && isRecord(value.input) && (value.output === undefined || isRecord(value.output))
}

/**
 * The fingerprint of what tool schemas may be built from: the server's name and version and its
 * parsed configuration, secrets left out (they are never written, not even hashed).
 */
export function configFingerprint(
  server: { name: string; version: string },
  config: unknown,
  secrets: readonly string[],
): string {
  const hidden = new Set(secrets)
  // Values JSON would write as {} or leave out are written as what they hold, so that two
  // configurations that differ only there never share a file.
  const text = JSON.stringify([server.name, server.version, config], (_key, value: unknown) => {
    if (typeof value === 'string') return hidden.has(value) ? '(secret)' : value
    if (value instanceof RegExp || typeof value === 'function') return String(value)
    if (value instanceof Set || value instanceof Map) return [value.constructor.name, ...value]
    return value
  })
  return hash64(text)
}

/**
 * 64 bits of two 32-bit FNV-1a hashes (different offset bases) in hex. Not cryptographic, and it
 * need not be: it only tells configurations apart, secrets are not in its input, and it spares the
 * start loading node:crypto (see lazy-crypto.ts).
 */
function hash64(text: string): string {
  let first = 0x811c9dc5
  let second = 0x01000193 ^ 0x5bd1e995
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    first = Math.imul(first ^ code, 0x01000193)
    second = Math.imul(second ^ code, 0x01000193) ^ (second >>> 15)
  }
  return (first >>> 0).toString(16).padStart(8, '0') + (second >>> 0).toString(16).padStart(8, '0')
}

/**
 * The schema cache for this process, or undefined when the launcher keeps no cache. `debug`
 * (KEEL_COMPILE_CACHE_DEBUG=1) reports on stderr whether the file was found.
 */
export function openSchemaCache(
  server: { name: string; version: string },
  config: unknown,
  secrets: readonly string[],
  debug = false,
): SchemaCache | undefined {
  const place = (globalThis as { __keelCache?: LauncherCache }).__keelCache
  if (!place || typeof place.directory !== 'string' || typeof place.key !== 'string') return undefined
  let fingerprint: string
  try {
    fingerprint = configFingerprint(server, config, secrets)
  } catch {
    // A configuration JSON cannot write (a BigInt, a cycle): no cache, never a failed start.
    return undefined
  }
  const file = join(place.directory, `${place.key}-${fingerprint}.tools.json`)
  const entries = new Map<string, CachedSchemas>()
  try {
    const stored: unknown = JSON.parse(readFileSync(file, 'utf8'))
    if (isRecord(stored))
      for (const [tool, value] of Object.entries(stored)) if (validEntry(value)) entries.set(tool, value)
  } catch {}
  if (debug) process.stderr.write(`keel schema cache: ${entries.size ? 'hit' : 'miss'}\n`)
  let pending = false
  let atExit = false
  const flush = () => {
    if (!pending) return
    pending = false
    try {
      const temporary = `${file}.${process.pid}.tmp`
      writeFileSync(temporary, JSON.stringify(Object.fromEntries(entries)), { mode: 0o600 })
      renameSync(temporary, file)
    } catch {}
  }
  return {
    get: (tool) => entries.get(tool),
    set(tool, schemas) {
      entries.set(tool, schemas)
      if (pending) return
      pending = true
      // After the answer that needed the schemas has been written, or at exit if that comes first.
      setImmediate(flush)
      if (!atExit) {
        atExit = true
        process.once('exit', flush)
      }
    },
  }
}
