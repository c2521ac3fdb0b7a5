import { BlockList, isIP } from 'node:net'
import { networkInterfaces } from 'node:os'

/** What the browser may reach. Built once from the command line. */
export interface PolicyOptions {
  /** When non-empty: the only origins any request may reach (private ones included). */
  allowedOrigins: string[]
  /** Origins never reached, whatever else allows them. */
  blockedOrigins: string[]
  allowPrivateNetwork: boolean
  allowFileUrls: boolean
}

/** A refused URL and why, in words the model can act on. */
export interface Refusal {
  reason: string
}

// Loopback, private, link-local, carrier-grade NAT, unique-local, multicast and unspecified
// ranges: a public page must never make the browser reach the machine or the intranet. Built on
// first use: the server starts (and lists its tools) without it.
let ranges: BlockList | undefined
function privateRanges(): BlockList {
  if (ranges) return ranges
  const built = new BlockList()
  for (const [network, prefix] of [
    ['0.0.0.0', 8],
    ['10.0.0.0', 8],
    ['100.64.0.0', 10],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16],
    ['172.16.0.0', 12],
    ['192.0.0.0', 24],
    ['192.168.0.0', 16],
    ['198.18.0.0', 15],
    ['224.0.0.0', 3],
  ] as const)
    built.addSubnet(network, prefix, 'ipv4')
  for (const [network, prefix] of [
    ['::', 128],
    ['::1', 128],
    ['fc00::', 7],
    ['fe80::', 10],
    ['fec0::', 10],
    ['ff00::', 8],
  ] as const)
    built.addSubnet(network, prefix, 'ipv6')
  ranges = built
  return built
}

/** The IPv4 address an IPv6 address embeds (mapped, compatible or NAT64), if any. */
function embeddedIpv4(address: string): string | undefined {
  const lower = address.toLowerCase()
  const dotted = /^(?:::ffff:|::|64:ff9b::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower)
  if (dotted) return dotted[1]
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower)
  if (hex) {
    const high = Number.parseInt(hex[1] ?? '0', 16)
    const low = Number.parseInt(hex[2] ?? '0', 16)
    return [high >> 8, high & 255, low >> 8, low & 255].join('.')
  }
  return undefined
}

/** True for loopback, private, link-local, unique-local and other non-public addresses. */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const family = isIP(bare)
  if (family === 4) return privateRanges().check(bare, 'ipv4')
  if (family === 6) {
    const v4 = embeddedIpv4(bare)
    if (v4) return privateRanges().check(v4, 'ipv4')
    return privateRanges().check(bare, 'ipv6')
  }
  return false
}

/** A host as the resolver and the rules see it: lower case, no brackets, no trailing dots. */
export function bareHost(host: string): string {
  return host
    .replace(/^\[|\]$/g, '')
    .replace(/\.+$/, '')
    .toLowerCase()
}

const LOOPBACK_LIKE = /^(127\.|0\.0\.0\.0$)/

let localAddresses: Set<string> | undefined
/** The addresses of this machine's interfaces (read once). */
function ownAddresses(): Set<string> {
  if (localAddresses) return localAddresses
  const found = new Set<string>()
  for (const entries of Object.values(networkInterfaces()))
    for (const entry of entries ?? []) found.add(canonicalAddress(entry.address, false))
  localAddresses = found
  return found
}

/**
 * The address a connection to `address` reaches, for comparing two spellings: IPv4-mapped IPv6 is
 * its IPv4 address, and every address of this machine (the loopback ranges, the unspecified
 * addresses 0.0.0.0 and ::, which Linux connects to the loopback, and the interfaces' own
 * addresses) is one and the same `this-machine`: a server listening on all of them answers on each.
 */
export function canonicalAddress(address: string, mergeOwn = true): string {
  const bare = address
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
    .toLowerCase()
  const v4 = isIP(bare) === 6 ? (embeddedIpv4(bare) ?? bare) : bare
  if (LOOPBACK_LIKE.test(v4) || v4 === '::1' || v4 === '::') return 'this-machine'
  if (mergeOwn && ownAddresses().has(v4)) return 'this-machine'
  return v4
}

/** `scheme://host:port` with the default port made explicit, or undefined for opaque URLs. */
function originKey(url: URL): string | undefined {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined
  const port = url.port || (url.protocol === 'https:' ? '443' : '80')
  return `${url.protocol}//${bareHost(url.hostname)}:${port}`
}

