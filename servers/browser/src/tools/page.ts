import { ToolError, z } from '@keel-mcp/core'
import { boxOf, fieldKind, resolveRef, setFiles } from '../lib/element.js'
import { assertPageSize, PDF_MAX_ELEMENTS } from '../lib/limits.js'
import { writeOutput } from '../lib/output.js'
import type { Tab } from '../lib/tab.js'
import {
  act,
  browse,
  defineTool,
  onTab,
  outputDirOf,
  pageInfo,
  pageOutput,
  perform,
  refArgument,
  tabArgument,
  toFileArgument,
  untrusted,
} from './shared.js'

export const uploadFile = defineTool({
  name: 'upload_file',
  title: 'Upload file',
  description: 'Sets the files of a file input; only files in the upload directories.',
  input: {
    ref: refArgument,
    paths: z.array(z.string()).min(1).max(20).describe('File paths'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: act,
  async run({ ref, paths, tab: tabId }, context) {
    // Private copies of what was checked: the page never reads the paths themselves.
    const files = await Promise.all(paths.map((path) => context.deps.uploads.copy(path)))
    return perform(context, tabId, async (tab) => {
      const element = await resolveRef(tab, ref)
      if ((await fieldKind(tab, element)).kind !== 'file')
        throw new ToolError('invalid_argument', `Ref ${ref} is not a file input`)
      await setFiles(tab, element, files)
      return `Set ${files.length} file${files.length === 1 ? '' : 's'}.`
    })
  },
})

/** Longest side of a returned screenshot, in pixels; larger captures are scaled down. */
export const SCREENSHOT_MAX_SIDE = 2000

export const takeScreenshot = defineTool({
  name: 'take_screenshot',
  title: 'Screenshot',
  description: 'Image of the viewport, full page or an element (scaled to ≤2000 px). Use snapshot to act.',
  input: {
    ref: z.string().optional().describe('Element ref (default: page)'),
    full_page: z.boolean().default(false).describe('Whole page'),
    format: z.enum(['png', 'jpeg']).default('png').describe('Format'),
    quality: z.number().int().min(1).max(100).optional().describe('JPEG quality'),
    to_file: toFileArgument,
    tab: tabArgument,
  },
  output: { ...pageOutput, width: z.number(), height: z.number(), scale: z.number() },
  annotations: browse,
  async run({ ref, full_page, format, quality, to_file, tab: tabId }, context) {
    const dir = to_file ? outputDirOf(context.deps.settings) : undefined
    return onTab(context, tabId, async (tab) => {
      const page = tab.page
      let area: { x: number; y: number; width: number; height: number }
      if (ref) area = await boxOf(tab, await resolveRef(tab, ref))
      else if (full_page) {
        const metrics = (await tab.cdp.send('Page.getLayoutMetrics')) as unknown as {
          cssContentSize: { width: number; height: number }
        }
        area = { x: 0, y: 0, width: metrics.cssContentSize.width, height: metrics.cssContentSize.height }
      } else {
        const viewport = page.viewport() ?? { width: 1280, height: 720 }
        const scroll = (await page.evaluate('({ x: window.scrollX, y: window.scrollY })')) as {
          x: number
          y: number
        }
        area = { ...scroll, width: viewport.width, height: viewport.height }
      }
      const scale = Math.min(1, SCREENSHOT_MAX_SIDE / Math.max(area.width, area.height))
      const data = await page.screenshot({
        type: format,
        ...(format === 'jpeg' ? { quality: quality ?? 80 } : {}),
        clip: { ...area, scale },
        captureBeyondViewport: full_page || Boolean(ref),
        encoding: 'base64',
      })
      const info = pageInfo(tab)
      const width = Math.round(area.width * scale)
      const height = Math.round(area.height * scale)
      if (dir) {
        const file = await writeOutput(dir, 'screenshot', tab.id, format, Buffer.from(String(data), 'base64'))
        return {
          data: { ...info, width, height, scale: Number(scale.toFixed(3)) },
          text: `Screenshot of tab ${tab.id} (${width}×${height}) written to ${file.path} (${file.bytes} bytes).`,
        }
      }
      return {
        data: { ...info, width, height, scale: Number(scale.toFixed(3)) },
        text: `Screenshot of tab ${tab.id}`,
        content: [
          { type: 'image' as const, data: String(data), mimeType: `image/${format}` },
          {
            type: 'text' as const,
            text: `Screenshot of tab ${tab.id} (${width}×${height}${scale < 1 ? `, scaled ${scale.toFixed(2)}` : ''}).`,
          },
        ],
      }
    })
  },
})

export const waitFor = defineTool({
  name: 'wait_for',
  title: 'Wait for',
  description: 'Waits until a text appears or disappears, or for some seconds.',
  input: {
    text: z.string().min(1).optional().describe('Text to appear'),
    text_gone: z.string().min(1).optional().describe('Text to disappear'),
    seconds: z.number().min(0).max(60).optional().describe('Seconds to wait (with a text: at most)'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: browse,
  taskSupport: 'optional',
  async run({ text, text_gone, seconds, tab: tabId }, context) {
    if (text === undefined && text_gone === undefined && seconds === undefined)
      throw new ToolError('invalid_argument', 'Give text, text_gone or seconds')
    const { settings } = context.deps
    // With a text condition, seconds bounds the wait; without, the navigation timeout does.
    // (Puppeteer reads a timeout of 0 as none: the shortest wait is one polling round.)
    const textLimit = seconds !== undefined ? Math.max(100, seconds * 1000) : settings.timeoutNavigation
    const limit = Math.max(textLimit, (seconds ?? 0) * 1000)
    return perform(
      context,
      tabId,
      async (tab) => {
        if (seconds !== undefined && text === undefined && text_gone === undefined) {
          await new Promise<void>((done, fail) => {
            const stop = () => {
              clearTimeout(timer)
              fail(context.signal.reason)
            }
            const timer = setTimeout(() => {
              context.signal.removeEventListener('abort', stop)
              done()
            }, seconds * 1000)
            context.signal.addEventListener('abort', stop, { once: true })
          })
          return `Waited ${seconds} s.`
        }
        try {
          const wanted = JSON.stringify(text ?? null)
          const gone = JSON.stringify(text_gone ?? null)
          await tab.page.waitForFunction(
            `(() => { const body = document.body ? document.body.innerText : ''; const wanted = ${wanted}; const gone = ${gone};
            return (wanted === null || body.includes(wanted)) && (gone === null || !body.includes(gone)) })()`,
            { timeout: textLimit, polling: 100, signal: context.signal },
          )
        } catch (error) {
          if ((error as Error).name === 'TimeoutError') {
            const within = seconds !== undefined ? `${seconds} s` : `${textLimit} ms`
            const what = text
              ? `${JSON.stringify(text)} did not appear`
              : `${JSON.stringify(text_gone)} did not disappear`
            throw new ToolError('timeout', `${what} within ${within}`, {
              hint: 'The tab is still usable: take a snapshot to see its state.',
            })
          }
          throw error
        }
        return text ? `Found ${JSON.stringify(text)}.` : `${JSON.stringify(text_gone)} is gone.`
      },
      { actionTimeout: limit + 1000 },
    )
  },
})

export const evaluate = defineTool({
  name: 'evaluate',
  title: 'Evaluate',
  description: 'Runs JavaScript in the page; returns its JSON value (capped).',
  input: {
    script: z.string().describe('Expression or () => {...}'),
    tab: tabArgument,
  },
  output: { ...pageOutput, result: z.string() },
  annotations: act,
  async run({ script, tab: tabId }, context) {
    const limit = context.deps.settings.timeoutAction
    return onTab(context, tabId, async (tab) => {
      const expression = /^\s*(async\s*)?(\([^)]*\)|[A-Za-z_$][\w$]*)\s*=>|^\s*(async\s+)?function\b/.test(
        script,
      )
        ? `(${script})()`
        : script
      const evaluation = tab.cdp.send('Runtime.evaluate', {
        expression,
        awaitPromise: true,
        returnByValue: true,
        timeout: limit,
        userGesture: true,
      }) as Promise<{
        result: { value?: unknown; type: string; description?: string }
        exceptionDetails?: { text?: string; exception?: { description?: string } }
      }>
      let timer: NodeJS.Timeout | undefined
      const outcome = await Promise.race([
        evaluation,
        new Promise<'timeout'>((done) => {
          timer = setTimeout(() => done('timeout'), limit)
        }),
      ]).finally(() => clearTimeout(timer))
      if (outcome === 'timeout')
        throw new ToolError('timeout', `The script did not finish within ${limit} ms`)
      if (outcome.exceptionDetails) {
        const detail =
          outcome.exceptionDetails.exception?.description ?? outcome.exceptionDetails.text ?? 'error'
        throw new ToolError('invalid_argument', `The script threw: ${detail.split('\n')[0]?.slice(0, 500)}`)
      }
      const value = outcome.result.value
      let rendered =
        value === undefined ? (outcome.result.description ?? outcome.result.type) : JSON.stringify(value)
      if (rendered.length > 20_000) rendered = `${rendered.slice(0, 20_000)}… [truncated at 20000 characters]`
      const info = pageInfo(tab)
      return { data: { ...info, result: rendered }, text: untrusted(rendered) }
    })
  },
})

/** Largest PDF save_pdf returns. */
export const PDF_MAX_BYTES = 20 * 1024 * 1024

/**
 * Prints the page to PDF as a stream read in chunks, stopping (and closing the stream) as soon as
 * it passes `maxBytes`: a huge print never lands in memory whole.
 */
async function printPdf(tab: Tab, maxBytes: number): Promise<Buffer> {
  const { stream } = (await tab.cdp.send('Page.printToPDF', {
    printBackground: true,
    transferMode: 'ReturnAsStream',
  })) as { stream?: string }
  if (!stream) throw new Error('Chromium returned no PDF stream')
  const chunks: Buffer[] = []
  let size = 0
  try {
    for (;;) {
      const chunk = (await tab.cdp.send('IO.read', { handle: stream, size: 1024 * 1024 })) as {
        data: string
        base64Encoded?: boolean
        eof: boolean
      }
      const bytes = Buffer.from(chunk.data, chunk.base64Encoded ? 'base64' : 'utf8')
      size += bytes.byteLength
      if (size > maxBytes)
        throw new ToolError('too_large', `The PDF is over the ${maxBytes}-byte cap`, {
          hint: 'Take a screenshot instead, or print a smaller page.',
        })
      chunks.push(bytes)
      if (chunk.eof) break
    }
  } finally {
    await tab.cdp.send('IO.close', { handle: stream }).catch(() => undefined)
  }
  return Buffer.concat(chunks)
}

export const savePdf = defineTool({
  name: 'save_pdf',
  title: 'Save PDF',
  description: 'The page as a PDF (embedded resource, or a file with to_file).',
  input: { to_file: toFileArgument, tab: tabArgument },
  output: { ...pageOutput, bytes: z.number() },
  annotations: browse,
  async run({ to_file, tab: tabId }, context) {
    const dir = to_file ? outputDirOf(context.deps.settings) : undefined
    return onTab(context, tabId, async (tab) => {
      await assertPageSize(tab, PDF_MAX_ELEMENTS, 'PDF')
      const pdf = await printPdf(tab, PDF_MAX_BYTES)
      const info = pageInfo(tab)
      if (dir) {
        const file = await writeOutput(dir, 'page', tab.id, 'pdf', pdf)
        return {
          data: { ...info, bytes: file.bytes },
          text: `PDF of tab ${tab.id} written to ${file.path} (${file.bytes} bytes).`,
        }
      }
      return {
        data: { ...info, bytes: pdf.byteLength },
        content: [
          {
            type: 'resource' as const,
            resource: {
              uri: `pdf://${tab.id}/page.pdf`,
              mimeType: 'application/pdf',
              blob: Buffer.from(pdf).toString('base64'),
            },
          },
          { type: 'text' as const, text: `PDF of tab ${tab.id}: ${pdf.byteLength} bytes.` },
        ],
        text: '',
      }
    })
  },
})
