import { type OptionSpecs, z } from '@keel-mcp/core'

/** Optional capabilities, off unless named in --caps. */
export const CAPABILITIES = [
  'evaluate',
  'pdf',
  'downloads',
  'vision',
  'network',
  'devtools',
  'emulate',
] as const
export type Capability = (typeof CAPABILITIES)[number]

/** The browser server's own options (the common flags come from core). */
export interface BrowserOptions {
  executablePath: string | undefined
  headless: boolean
  headed: boolean
  viewport: { width: number; height: number }
  userDataDir: string | undefined
  cdpEndpoint: string | undefined
  allowRemoteCdp: boolean
  allowedOrigins: string[]
  blockedOrigins: string[]
  allowPrivateNetwork: boolean
  allowFileUrls: boolean
  caps: Capability[]
  downloadDir: string | undefined
  outputDir: string | undefined
  storageState: string | undefined
  uploadDirs: string[]
  timeoutNavigation: number
  timeoutAction: number
  snapshotMaxChars: number
  noSandbox: boolean
  maxContexts: number
  maxTabs: number
  maxMemory: number
}

const milliseconds = (fallback: number) =>
  z.coerce.number({ error: 'must be a number of milliseconds' }).int().min(100).max(600_000).default(fallback)

const origins = z.array(z.string().min(1).max(300)).default([])