/**
 * One origin pattern from the command line: `https://example.com`, `http://127.0.0.1:8080`,
 * or a bare host (`example.com`, `*.example.com`: any scheme and port).
 */
export interface OriginPattern {
  source: string
  matches(url: URL): boolean
  /** The host it names (undefined for a `*.` wildcard) and its port (undefined: any port). */
  host?: string | undefined
  port?: number | undefined
}

export function parseOriginPattern(source: string): OriginPattern {
  const trimmed = source.trim()
  if (/^https?:\/\//i.test(trimmed)) {
    const url = new URL(trimmed)
    if (url.pathname !== '/' || url.search || url.hash || url.username || url.password)
      throw new Error(`"${source}" is not an origin (scheme://host[:port], nothing after)`)
    const key = originKey(url)
    return {
      source,
      matches: (candidate) => originKey(candidate) === key,
      host: bareHost(url.hostname),
      port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    }
  }
  if (!/^(\*\.)?[a-z0-9.-]+$|^\[[0-9a-f:.]+\]$/i.test(trimmed))
    throw new Error(`"${source}" is not an origin or host name`)
  const host = trimmed.toLowerCase()
  if (host.startsWith('*.')) {
    const suffix = host.slice(1)
    return {
      source,
      matches: (candidate) =>
        (candidate.protocol === 'http:' || candidate.protocol === 'https:') &&
        bareHost(candidate.hostname).endsWith(suffix),
    }
  }
  return {
    source,
    matches: (candidate) =>
      (candidate.protocol === 'http:' || candidate.protocol === 'https:') &&
      bareHost(candidate.hostname) === bareHost(host),
    host: bareHost(host),
  }
}

const REFUSED_SCHEMES = new Set([
  'chrome:',
  'chrome-extension:',
  'chrome-untrusted:',
  'devtools:',
  'view-source:',
  'javascript:',
  'about:',
  'filesystem:',
])

type Resolver = (host: string) => Promise<string[]>

/** The port a URL reaches (its scheme's default when none is written). */
function portOf(url: URL): number {
  return Number(url.port || (url.protocol === 'https:' ? 443 : 80))
}

const defaultResolver: Resolver = async (host) => {
  const { lookup } = await import('node:dns/promises')
  return (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)
}

/**
 * Judges every URL the browser is about to load: navigations (top level and frames) and
 * sub-resources. Host names are resolved and each resolved address is judged, so a public name
 * pointing at 127.0.0.1 is refused like 127.0.0.1 itself; each redirect hop is a new request and
 * is judged again.
 */
export class UrlPolicy {
  private readonly allowed: OriginPattern[]
  private readonly blocked: OriginPattern[]
  private readonly cache = new Map<string, { addresses: Promise<string[]>; at: number }>()

  constructor(
    readonly options: PolicyOptions,
    private readonly resolve: Resolver = defaultResolver,
  ) {
    this.allowed = options.allowedOrigins.map(parseOriginPattern)
    this.blocked = options.blockedOrigins.map(parseOriginPattern)
  }

