import type { CDPSession } from 'puppeteer-core'

/**
 * Request interception on the DevTools protocol's own terms: every request a tab's documents and
 * workers make is paused (`Fetch.requestPaused`) and answered on the session that paused it.
 *
 * Not puppeteer's `setRequestInterception`: puppeteer holds each paused request until it has paired
 * it with the `Network.requestWillBeSent` that describes it, and then answers on the session the
 * later of the two came on. A dedicated worker's request is paused on its page's session (workers
 * have no `Fetch` domain) and described on the worker's session, in either order; when the
 * description came second, puppeteer answered on the worker's session, which refused, and the
 * request stayed paused for good (a worker whose `fetch` never settled, about one attached-browser
 * test run in eight). Here a paused request carries all that is judged (URL, frame, resource type)
 * and nothing waits on a second event.
 *
 * Out-of-process iframes are targets of their own, with their own `Fetch`: the tab's session
 * attaches to each (and theirs to their own) paused at start, turns interception on there and only
 * then lets it run, so none of their requests passes unjudged.
 */

/** What a paused request carries that a decision needs. */
export interface PausedRequest {
  url: string
  /** The protocol's resource type: `Document` for a frame's navigation. */
  resourceType: string
  /** The frame whose document (or dedicated worker) made the request. */
  frameId: string
}

/** How a paused request goes on. */
export type Decision =
  | { action: 'continue' }
  | { action: 'fail' }
  | { action: 'fulfill'; status: number; contentType: string; body: string }

interface RequestPausedEvent {
  requestId: string
  request: { url: string }
  resourceType: string
  frameId: string
}

/** Only iframes are attached (the filter below), so the target's type is not read. */
interface AttachedEvent {
  sessionId: string
  waitingForDebugger: boolean
}

/** Sends one command, ignoring a session or request that went away meanwhile. */
function quietly(session: CDPSession, method: string, params: object): Promise<void> {
  return (session.send as (method: string, params: object) => Promise<unknown>)(method, params).then(
    () => undefined,
    () => undefined,
  )
}

function answer(session: CDPSession, requestId: string, decision: Decision): Promise<void> {
  if (decision.action === 'continue') return quietly(session, 'Fetch.continueRequest', { requestId })
  if (decision.action === 'fail')
    return quietly(session, 'Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' })
  const body = Buffer.from(decision.body)
  return quietly(session, 'Fetch.fulfillRequest', {
    requestId,
    responseCode: decision.status,
    responseHeaders: [
      { name: 'content-type', value: decision.contentType },
      { name: 'content-length', value: String(body.length) },
    ],
    body: body.toString('base64'),
  })
}

/**
 * Pauses every request of the target behind `session` (and of its out-of-process iframes, at any
 * depth) and answers each with what `decide` returns. A decision that throws refuses the request:
 * none is left paused.
 */
export async function interceptRequests(
  session: CDPSession,
  decide: (request: PausedRequest) => Promise<Decision>,
): Promise<void> {
  session.on('Fetch.requestPaused', (event: RequestPausedEvent) => {
    const paused: PausedRequest = {
      url: event.request.url,
      resourceType: event.resourceType,
      frameId: event.frameId,
    }
    void decide(paused)
      .catch((): Decision => ({ action: 'fail' }))
      .then((decision) => answer(session, event.requestId, decision))
  })
  session.on('Target.attachedToTarget', (event: AttachedEvent) => {
    const child = session.connection()?.session(event.sessionId)
    if (!child) return
    // Whatever happens to the frame's interception, the frame is let run (or it would hang).
    const run = () =>
      event.waitingForDebugger ? quietly(child, 'Runtime.runIfWaitingForDebugger', {}) : undefined
    void interceptRequests(child, decide).then(run, run)
  })
  await Promise.all([
    session.send('Fetch.enable', { patterns: [{ urlPattern: '*' }] }),
    session.send('Target.setAutoAttach', {
      autoAttach: true,
      waitForDebuggerOnStart: true,
      flatten: true,
      filter: [{ type: 'iframe', exclude: false }, { exclude: true }],
    }),
  ])
}
