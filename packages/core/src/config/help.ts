import { AUTH_FLAGS } from '../auth-config.js'
import { OBSERVE_FLAGS } from '../observe-config.js'
import { commonFlagsOf } from './flags.js'
import type { ConfigSource, OptionSpec } from './types.js'

// The `--help` text: the server's own options and toolsets first, then the common, OAuth and
// operations flags, each with its env vars.

function flagLine(
  flag: string,
  type: 'string' | 'boolean',
  placeholder: string | undefined,
  env: string[] | string | undefined,
  description: string,
) {
  const left = `  --${flag}${type === 'string' ? ` <${placeholder ?? 'value'}>` : ''}`
  const envs = typeof env === 'string' ? [env] : (env ?? [])
  const right = `${description}${envs.length ? ` [env ${envs.join(', ')}]` : ''}`
  return left.length >= 30 ? `${left}\n${' '.repeat(30)}${right}` : `${left.padEnd(30)}${right}`
}

/** The `--help` text of a server. */
export function helpText<C>(source: ConfigSource<C>): string {
  const bin = source.bin ?? `mcp-server-${source.name}`
  const usage = `Usage: ${bin}${source.positionals ? ` [${source.positionals.name}...]` : ''} [options]`
  const lines = [`${bin} ${source.version} — ${source.description}`, '', usage]
  if (source.positionals) lines.push('', `  ${source.positionals.name}: ${source.positionals.description}`)
  const serverOptions = Object.values((source.options ?? {}) as Record<string, OptionSpec<unknown>>)
  if (serverOptions.length) {
    lines.push('', 'Server options:')
    for (const spec of serverOptions)
      lines.push(flagLine(spec.flag, spec.type, spec.placeholder, spec.env, spec.description))
  }
  if (source.toolsets) {
    lines.push('', 'Toolsets:')
    for (const [name, description] of Object.entries(source.toolsets))
      lines.push(`  ${name.padEnd(28)}${description}`)
  } else {
    lines.push('', 'Toolsets: none (all tools are served); choose tools with --tools and --exclude-tools.')
  }
  lines.push('', 'Common options:')
  for (const flag of commonFlagsOf(source)) {
    // A server without toolsets does not offer --toolsets as if it had some.
    if (flag.key === 'toolsets' && !source.toolsets) continue
    lines.push(flagLine(flag.flag, flag.type, flag.placeholder, flag.env, flag.description))
  }
  lines.push('', 'OAuth 2.1 resource server (HTTP):')
  for (const flag of AUTH_FLAGS)
    lines.push(flagLine(flag.flag, flag.type, flag.placeholder, flag.env, flag.description))
  lines.push('', 'Operations (off unless set):')
  for (const flag of OBSERVE_FLAGS)
    lines.push(flagLine(flag.flag, flag.type, flag.placeholder, flag.env, flag.description))
  lines.push('', 'HTTP serves MCP at /mcp, a health check at /healthz and readiness at /readyz.')
  if (source.helpFooter) lines.push('', source.helpFooter)
  return `${lines.join('\n')}\n`
}
