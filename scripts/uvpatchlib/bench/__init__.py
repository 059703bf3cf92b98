"""Bench: the benchmarks; measure base against patched (timers, UDP,
the tool itself, DNS servers), analyse the figures and render them as
Markdown and SVG for a pull request."""
