import { createRequire } from 'node:module'

// node:crypto and the fifteen internal modules behind it take about 3 ms to load, a share of every
// cold start worth keeping (a server lists its tools in about 120 ms). Nothing a server does before
// its first call needs them, so code that runs at start reaches node:crypto through this and loads
// it on first use. (The V8 code-cache launcher keys its cache without it for the same reason.)

let loaded: typeof import('node:crypto') | undefined

/** `node:crypto`, loaded on first call. */
export function nodeCrypto(): typeof import('node:crypto') {
  loaded ??= createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto')
  return loaded
}
