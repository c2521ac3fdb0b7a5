import type { Replica } from '../src/harness.js'

// A minimal Streamable HTTP client for the tests that need to see the wire itself: which replica
// answered, each SSE event id, and a stream cut at a chosen moment.

export interface SseEvent {
  id?: string
  data: string
}

export const ACCEPT = 'application/json, text/event-stream'

/** Reads SSE events from a response body as they arrive. */
export async function* sseEvents(response: Response): AsyncGenerator<SseEvent> {
  if (!response.body) return
  const decoder = new TextDecoder()
  let buffer = ''
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true })
    let end = buffer.indexOf('\n\n')
    while (end !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      end = buffer.indexOf('\n\n')
      const event: SseEvent = { data: '' }
      for (const line of block.split('\n')) {
        if (line.startsWith('id: ')) event.id = line.slice(4)
        else if (line.startsWith('data: ')) event.data += line.slice(6)
      }
      if (event.id !== undefined || event.data) yield event
    }
  }
}

/** The replica id each replica announced on stderr (`replica: <id>`). */
export function replicaIdOf(replica: Replica): string {
  const match = /"?replica"?[=:]\s*"?([0-9a-f]{12})/.exec(replica.stderr())
  if (!match?.[1])
    throw new Error(`replica ${replica.pid} announced no replica id: ${replica.stderr().slice(0, 500)}`)
  return match[1]
}

/** Opens a 2025-11-25 session with a raw initialize; returns its id. */
export async function openSession(url: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { accept: ACCEPT, 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'wire', version: '1.0.0' },
      },
    }),
  })
  const session = response.headers.get('mcp-session-id')
  await response.text()
  if (!response.ok || !session) throw new Error(`initialize failed: ${response.status}`)
  const initialized = await post(url, session, { jsonrpc: '2.0', method: 'notifications/initialized' })
  await initialized.text()
  return session
}

export function post(
  url: string,
  session: string,
  message: unknown,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      accept: ACCEPT,
      'content-type': 'application/json',
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify(message),
    ...(signal ? { signal } : {}),
  })
}

export function resume(
  url: string,
  session: string,
  lastEventId: string,
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    headers: {
      accept: 'text/event-stream',
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
      'last-event-id': lastEventId,
    },
    ...(signal ? { signal } : {}),
  })
}
