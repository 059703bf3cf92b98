"""uvpatch: keep libuv as a verified, reproducible patch series."""

VERSION = "0.1.0"
