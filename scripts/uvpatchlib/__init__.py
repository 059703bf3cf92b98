"""uvpatch: keep libuv as a verified, reproducible patch series.

The sub-packages are the pipeline's stages, in order: source, series,
build, verify, bench, upstream. Each imports only its own stage, the
stages before it and the shared basics here (errors, console, subproc,
fsutil); cli sits on top.
"""

VERSION = "0.1.0"
