"""Pure rendering: plain data in, strings or rich renderables out. No I/O, no HTTP."""
