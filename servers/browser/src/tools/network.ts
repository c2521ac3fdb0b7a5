import { ToolError, z } from '@keel-mcp/core'
import { writeOutput } from '../lib/output.js'
import { globToRegExp } from '../lib/routes.js'
import { shownUrl } from '../lib/url.js'
import {
  act,
  browse,
  capOf,
  defineTool,
  maxTokensArgument,
  onTab,
  outputDirOf,
  sessionOf,
  tabArgument,
  toFileArgument,
  untrusted,
} from './shared.js'

/** Headers whose values are credentials: named, never shown. */
const SECRET_HEADERS = new Set(['cookie', 'set-cookie', 'authorization', 'proxy-authorization'])

function headerLines(headers: Record<string, string>): string[] {
  return Object.entries(headers).map(
    ([name, value]) =>
      `  ${name}: ${SECRET_HEADERS.has(name.toLowerCase()) ? '[redacted]' : value.slice(0, 500)}`,
  )
}

const TEXTUAL = /^(text\/|application\/(json|javascript|xml|x-www-form-urlencoded)|image\/svg)/

export const networkRequest = defineTool({
  name: 'network_request',
  title: 'Network request',
  description:
    'One request from network_requests by its [id]: headers (credentials redacted) and bodies (text, capped).',
  input: {
    id: z.number().int().min(1).describe('Id from network_requests'),
    max_tokens: maxTokensArgument,
    to_file: toFileArgument,
    tab: tabArgument,
  },
  output: { tab: z.string(), id: z.number(), status: z.number().optional() },
  annotations: { ...browse, idempotentHint: true },
  async run({ id, max_tokens, to_file, tab: tabId }, context) {
    const cap = capOf(context.deps.settings, max_tokens)
    const dir = to_file ? outputDirOf(context.deps.settings) : undefined
    return onTab(context, tabId, async (tab) => {
      const entry = tab.network.find((candidate) => candidate.id === id)
      if (!entry)
        throw new ToolError('not_found', `No request [${id}] in this tab's recent requests`, {
          hint: 'Call network_requests: it keeps the last 300.',
        })
      const { request } = entry
      const response = request.response()
      const lines = [`[${id}] ${request.method()} ${shownUrl(request.url())}`, 'request headers:']
      lines.push(...headerLines(request.headers()))
      const posted = request.postData()
      if (posted) lines.push(`request body (${posted.length} chars):`, posted.slice(0, Math.floor(cap / 4)))
      if (entry.failed) lines.push(`failed: ${entry.failed}`)
      if (response) {
        lines.push(`status: ${response.status()} ${response.statusText()}`, 'response headers:')
        lines.push(...headerLines(response.headers()))
        const type = response.headers()['content-type'] ?? ''
        const body = await response.buffer().catch(() => undefined)
        if (!body) lines.push('response body: not kept by the browser (redirect, evicted or none)')
        else if (dir) {
          const file = await writeOutput(dir, 'response', tab.id, 'body', body)
          lines.push(
            `response body: ${file.bytes} bytes of ${type || 'unknown type'}, written to ${file.path}`,
          )
        } else if (!TEXTUAL.test(type))
          lines.push(`response body: ${body.byteLength} bytes of ${type || 'unknown type'}`)
        else {
          const text = body.toString('utf8')
          const room = Math.max(0, cap - lines.join('\n').length)
          lines.push(`response body (${text.length} chars):`, text.slice(0, room))
          if (text.length > room) lines.push(`[Cut at ${room} characters of the body.]`)
        }
      }
      return {
        data: { tab: tab.id, id, ...(response ? { status: response.status() } : {}) },
        text: untrusted(lines.join('\n')),
      }
    })
  },
})

export const route = defineTool({
  name: 'route',
  title: 'Route requests',
  description:
    "Blocks requests whose URL matches a glob (* = anything), answers them with a given response, or removes a rule. For every tab of the session; the server's URL policy still applies first.",
  input: {
    pattern: z.string().min(1).max(1000).describe('URL glob, e.g. */api/*'),
    action: z.enum(['block', 'fulfill', 'remove']).describe('What to do'),
    status: z.number().int().min(100).max(599).default(200).describe('fulfill: status'),
    content_type: z.string().max(200).default('text/plain').describe('fulfill: type'),
    body: z.string().max(1_000_000).default('').describe('fulfill: body'),
  },
  output: { routes: z.number() },
  annotations: act,
  async run({ pattern, action, status, content_type, body }, context) {
    const { session } = await sessionOf(context)
    const routes = session.routes
    const existing = routes.findIndex((candidate) => candidate.pattern === pattern)
    if (action === 'remove') {
      if (existing < 0) throw new ToolError('not_found', `No rule for ${pattern}`)
      routes.splice(existing, 1)
    } else {
      const rule = {
        pattern,
        matcher: globToRegExp(pattern),
        action,
        status,
        contentType: content_type,
        body,
      }
      if (existing >= 0) routes[existing] = rule
      else routes.push(rule)
    }
    const listed = routes.map((rule) =>
      rule.action === 'block'
        ? `block ${rule.pattern}`
        : `fulfill ${rule.pattern} → ${rule.status} ${rule.contentType}`,
    )
    return {
      data: { routes: routes.length },
      text: listed.length ? `Rules (first match wins):\n${listed.join('\n')}` : 'No rules.',
    }
  },
})
