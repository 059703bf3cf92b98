"""Report: the benchmark; measure base against patched, analyse the
figures and render them as Markdown and SVG for a pull request."""
