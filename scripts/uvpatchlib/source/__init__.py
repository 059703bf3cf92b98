"""Source: obtain the pinned libuv tree (git, tarball, Debian package or
the cache) and verify it by its git tree id; plus the safe file
operations every later stage uses."""
