"""Where a rebase goes: the deps.json entry of the base it becomes
(REF itself is found and fetched by source/fetch.py's fetch_ref).
"""

import copy
import os
import re

from ...fsutil import sha256_file

_VERSION = re.compile(r"^v?(\d+(?:\.\d+)+)$")


def base_entry(manifest, found, name):
    """deps.json's object for the new base, and notes to show."""
    label = found["label"]
    onto = copy.deepcopy(manifest.data)
    onto["name"] = name or re.sub(r"[^A-Za-z0-9._+-]", "-", label)
    if onto["name"] != manifest.name:
        # A new base says what it is for, and CI takes it up, by hand.
        onto.pop("for", None)
        onto.pop("ci", None)
    onto["upstream"].update(tag=label, commit=found["commit"],
                            tree=found["tree"])
    onto["sources"], notes = _sources(manifest, label, found["tarball"])
    return onto, notes


def _sources(manifest, label, tarball):
    """The sources for the new base. A tarball entry is kept only when
    the tarball given as --source is the one it names (its sha256 is then
    known); the others cannot be verified here and are dropped."""
    old = _VERSION.match(manifest.upstream["tag"])
    new = _VERSION.match(label)
    kept, notes = [], []
    for i, spec in enumerate(manifest.sources):
        if spec["kind"] == "git":
            kept.append(dict(spec))
            continue
        what = "sources[%d] (%s %s)" % (i, spec["kind"], spec["file"])
        if old and new and spec["kind"] == "archive":
            moved = {k: spec[k].replace(old.group(1), new.group(1))
                     for k in ("url", "file")}
            if tarball and os.path.basename(tarball) == moved["file"]:
                kept.append(dict(spec, sha256=sha256_file(tarball),
                                 **moved))
                notes.append("%s: now %s, sha256 of the given tarball"
                             % (what, moved["file"]))
                continue
        if new and tarball and spec["kind"] == "debian" and \
                os.path.basename(tarball) == "%s_%s.orig.tar.gz" % (
                    spec["package"], new.group(1)):
            # The right file, but Debian's revision and suite are not in
            # it: they cannot be made up.
            notes.append("dropped %s: %s is its orig tarball for %s "
                         "(sha256 %s), but Debian's version and suite for "
                         "it are unknown here; add the entry back by hand"
                         % (what, os.path.basename(tarball), label,
                            sha256_file(tarball)))
            continue
        notes.append("dropped %s: its sha256 is for %s and no tarball of "
                     "%s came with --source to verify; the git source "
                     "serves the new base" % (what, manifest.upstream["tag"],
                                              label))
    return kept, notes
