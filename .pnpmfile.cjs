// Publishing hook. A server's bin is one bundled file with @keel-mcp/core, the MCP SDK, zod and the
// packages named in `keel.bundle` inlined (see tools/bundle). Listing those as runtime
// dependencies would make every `npx -y @keel-mcp/server-<name>` download and install ~30 MB it
// never loads. So the published manifest moves them to `keel.inlined` (name → range, a record of
// what the bundle was built from), while the repository keeps `"@keel-mcp/core": "workspace:^"`
// so that changesets still releases every server when core changes.
function beforePacking(pkg) {
  if (!pkg.bin || pkg.scripts?.build !== 'keel-bundle' || !pkg.dependencies) return pkg
  const inlined = new Set(['@keel-mcp/core', 'zod', ...(pkg.keel?.bundle ?? [])])
  const moved = {}
  for (const [name, range] of Object.entries(pkg.dependencies)) {
    if (inlined.has(name)) {
      moved[name] = range
      delete pkg.dependencies[name]
    }
  }
  if (Object.keys(moved).length) pkg.keel = { ...pkg.keel, inlined: moved }
  if (Object.keys(pkg.dependencies).length === 0) delete pkg.dependencies
  return pkg
}

module.exports = { hooks: { beforePacking } }