export const options: OptionSpecs<BrowserOptions> = {
  executablePath: {
    flag: 'executable-path',
    env: 'PUPPETEER_EXECUTABLE_PATH',
    type: 'string',
    placeholder: 'path',
    description: "Chrome or Chromium to use (default: found in puppeteer's cache or the usual system paths).",
    schema: z.string().min(1).optional(),
  },
  headless: {
    flag: 'headless',
    type: 'boolean',
    description: 'Run without a window (the default; --headed wins).',
    schema: z.boolean().default(true),
  },
  headed: {
    flag: 'headed',
    env: 'BROWSER_HEADED',
    type: 'boolean',
    description: 'Show the browser window.',
    schema: z.boolean().default(false),
  },
  viewport: {
    flag: 'viewport',
    env: 'BROWSER_VIEWPORT',
    type: 'string',
    placeholder: 'WxH',
    description: 'Viewport size (default 1280x720).',
    schema: z
      .string()
      .regex(/^\d{2,5}x\d{2,5}$/, 'must look like 1280x720')
      .default('1280x720')
      .transform((value) => {
        const [width, height] = value.split('x').map(Number)
        return { width: width ?? 1280, height: height ?? 720 }
      })
      .refine(
        ({ width, height }) => width >= 100 && height >= 100 && width <= 7680 && height <= 4320,
        'must be between 100x100 and 7680x4320',
      ),
  },
  userDataDir: {
    flag: 'user-data-dir',
    env: 'BROWSER_USER_DATA_DIR',
    type: 'string',
    placeholder: 'dir',
    description: 'Persistent profile directory (default: a fresh temporary profile, removed on exit).',
    schema: z.string().min(1).optional(),
  },
  cdpEndpoint: {
    flag: 'cdp-endpoint',
    env: 'BROWSER_CDP_ENDPOINT',
    type: 'string',
    placeholder: 'url',
    description:
      "Attach to a running Chrome instead of launching one (ws://… or http://host:port of its --remote-debugging-port); loopback only unless --allow-remote-cdp. Sessions get contexts of their own, under this server's policy; the user's tabs are never touched.",
    schema: z.string().min(1).max(2000).optional(),
  },
  allowRemoteCdp: {
    flag: 'allow-remote-cdp',
    env: 'BROWSER_ALLOW_REMOTE_CDP',
    type: 'boolean',
    description:
      'Allow --cdp-endpoint on another machine (its DevTools port gives full control of that browser).',
    schema: z.boolean().default(false),
  },
  allowedOrigins: {
    flag: 'allowed-origins',
    env: 'BROWSER_ALLOWED_ORIGINS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description:
      'The only origins the browser may reach (https://example.com, http://127.0.0.1:8080, *.example.com); private ones named here are allowed.',
    schema: origins,
  },
  blockedOrigins: {
    flag: 'blocked-origins',
    env: 'BROWSER_BLOCKED_ORIGINS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description: 'Origins the browser never reaches; wins over every allow.',
    schema: origins,
  },
  allowPrivateNetwork: {
    flag: 'allow-private-network',
    env: 'BROWSER_ALLOW_PRIVATE_NETWORK',
    type: 'boolean',
    description: 'Allow loopback, private and link-local addresses (refused by default).',
    schema: z.boolean().default(false),
  },
  allowFileUrls: {
    flag: 'allow-file-urls',
    env: 'BROWSER_ALLOW_FILE_URLS',
    type: 'boolean',
    description: 'Allow file: URLs (refused by default).',
    schema: z.boolean().default(false),
  },
  caps: {
    flag: 'caps',
    env: 'BROWSER_CAPS',
    type: 'string',
    multiple: true,
    placeholder: 'a,b',
    description: `Optional capabilities, off by default: ${CAPABILITIES.join(', ')}.`,
    schema: z.array(z.enum(CAPABILITIES, { error: `must be among ${CAPABILITIES.join(', ')}` })).default([]),
  },
  outputDir: {
    flag: 'output-dir',
    env: 'BROWSER_OUTPUT_DIR',
    type: 'string',
    placeholder: 'dir',
    description: 'Where to_file writes snapshots, screenshots and PDFs (off when unset).',
    schema: z.string().min(1).optional(),
  },
  storageState: {
    flag: 'storage-state',
    env: 'BROWSER_STORAGE_STATE',
    type: 'string',
    placeholder: 'file',
    description: 'Cookies and localStorage to start every session with (a save_storage_state file).',
    schema: z.string().min(1).optional(),
  },
  downloadDir: {
    flag: 'download-dir',
    env: 'BROWSER_DOWNLOAD_DIR',
    type: 'string',
    placeholder: 'dir',
    description: 'With --caps downloads: where downloads are saved.',
    schema: z.string().min(1).optional(),
  },
  uploadDirs: {
    flag: 'upload-dir',
    env: 'BROWSER_UPLOAD_DIRS',
    type: 'string',
    multiple: true,
    placeholder: 'dir',
    description: 'Directories upload_file may take files from (upload_file is offered only with one).',
    schema: z.array(z.string().min(1)).default([]),
  },
  timeoutNavigation: {
    flag: 'timeout-navigation',
    env: 'BROWSER_TIMEOUT_NAVIGATION',
    type: 'string',
    placeholder: 'ms',
    description: 'Navigation time limit (default 30000).',
    schema: milliseconds(30_000),
  },
  timeoutAction: {
    flag: 'timeout-action',
    env: 'BROWSER_TIMEOUT_ACTION',
    type: 'string',
    placeholder: 'ms',
    description: 'Action time limit (default 5000).',
    schema: milliseconds(5_000),
  },
  snapshotMaxChars: {
    flag: 'snapshot-max-chars',
    env: 'BROWSER_SNAPSHOT_MAX_CHARS',
    type: 'string',
    placeholder: 'n',
    description: 'Snapshot size cap in characters (default 25000).',
    schema: z.coerce.number({ error: 'must be a number' }).int().min(1000).max(1_000_000).default(25_000),
  },
  maxContexts: {
    flag: 'max-contexts',
    env: 'BROWSER_MAX_CONTEXTS',
    type: 'string',
    placeholder: 'n',
    description: 'Browser contexts at once, one per HTTP session (default 8).',
    schema: z.coerce.number({ error: 'must be a number' }).int().min(1).max(256).default(8),
  },
  maxTabs: {
    flag: 'max-tabs',
    env: 'BROWSER_MAX_TABS',
    type: 'string',
    placeholder: 'n',
    description: 'Tabs per session, pop-ups included (default 20).',
    schema: z.coerce.number({ error: 'must be a number' }).int().min(1).max(1000).default(20),
  },
  maxMemory: {
    flag: 'max-memory',
    env: 'BROWSER_MAX_MEMORY',
    type: 'string',
    placeholder: 'MiB',
    description: "Chromium's memory (all its processes) above which no tab or context opens (default 2048).",
    schema: z.coerce.number({ error: 'must be a number of MiB' }).int().min(1).max(1_048_576).default(2048),
  },
  noSandbox: {
    flag: 'no-sandbox',
    env: 'BROWSER_NO_SANDBOX',
    type: 'boolean',
    description: "Disable Chromium's sandbox (automatic when running as root, where Chromium needs it).",
    schema: z.boolean().default(false),
  },
}

export const helpFooter = `Browser discovery: --executable-path or PUPPETEER_EXECUTABLE_PATH, then puppeteer's cache
(~/.cache/puppeteer), then the usual Chrome/Chromium paths. None installed? Run
  npx @puppeteer/browsers install chrome@stable

The browser starts on the first call that needs it. Refused by default: file:, chrome:, devtools:,
view-source:, javascript: and top-level data: URLs; loopback, private and link-local addresses
(also through DNS names and redirects, for pages and for every request they make).
--allowed-origins / --blocked-origins name the sites the browser may or may not reach (a block
holds for every name and spelling of the blocked address and port); the Origin header check for
MCP clients over HTTP is --http-allowed-origins here.`
