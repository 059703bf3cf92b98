"""The end of a rebase: the series refreshed against the new base from
the merged commits, deps.json rewritten, out/rebase moved to
out/<base>/src, and a line per patch saying what became of it
(unchanged, moved, changed by the merge, with the change, dropped).
"""

import difflib
import json
import os
import re

from ... import console, subproc
from ...fsutil import remove_tree, replace_dir, write_atomic
from ..apply import STATE_FILE, local_changes, read_state
from ..manifest import validate
from ..refresh import refresh
from .state import OLD_REFS, PATCHES, STATE, head


def finish(manifest, out, work, state):
    """Refreshes the series against the new base from the commits in
    ``work``, rewrites deps.json, and makes ``work`` out/<base>/src (unless
    that holds work of its own); returns refresh's (changed, removed)."""
    onto = state["onto"]
    last = head(work)
    applied = [p for p in state["patches"] if p["status"] == "applied"]
    by_file = {e["file"]: e for e in manifest.series}
    write_atomic(os.path.join(work, ".git", STATE_FILE), json.dumps({
        "tree": onto["upstream"]["tree"], "base": state["base"],
        "patches": [], "head": last}, indent=2) + "\n")
    target = validate(manifest.doc_with(onto), manifest.root,
                      check_files=False, base=onto["name"])
    console.step("rebase: refresh")
    before = {e["file"]: _read(manifest.patch_path(e))
              for e in manifest.series}
    changed, removed = refresh(target, out, src=work,
                               priors=[by_file[p["file"]] for p in applied])
    subproc.delete_refs(OLD_REFS, work)
    remove_tree(os.path.join(work, ".git", PATCHES))
    os.unlink(os.path.join(work, ".git", STATE))

    src = os.path.join(out, target.name, "src")
    kept = os.path.isdir(src) and local_changes(src, read_state(src))
    if kept:
        console.note("%s has work of its own: kept; the rebased tree is "
                     "in %s" % (console.shown(src), console.shown(work)))
    else:
        # A new base has no folder in out/ yet.
        os.makedirs(os.path.dirname(src), exist_ok=True)
        replace_dir(work, src)
    _report(manifest, target, state, before, None if kept else src)
    return changed, removed


def _read(path):
    with open(path, encoding="utf-8", errors="surrogateescape",
              newline="") as f:
        return f.read()


def _essence(text):
    """A patch without what a new base changes by itself: blob ids and
    line numbers."""
    keep = []
    for line in text.split("\n"):
        if line.startswith("index "):
            continue
        keep.append(re.sub(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", "@@", line))
    return "\n".join(keep)


def _report(manifest, target, state, before, src):
    """Says what became of each patch; ``src`` is where a changed one is
    mended, None when the rebased tree could not go there."""
    old_up, new_up = manifest.upstream, state["onto"]["upstream"]
    print("base %s: upstream %s (%s) -> base %s: %s (%s)" % (
        manifest.name, old_up["tag"], old_up["commit"][:12], target.name,
        new_up["tag"], new_up["commit"][:12]), flush=True)
    names = sorted(n for n in os.listdir(target.patch_dir)
                   if n.endswith(".patch"))
    applied = [p for p in state["patches"] if p["status"] == "applied"]
    new_of = dict(zip([p["file"] for p in applied], names))
    for item in state["patches"]:
        old = item["file"]
        if item["status"] == "dropped":
            print("%s: dropped: empty on the new base (already upstream)"
                  % old, flush=True)
            continue
        if item["status"] == "upstream":
            print("%s: dropped: already upstream (%s is in %s)"
                  % (old, item["commit"][:12], new_up["tag"]), flush=True)
            continue
        new = new_of[old]
        text = _read(os.path.join(target.patch_dir, new))
        was, now = _essence(before[old]), _essence(text)
        if text == before[old]:
            how = "unchanged"
        elif now == was:
            how = "same change, moved (line numbers or blob ids)"
        else:
            how = "changed by the merge, as below"
            if src:
                how += "; if it is wrong, mend it in %s and `scripts/" \
                       "uvpatch refresh%s`" % (console.shown(src),
                                               target.base_option)
            # The patch file may be rewritten in place: show the change.
            how += "".join("\n    " + line for line in difflib.unified_diff(
                was.split("\n"), now.split("\n"), old, new, lineterm="",
                n=1))
        print("%s%s: %s" % (old, " -> " + new if new != old else "", how),
              flush=True)
    for note in state["notes"]:
        print("deps.json: " + note, flush=True)
