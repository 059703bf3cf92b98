"""`scripts/uvpatch bases`: every base deps.json declares, side by
side."""

import os

from ..source.cache import cache_root
from ..source.fetch import describe_source, env_source
from .manifest import validate


def base_names(manifest):
    """`bases --names`: each base's name, a line each, in deps.json's
    order."""
    return "".join(b["name"] + "\n" for b in manifest.doc["bases"])


def ci_steps(manifest):
    """`bases --ci --base NAME`: the steps .ci/run takes on that base
    beyond the test command, a line each (deps.json's "ci")."""
    return "".join(step + "\n" for step in manifest.data.get("ci", []))


def describe_bases(manifest, cache=None):
    """The text of `scripts/uvpatch bases`: each base, what it is for,
    where its source comes from, and whether its tree is cached."""
    lines = []
    mirror = env_source()
    for data in manifest.doc["bases"]:
        base = validate(manifest.doc, manifest.root, check_files=False,
                        base=data["name"])
        up = base.upstream
        cached = os.path.isdir(os.path.join(cache or cache_root(),
                                            base.tree))
        lines.append("%s%s  %s %s, %d patches in patches/%s/"
                     % (base.name, " (default)" if base.is_default else "",
                        up["tag"], up["commit"][:12], len(base.series),
                        base.name))
        if "for" in data:
            lines.append("  for: %s" % data["for"])
        if data.get("ci"):
            lines.append("  in CI beyond the test command: %s"
                         % ", ".join(data["ci"]))
        lines.append("  tree %s: %s" % (
            base.tree, "cached in %s" % os.path.join(
                cache or cache_root(), base.tree) if cached
            else "not cached"))
        order = ["UVPATCH_SOURCE %s" % mirror] if mirror else []
        order += [describe_source(spec) for spec in base.sources]
        lines.append("  sources, in order after the cache: %s"
                     % "; ".join(order))
    return "\n".join(lines) + "\n"
