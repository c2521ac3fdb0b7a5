import { isIP } from 'node:net'

/** Where to attach: puppeteer's `browserWSEndpoint` (ws://…) or `browserURL` (http://host:port). */
export type CdpEndpoint = { browserWSEndpoint: string } | { browserURL: string }

/** A --cdp-endpoint that cannot be used, with what to do about it. */
export class CdpEndpointError extends Error {
  override name = 'CdpEndpointError'
}

/** Whether a URL's host is this machine's loopback (127.0.0.0/8, ::1 or `localhost`). */
function loopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost') return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1' || /^::ffff:127\./.test(host)
  return false
}

/**
 * Reads --cdp-endpoint: a browser's DevTools WebSocket (`ws://127.0.0.1:9222/devtools/browser/…`)
 * or the HTTP address of its --remote-debugging-port (`http://127.0.0.1:9222`). Whoever holds a
 * DevTools endpoint controls that whole browser and can read everything in it, so only this
 * machine's loopback is accepted unless `allowRemote` (--allow-remote-cdp) says otherwise; a host
 * name other than `localhost` is a remote one (it may resolve anywhere).
 */
export function parseCdpEndpoint(value: string, allowRemote: boolean): CdpEndpoint {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    throw new CdpEndpointError(
      `${JSON.stringify(value)} is not a URL (ws://127.0.0.1:9222/devtools/browser/… or http://127.0.0.1:9222)`,
    )
  }
  if (!['ws:', 'wss:', 'http:', 'https:'].includes(url.protocol))
    throw new CdpEndpointError(
      `${url.protocol} is not a DevTools endpoint scheme (ws:, wss:, http: or https:)`,
    )
  if (!allowRemote && !loopbackHost(url.hostname))
    throw new CdpEndpointError(
      `${url.hostname} is not this machine's loopback: a DevTools endpoint elsewhere hands this server (and whoever can reach that port) the whole browser. Use 127.0.0.1, or pass --allow-remote-cdp to attach to it anyway`,
    )
  return url.protocol === 'ws:' || url.protocol === 'wss:'
    ? { browserWSEndpoint: url.href }
    : { browserURL: url.origin }
}
