// Composes an MCP Bundle manifest (manifest_version 0.3, the version desktop clients accept today)
// from a server's package.json and its servers/<slug>/mcpb.json, which says what a desktop user is
// asked for (user_config) and how those answers reach the server (arguments and environment).
export const MANIFEST_VERSION = '0.3'
export const ENTRY_POINT = 'server/dist/index.js'
const REPOSITORY = 'https://github.com/keel-mcp/keel'

/** The bundle manifest for server `slug`. */
export function bundleManifest({ slug, manifest, mcpb }) {
  const { mcp_config: mcpConfig = {}, ...described } = mcpb
  const engines = manifest.engines?.node ?? '>=20'
  return {
    manifest_version: MANIFEST_VERSION,
    name: `keel-${slug}`,
    display_name: described.display_name ?? manifest.name,
    version: manifest.version,
    description: manifest.description,
    ...(described.long_description ? { long_description: described.long_description } : {}),
    author: { name: 'The Keel authors', url: REPOSITORY },
    repository: { type: 'git', url: REPOSITORY },
    homepage: `${REPOSITORY}/tree/main/servers/${slug}`,
    documentation: `${REPOSITORY}/tree/main/servers/${slug}#readme`,
    support: `${REPOSITORY}/issues`,
    license: manifest.license,
    keywords: ['mcp', ...(described.keywords ?? [])],
    server: {
      type: 'node',
      entry_point: ENTRY_POINT,
      mcp_config: {
        command: 'node',
        args: [`\${__dirname}/${ENTRY_POINT}`, ...(mcpConfig.args ?? [])],
        env: mcpConfig.env ?? {},
      },
    },
    compatibility: {
      platforms: ['darwin', 'win32', 'linux'],
      runtimes: { node: engines.replace(/^>=\s*(\d+)$/, '>=$1.0.0') },
    },
    user_config: described.user_config ?? {},
  }
}

/**
 * What a desktop client runs for a bundle unpacked in `dir`, given the user's answers: `${__dirname}`
 * becomes the bundle's directory, `${user_config.key}` the answer (a list answer standing alone in
 * an argument becomes one argument per item), and an unanswered optional key its default or "".
 */
export function resolveLaunch(manifest, dir, answers = {}) {
  const config = manifest.server.mcp_config
  const value = (key) => {
    if (key in answers) return answers[key]
    const declared = manifest.user_config?.[key]
    if (!declared) throw new Error(`manifest names user_config.${key}, which it does not declare`)
    if (declared.required) throw new Error(`user_config.${key} is required`)
    return declared.default ?? ''
  }
  const substitute = (text) =>
    text.replace(/\$\{(__dirname|user_config\.([A-Za-z0-9_]+))\}/g, (_, whole, key) => {
      if (whole === '__dirname') return dir
      const answer = value(key)
      return Array.isArray(answer) ? answer.join(',') : String(answer)
    })
  const args = []
  for (const arg of config.args ?? []) {
    const alone = /^\$\{user_config\.([A-Za-z0-9_]+)\}$/.exec(arg)
    const answer = alone ? value(alone[1]) : undefined
    if (Array.isArray(answer)) args.push(...answer.map(String))
    else args.push(substitute(arg))
  }
  const env = Object.fromEntries(
    Object.entries(config.env ?? {}).map(([name, text]) => [name, substitute(text)]),
  )
  return { command: config.command, args, env }
}
