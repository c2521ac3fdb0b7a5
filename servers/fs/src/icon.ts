// The server's icon (`serverInfo.icons`), shipped inline as an SVG data URI: clients fetch nothing.
export const icon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M1.75 4.25c0-.83.67-1.5 1.5-1.5h3l1.5 1.75h5c.83 0 1.5.67 1.5 1.5v6.25c0 .83-.67 1.5-1.5 1.5h-9.5c-.83 0-1.5-.67-1.5-1.5z" fill="none" stroke="#b45309" stroke-width="1.5" stroke-linejoin="round"/></svg>`
