import { ToolError } from '@keel-mcp/core'
import { BrowserAttachError, BrowserLimitError, TabGoneError } from './lib/browser.js'
import { INSTALL_HINT, NoBrowserError } from './lib/discover.js'
import { NotVisibleError } from './lib/element.js'
import { PageTooLargeError } from './lib/limits.js'
import { CallTimeoutError, PageStoppedError, StaleRefError } from './lib/tab.js'
import { UploadError } from './lib/upload.js'

/** Browser and puppeteer failures as tool errors the model can act on (pure). */
export function toToolError(error: unknown): ToolError | undefined {
  if (!(error instanceof Error)) return undefined
  if (error instanceof StaleRefError)
    return new ToolError('not_found', error.message, { hint: 'Call snapshot for fresh refs.' })
  if (error instanceof TabGoneError)
    return new ToolError('not_found', error.message, { hint: 'list_tabs shows the open tabs.' })
  if (error instanceof PageStoppedError) return new ToolError(error.kind, error.message, { hint: error.hint })
  if (error instanceof BrowserLimitError)
    return new ToolError('rate_limited', error.message, { hint: error.hint })
  if (error instanceof PageTooLargeError)
    return new ToolError('too_large', error.message, { hint: error.hint })
  if (error instanceof CallTimeoutError)
    return new ToolError('timeout', error.message, {
      hint: 'The page is busy or very large. Other tabs still answer; close_tab closes this one, navigate elsewhere in a new_tab.',
    })
  if (error instanceof UploadError)
    return new ToolError(error.kind, error.message, {
      hint: 'Files can be uploaded only from the upload directories (--upload-dir), never through a symbolic link.',
    })
  if (error instanceof BrowserAttachError)
    return new ToolError('unavailable', error.message.slice(0, 500), { hint: error.hint })
  if (error instanceof NoBrowserError)
    return new ToolError('unavailable', error.message, { hint: INSTALL_HINT })
  if (error instanceof NotVisibleError)
    return new ToolError('conflict', error.message, {
      hint: 'Scroll or open the part of the page that shows it.',
    })
  if (error.name === 'TimeoutError')
    return new ToolError('timeout', 'The browser did not answer in time', {
      hint: 'The tab is still usable: take a snapshot to see its state.',
    })
  const message = error.message
  if (
    /Target closed|Session closed|Connection closed|detached|has been closed|Protocol error.*closed/i.test(
      message,
    )
  )
    return new ToolError('unavailable', 'The tab or the browser closed during the call', {
      hint: 'Call again: a stopped browser is started again, list_tabs shows open tabs.',
    })
  if (/not a text field|not a <select>|no option /.test(message))
    return new ToolError('invalid_argument', message.replace(/^.*?Error: /, '').slice(0, 300))
  if (/Failed to launch the browser process|spawn .* (ENOENT|EACCES)/i.test(message))
    return new ToolError('unavailable', 'The browser could not be started', { hint: INSTALL_HINT })
  return undefined
}
