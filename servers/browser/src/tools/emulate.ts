import { ToolError, z } from '@keel-mcp/core'
import type { Tab } from '../lib/tab.js'
import { browse, defineTool, onTab, pageInfo, pageOutput, tabArgument } from './shared.js'

/** Device presets: CSS viewport, pixel ratio, touch and mobile. */
const DEVICES = {
  desktop: { width: 1280, height: 720, deviceScaleFactor: 1, mobile: false },
  laptop: { width: 1440, height: 900, deviceScaleFactor: 2, mobile: false },
  tablet: { width: 820, height: 1180, deviceScaleFactor: 2, mobile: true },
  phone: { width: 393, height: 852, deviceScaleFactor: 3, mobile: true },
} as const

/** Network presets (throughput in bytes a second, latency in ms), as DevTools names them. */
const NETWORKS = {
  offline: { offline: true, latency: 0, downloadThroughput: 0, uploadThroughput: 0 },
  'slow-3g': { offline: false, latency: 400, downloadThroughput: 50_000, uploadThroughput: 50_000 },
  'fast-3g': { offline: false, latency: 150, downloadThroughput: 200_000, uploadThroughput: 90_000 },
  'slow-4g': { offline: false, latency: 60, downloadThroughput: 500_000, uploadThroughput: 400_000 },
  none: { offline: false, latency: 0, downloadThroughput: -1, uploadThroughput: -1 },
} as const

async function send(tab: Tab, method: string, params: Record<string, unknown> = {}): Promise<void> {
  try {
    // biome-ignore lint/suspicious/noExplicitAny: CDP commands are typed by name; these are called generically
    await tab.cdp.send(method as any, params as any)
  } catch (error) {
    throw new ToolError(
      'invalid_argument',
      `${method}: ${(error as Error).message.replace(/^Protocol error[^:]*: /, '')}`,
    )
  }
}

export const emulate = defineTool({
  name: 'emulate',
  title: 'Emulate',
  description:
    'Emulates a device, viewport, dark mode, reduced motion, network, CPU, position, timezone or locale.',
  input: {
    device: z.enum(['desktop', 'laptop', 'tablet', 'phone']).optional().describe('Preset'),
    viewport: z
      .string()
      .regex(/^\d{2,4}x\d{2,4}$/, 'like 1280x720')
      .optional()
      .describe('WxH'),
    color_scheme: z.enum(['light', 'dark']).optional().describe('Color scheme'),
    reduced_motion: z.boolean().optional().describe('Reduce motion'),
    network: z.enum(['offline', 'slow-3g', 'fast-3g', 'slow-4g', 'none']).optional().describe('Network'),
    cpu_slowdown: z.number().min(1).max(20).optional().describe('CPU ×slower'),
    geolocation: z
      .object({ latitude: z.number().min(-90).max(90), longitude: z.number().min(-180).max(180) })
      .optional()
      .describe('Position'),
    timezone: z.string().min(1).max(64).optional().describe('IANA timezone'),
    locale: z.string().min(2).max(35).optional().describe('BCP 47 locale'),
    reset: z.boolean().default(false).describe('Clear first'),
    tab: tabArgument,
  },
  output: pageOutput,
  annotations: { ...browse, idempotentHint: true },
  async run(input, context) {
    // Chromium takes an unknown timezone without a word: checked here, with Node's own ICU.
    if (input.timezone)
      try {
        new Intl.DateTimeFormat('en', { timeZone: input.timezone })
      } catch {
        throw new ToolError('invalid_argument', `Unknown timezone ${JSON.stringify(input.timezone)}`, {
          hint: 'An IANA name such as Europe/Paris.',
        })
      }
    if (input.locale)
      try {
        Intl.getCanonicalLocales(input.locale)
      } catch {
        throw new ToolError('invalid_argument', `Not a locale: ${JSON.stringify(input.locale)}`, {
          hint: 'Like de-DE.',
        })
      }
    return onTab(context, input.tab, async (tab) => {
      const done: string[] = []
      if (input.reset) {
        await send(tab, 'Emulation.clearDeviceMetricsOverride')
        await send(tab, 'Emulation.setEmulatedMedia', { features: [] })
        await send(tab, 'Emulation.setCPUThrottlingRate', { rate: 1 })
        await send(tab, 'Emulation.clearGeolocationOverride')
        await send(tab, 'Emulation.setTimezoneOverride', { timezoneId: '' })
        await send(tab, 'Emulation.setLocaleOverride', {})
        await send(tab, 'Network.emulateNetworkConditions', NETWORKS.none)
        done.push('reset')
      }
      const device = input.device ? DEVICES[input.device] : undefined
      const size = input.viewport?.split('x').map(Number)
      if (device || size) {
        const metrics = {
          ...(device ?? DEVICES.desktop),
          ...(size ? { width: size[0], height: size[1] } : {}),
        }
        await send(tab, 'Emulation.setDeviceMetricsOverride', metrics)
        await send(tab, 'Emulation.setTouchEmulationEnabled', { enabled: metrics.mobile })
        done.push(`viewport ${metrics.width}x${metrics.height}${metrics.mobile ? ' (mobile, touch)' : ''}`)
      }
      const features: Array<{ name: string; value: string }> = []
      if (input.color_scheme) features.push({ name: 'prefers-color-scheme', value: input.color_scheme })
      if (input.reduced_motion !== undefined)
        features.push({
          name: 'prefers-reduced-motion',
          value: input.reduced_motion ? 'reduce' : 'no-preference',
        })
      if (features.length) {
        await send(tab, 'Emulation.setEmulatedMedia', { features })
        done.push(features.map((feature) => `${feature.name}: ${feature.value}`).join(', '))
      }
      if (input.network) {
        await send(tab, 'Network.enable')
        await send(tab, 'Network.emulateNetworkConditions', NETWORKS[input.network])
        done.push(`network ${input.network}`)
      }
      if (input.cpu_slowdown !== undefined) {
        await send(tab, 'Emulation.setCPUThrottlingRate', { rate: input.cpu_slowdown })
        done.push(`CPU ${input.cpu_slowdown}× slower`)
      }
      if (input.geolocation) {
        // Only the page's own origin is granted the position, and only the one given here.
        const origin = new URL(tab.page.url()).origin
        if (origin !== 'null') await tab.page.browserContext().overridePermissions(origin, ['geolocation'])
        await send(tab, 'Emulation.setGeolocationOverride', { ...input.geolocation, accuracy: 10 })
        done.push(`geolocation ${input.geolocation.latitude}, ${input.geolocation.longitude}`)
      }
      if (input.timezone) {
        await send(tab, 'Emulation.setTimezoneOverride', { timezoneId: input.timezone })
        done.push(`timezone ${input.timezone}`)
      }
      if (input.locale) {
        await send(tab, 'Emulation.setLocaleOverride', { locale: input.locale })
        done.push(`locale ${input.locale}`)
      }
      if (!done.length)
        throw new ToolError('invalid_argument', 'Nothing to emulate', {
          hint: 'Give device, color_scheme, network…',
        })
      return {
        data: pageInfo(tab),
        text: `Tab ${tab.id} now emulates: ${done.join('; ')}. Reload to apply it to what the page computed at load.`,
      }
    })
  },
})
