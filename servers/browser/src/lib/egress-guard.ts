import type { Browser, BrowserContext, CDPSession, Target } from 'puppeteer-core'

/**
 * WebRTC in a browser this server attached to (--cdp-endpoint). Its ICE traffic (STUN and TURN over
 * UDP, host candidates) ignores the proxy of a browser context, and the only switches that hold it
 * (`--webrtc-ip-handling-policy`, `--force-webrtc-ip-handling-policy`) are launch flags of the whole
 * browser: DevTools has no per-context or browser-wide setting for it (`Target.createBrowserContext`
 * takes a proxy only; `Network.emulateNetworkConditions`' WebRTC packet loss drops nothing on the
 * wire, checked). So in the server's contexts no document gets a peer connection at all: this
 * script runs in every frame before the frame's own scripts (including the initial about:blank of
 * an iframe and srcdoc/data: frames, which a page could otherwise script at once) and removes the
 * constructors. Workers have no RTCPeerConnection; WebTransport, the one UDP transport they have,
 * refuses to run through a proxy (checked by the attach tests).
 *
 * A window a page opens starts as an about:blank document the opener can script synchronously:
 * `window.open` and the three-argument `document.open` strip that window before handing it over,
 * so this does not hang on the new window's own target getting the script in time (on Chromium
 * 156 it already has it then; the attach tests check the window, not which of the two held).
 * Every realm the page can reach runs this same script, so none keeps an unwrapped `open` or an
 * intact constructor.
 */
export const EGRESS_GUARD_SCRIPT = `(() => {
  const names = ['RTCPeerConnection', 'webkitRTCPeerConnection']
  const strip = (scope) => {
    for (const name of names) {
      try { delete scope[name] } catch {}
      if (name in scope) Object.defineProperty(scope, name, { value: undefined, configurable: false, writable: false })
    }
  }
  const guardOpened = (opened) => { if (opened) try { strip(opened) } catch {} ; return opened }
  strip(globalThis)
  const windowOpen = globalThis.open
  if (typeof windowOpen === 'function') {
    Object.defineProperty(globalThis, 'open', {
      value: function open() { return guardOpened(Reflect.apply(windowOpen, this, arguments)) },
      configurable: true, writable: true,
    })
  }
  const documentOpen = globalThis.Document && Document.prototype.open
  if (typeof documentOpen === 'function') {
    Object.defineProperty(Document.prototype, 'open', {
      value: function open() {
        const result = Reflect.apply(documentOpen, this, arguments)
        return arguments.length >= 3 ? guardOpened(result) : result
      },
      configurable: true, writable: true,
    })
  }
})()`

/** A target as puppeteer holds it, with the protocol's description of it. */
type GuardedTarget = Target & { _getTargetInfo?(): { type: string; targetId: string } }

/** Where puppeteer announces attached targets (its internal event, keyed by a symbol). */
interface ReadyEmitter {
  on(event: symbol, handler: (session: CDPSession) => void): unknown
}

/** Target types whose documents can hold a peer connection: tabs, pop-ups and out-of-process iframes. */
const DOCUMENT_TARGETS = new Set(['page', 'iframe'])

/**
 * Installs the guard in every page and out-of-process iframe of the contexts `guarded` names, as
 * each attaches. puppeteer attaches to every new target paused, announces it as ready and only then
 * resumes it; the script sent on that announcement reaches the target before the resume does, so it
 * is in place before any document of the target runs a script. Targets of other contexts (the
 * user's own tabs) are left untouched.
 */
export async function guardContexts(
  browser: Browser,
  guarded: (context: BrowserContext) => boolean,
): Promise<void> {
  const { CDPSessionEvent } = await import('puppeteer-core')
  // puppeteer's announcement that an attached target is set up and about to be resumed (internal
  // to puppeteer): without it nothing could be guarded in time, so attaching fails instead.
  const ready = (CDPSessionEvent as unknown as { Ready?: unknown }).Ready
  const probe = await browser.target().createCDPSession()
  const connection = probe.connection()
  await probe.detach().catch(() => undefined)
  if (typeof ready !== 'symbol' || !connection)
    throw new Error(
      'This puppeteer-core cannot install the WebRTC guard before a page runs, so an attached browser would let pages around the proxy',
    )
  const onReady = (session: CDPSession) => {
    const target = (session as CDPSession & { target?(): GuardedTarget | undefined }).target?.()
    // The protocol's own type: puppeteer's type() calls an out-of-process iframe "other".
    const info = target?._getTargetInfo?.()
    if (!target || !info || !DOCUMENT_TARGETS.has(info.type) || !guarded(target.browserContext())) return
    session
      .send('Page.addScriptToEvaluateOnNewDocument', { source: EGRESS_GUARD_SCRIPT, runImmediately: true })
      // A target that could not be guarded does not run on (one already gone needs nothing).
      .catch(() => connection.send('Target.closeTarget', { targetId: info.targetId }))
      .catch(() => undefined)
  }
  // Top-level targets are announced on the connection, the others on their parent's session.
  const watch = (emitter: unknown) => (emitter as ReadyEmitter).on(ready, onReady)
  watch(connection)
  connection.on(CDPSessionEvent.SessionAttached, (session) => watch(session))
}
