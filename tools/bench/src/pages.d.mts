/** The 1 MiB catalogue page of the browser bench (see pages.mjs). */
export function cataloguePage(): string
/** The sign-up form page of the browser bench. */
export function formPage(): string
