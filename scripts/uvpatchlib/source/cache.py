"""The cache of verified trees: where it is (XDG_CACHE_HOME/uvpatch) and
what an entry holds (<tree id>/tree, source.json and, from git, the
upstream commit in upstream.git). fetch.py fills it."""

import json
import os

from ..errors import UvPatchError, EXIT_USAGE
from .extract import open_regular

_MAX_INFO = 1 << 16


class CacheEntry:
    """A verified pristine tree: ``tree_dir`` and, when the source was
    git, ``repo``, a shallow repository holding the upstream commit."""

    def __init__(self, path):
        self.path = path
        self.tree_dir = os.path.join(path, "tree")
        repo = os.path.join(path, "upstream.git")
        self.repo = repo if os.path.isdir(repo) else None
        # A regular file of a sane size: a FIFO here would hang every
        # fetch under the cache lock.
        with open_regular(os.path.join(path, "source.json")) as f:
            data = f.read(_MAX_INFO + 1)
        if len(data) > _MAX_INFO:
            raise ValueError("source.json is larger than %d bytes"
                             % _MAX_INFO)
        self.info = json.loads(data.decode("utf-8"))



def cache_root():
    """XDG_CACHE_HOME/uvpatch, else ~/.cache/uvpatch. A relative
    XDG_CACHE_HOME is ignored, as the XDG spec says: it would name a
    different cache in every working folder."""
    base = os.environ.get("XDG_CACHE_HOME")
    if base and not os.path.isabs(base):
        base = None
    if not base and os.name == "nt":
        base = os.environ.get("LOCALAPPDATA")
    if not base:
        home = os.path.expanduser("~")
        if not os.path.isabs(home) or os.environ.get("HOME") == "":
            raise UvPatchError(
                "no folder for the cache: XDG_CACHE_HOME is %s and HOME "
                "is empty" % ("relative (%r)" % os.environ["XDG_CACHE_HOME"]
                              if os.environ.get("XDG_CACHE_HOME")
                              else "not set"),
                hint="set XDG_CACHE_HOME to an absolute path (or HOME to "
                     "your home folder)", status=EXIT_USAGE)
        base = os.path.join(home, ".cache")
    return os.path.join(base, "uvpatch")
