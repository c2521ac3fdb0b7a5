/** The 1 MiB catalogue page of the browser bench (see pages.mjs). */
export function cataloguePage(): string
/** The sign-up form page of the browser bench. */
export function formPage(): string
/** A one-page library reference: a sidebar of links and `functions` sections of prose (see pages.mjs). */
export function docsPage(functions?: number): string
