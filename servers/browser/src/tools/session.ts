import { z } from '@keel-mcp/core'
import { browse, defineTool, sessionOf } from './shared.js'

// Browser sessions as explicit handles (SEP-2567): each is a browser context of its own
// (cookies, storage, tabs), kept until close_session or until it is idle too long.

export const openSession = defineTool({
  name: 'open_session',
  title: 'Open session',
  description:
    'Starts a browser session of its own (cookies, storage, tabs); returns its session handle. Pass it as session on every later call.',
  input: {},
  output: {},
  annotations: browse,
  handle: { kind: 'session', opens: 'always' },
  async run(_args, context) {
    const { notices } = await sessionOf(context)
    return {
      data: {},
      text: [...notices, 'Opened a new browser session with no tabs yet: navigate next.'].join('\n'),
    }
  },
})

export const closeSession = defineTool({
  name: 'close_session',
  title: 'Close session',
  description: 'Ends a browser session: closes its tabs and forgets its cookies and storage.',
  input: {},
  output: { closed: z.boolean() },
  annotations: { ...browse, idempotentHint: true },
  async run(_args, context) {
    await context.handle?.close()
    return { data: { closed: true }, text: 'Closed the session: its tabs, cookies and storage are gone.' }
  },
})
