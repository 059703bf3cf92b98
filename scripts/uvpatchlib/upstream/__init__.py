"""Upstream: turn the series into pull requests for libuv, one branch,
mbox and description per patch, each optionally built and tested alone."""
