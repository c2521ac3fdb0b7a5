import { SlackError } from './slack.js'

/**
 * Where a file URL may be fetched with the workspace's token: the API's own host (a GovSlack or
 * loopback root), or Slack's file host next to it (`files.slack.com` for `slack.com`). Any other
 * host never sees the token, whatever a file record says.
 */
export function mayCarryToken(url: string, apiUrl: string): boolean {
  let target: URL
  let api: URL
  try {
    target = new URL(url)
    api = new URL(apiUrl)
  } catch {
    return false
  }
  if (target.protocol !== api.protocol) return false
  if (target.host === api.host) return true
  if (target.protocol !== 'https:') return false
  const apex = api.hostname.replace(/^(api|www)\./, '')
  return target.hostname === `files.${apex}` || target.hostname === `files-edge.${apex}`
}

/** Bytes of a response, stopping at `maxBytes` (the rest is never read). */
export async function readCapped(
  response: Response,
  maxBytes: number,
): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = []
  let total = 0
  let truncated = false
  const reader = response.body?.getReader()
  if (!reader) return { bytes: Buffer.alloc(0), truncated }
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      const chunk = Buffer.from(value)
      if (total + chunk.length > maxBytes) {
        chunks.push(chunk.subarray(0, maxBytes - total))
        truncated = true
        break
      }
      chunks.push(chunk)
      total += chunk.length
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
  return { bytes: Buffer.concat(chunks), truncated }
}

/** Downloads a private file with the token, within a byte budget; only from {@link mayCarryToken} hosts. */
export async function downloadPrivate(
  url: string,
  token: string,
  apiUrl: string,
  maxBytes: number,
  signal?: AbortSignal,
): Promise<{ bytes: Buffer; truncated: boolean; contentType: string | undefined }> {
  if (!mayCarryToken(url, apiUrl)) {
    throw new SlackError('file_host_refused', 'The file is not on a Slack file host; it was not fetched')
  }
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}` },
    redirect: 'error',
    ...(signal ? { signal } : {}),
  }).catch(() => {
    throw new SlackError('request_error', 'Slack could not be reached')
  })
  if (!response.ok) {
    await response.body?.cancel().catch(() => {})
    throw new SlackError('http_error', `Slack answered HTTP ${response.status}`, { status: response.status })
  }
  const { bytes, truncated } = await readCapped(response, maxBytes)
  return { bytes, truncated, contentType: response.headers.get('content-type') ?? undefined }
}

/** Sends bytes to the pre-signed upload URL `files.getUploadURLExternal` gave (no token needed there). */
export async function sendUpload(uploadUrl: string, apiUrl: string, bytes: Buffer, signal?: AbortSignal) {
  if (!mayCarryToken(uploadUrl, apiUrl)) {
    throw new SlackError('file_host_refused', 'Slack gave an upload URL on an unexpected host')
  }
  const response = await fetch(uploadUrl, {
    method: 'POST',
    body: bytes,
    headers: { 'content-type': 'application/octet-stream' },
    redirect: 'error',
    ...(signal ? { signal } : {}),
  }).catch(() => {
    throw new SlackError('request_error', 'Slack could not be reached')
  })
  await response.body?.cancel().catch(() => {})
  if (!response.ok) throw new SlackError('http_error', `Slack answered HTTP ${response.status}`)
}
