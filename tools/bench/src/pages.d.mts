/** The 1 MiB catalogue page of the browser bench (see pages.mjs). */
export function cataloguePage(): string
