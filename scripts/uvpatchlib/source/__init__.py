"""Source: obtain the pinned libuv tree (git, tarball, Debian package or
the cache) and verify it by its git tree id; find and fetch the upstream
commits a rebase or a pull request goes onto (fetch.py, all the fetching;
gitref.py, naming commits)."""