  /** `undefined` when allowed; a refusal otherwise. `topLevel`: a main-frame navigation. */
  async check(raw: string, kind: { topLevel: boolean }): Promise<Refusal | undefined> {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return { reason: 'not a valid absolute URL' }
    }
    const scheme = url.protocol
    if (scheme === 'about:' && (raw === 'about:blank' || raw === 'about:srcdoc')) return undefined
    if (REFUSED_SCHEMES.has(scheme)) return { reason: `${scheme} URLs are refused` }
    if (scheme === 'file:') {
      return this.options.allowFileUrls ? undefined : { reason: 'file: URLs are refused (--allow-file-urls)' }
    }
    if (scheme === 'data:' || scheme === 'blob:') {
      return kind.topLevel && scheme === 'data:'
        ? { reason: 'top-level data: navigations are refused' }
        : undefined
    }
    if (scheme !== 'http:' && scheme !== 'https:' && scheme !== 'ws:' && scheme !== 'wss:')
      return { reason: `${scheme} URLs are refused` }
    const httpUrl = scheme.startsWith('ws') ? new URL(raw.replace(/^ws/, 'http')) : url
    if (this.blocked.some((pattern) => pattern.matches(httpUrl)))
      return { reason: `${httpUrl.origin} is blocked (--blocked-origins)` }
    const host = bareHost(httpUrl.hostname)
    if (this.blocked.length) {
      // Judged on the address it reaches, not on its spelling: localhost, [::1], 0.0.0.0 or an alias
      // of a blocked address is that address. (The proxy makes the same decision on what it dials.)
      const addresses = isIP(host) ? [host] : await this.addressesOf(host).catch(() => [])
      const rule = await this.blockedEndpoint(addresses, portOf(httpUrl))
      if (rule) return { reason: `${httpUrl.origin} is blocked (--blocked-origins: it reaches ${rule})` }
    }
    if (this.allowed.length) {
      // An allow-list opens exactly what it names, private addresses included, and nothing else.
      return this.allowed.some((pattern) => pattern.matches(httpUrl))
        ? undefined
        : { reason: `${httpUrl.origin} is not in --allowed-origins` }
    }
    if (this.options.allowPrivateNetwork) return undefined
    if (isIP(host)) {
      return isPrivateAddress(host) ? { reason: `${host} is a private or loopback address` } : undefined
    }
    if (host === 'localhost' || host.endsWith('.localhost')) return { reason: `${host} is a loopback name` }
    let addresses: string[]
    try {
      addresses = await this.addressesOf(host)
    } catch {
      // Unresolvable: the browser cannot reach it either, and a refusal here leaks nothing.
      return { reason: `${host} does not resolve` }
    }
    const inside = addresses.find(isPrivateAddress)
    return inside ? { reason: `${host} resolves to a private or loopback address (${inside})` } : undefined
  }

  /**
   * The blocked origin (its text) that names the address and port a connection to `addresses`
   * reaches, if any. Each blocked origin's host is resolved like a request's, and both sides are
   * compared as {@link canonicalAddress}es, so no other spelling or name of the same server gets
   * through. `*.` wildcards name no address and are matched by name only.
   */
  private async blockedEndpoint(addresses: string[], port: number): Promise<string | undefined> {
    const reached = new Set(addresses.map((address) => canonicalAddress(address)))
    for (const pattern of this.blocked) {
      if (pattern.host === undefined || (pattern.port !== undefined && pattern.port !== port)) continue
      let named: string[]
      try {
        named = isIP(pattern.host) ? [pattern.host] : await this.addressesOf(pattern.host)
      } catch {
        continue
      }
      if (named.some((address) => reached.has(canonicalAddress(address)))) return pattern.source
    }
    return undefined
  }

  /**
   * Decides where a connection for `host:port` may go, and returns the one address to connect to:
   * the address judged is the address dialled, so a name cannot resolve to a public address for the
   * check and a private one for the connection. `schemes`: the origins the connection may serve
   * (a CONNECT tunnel does not say whether it carries https or ws).
   */
  async dial(host: string, port: number, schemes: string[]): Promise<{ address: string } | Refusal> {
    const bare = bareHost(host)
    const urls = schemes.map(
      (scheme) => new URL(`${scheme}//${isIP(bare) === 6 ? `[${bare}]` : bare}:${port}/`),
    )
    const blocked = urls.find((url) => this.blocked.some((pattern) => pattern.matches(url)))
    if (blocked) return { reason: `${blocked.origin} is blocked (--blocked-origins)` }
    let addresses: string[]
    if (isIP(bare)) addresses = [bare]
    else {
      try {
        addresses = await this.addressesOf(bare)
      } catch {
        return { reason: `${bare} does not resolve` }
      }
    }
    // Every address the name has is judged (not only the one dialled): a block wins over any allow.
    const rule = await this.blockedEndpoint(addresses, port)
    if (rule) return { reason: `${bare}:${port} is blocked (--blocked-origins: it reaches ${rule})` }
    const listed = urls.some((url) => this.allowed.some((pattern) => pattern.matches(url)))
    if (this.allowed.length && !listed)
      return { reason: `${urls[0]?.origin ?? host} is not in --allowed-origins` }
    if (!listed && !this.options.allowPrivateNetwork) {
      const inside = addresses.find(isPrivateAddress)
      if (inside) return { reason: `${bare} is or resolves to a private or loopback address (${inside})` }
    }
    const address = addresses[0]
    return address ? { address } : { reason: `${bare} does not resolve` }
  }

  private addressesOf(host: string): Promise<string[]> {
    const now = Date.now()
    const cached = this.cache.get(host)
    if (cached && now - cached.at < 30_000) return cached.addresses
    const addresses = this.resolve(host)
    this.cache.set(host, { addresses, at: now })
    if (this.cache.size > 1000) this.cache.delete(this.cache.keys().next().value as string)
    addresses.catch(() => this.cache.delete(host))
    return addresses
  }
}
