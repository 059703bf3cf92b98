"""A patch's message on its way upstream: this fork's own fields taken
out, and what keeps a message of our own from going as it is (check
lints it, upstream refuses it).

Pure text in, text out, like prtext, which builds the pull-request
description on these rules.
"""

import re

# DEP-3 and Yocto fields that describe this fork's copy of the patch, not
# the change: they do not belong in upstream's history. Fixes:, Refs:,
# PR-URL:, Reviewed-By: and Signed-off-by: stay.
_LOCAL_FIELD = re.compile(
    r"^(Upstream-Status|Forwarded|Last-Update|Origin|Applied-Upstream|"
    r"Bug-[A-Za-z]+|Patch-Name|Gbp-Pq|DEP-3|Description):", re.I)
# libuv names a commit, an issue or a pull request in a trailer by its
# URL (https://github.com/libuv/libuv/commit/HASH, .../issues/N,
# .../pull/N): a bare hash is not a link on GitHub, and a short one can
# become ambiguous.
REF_TRAILER = re.compile(r"^(Fixes|Refs):\s*(.*)$", re.I)
_URL = re.compile(r"^https?://\S+$")
# This project's tool: upstream's history and reviewers have no use for
# it. The fork's own sign-off is replaced on the way out, so it is not
# looked at.
_TOOL = re.compile(r"[\w./-]*uvpatch[\w./-]*", re.I)
SIGNED_OFF = re.compile(r"^Signed-off-by: ", re.I)


def clean_message(lines):
    """The message lines without this fork's fields; blank runs folded."""
    kept = [ln for ln in lines if not _LOCAL_FIELD.match(ln)]
    out = []
    for line in kept:
        if line.strip() == "" and (not out or out[-1].strip() == ""):
            continue
        out.append(line)
    while out and out[-1].strip() == "":
        out.pop()
    return out


def trailer_problems(lines):
    """Fixes:/Refs: trailers of ``lines`` that are not a URL, as
    sentences."""
    problems = []
    for line in lines:
        m = REF_TRAILER.match(line)
        if m and not _URL.match(m.group(2).strip()):
            problems.append(
                "'%s' is not a URL: libuv writes %s: https://github.com/"
                "libuv/libuv/commit/<full hash> (or .../issues/N, "
                ".../pull/N)" % (line.strip(), m.group(1)))
    return problems


def tool_names(text):
    """The words of ``text`` that name this project's tool."""
    return sorted(set(_TOOL.findall(text)))


def upstream_problems(subject, body):
    """What keeps a message of our own from going upstream as it is: a
    trailer in a form libuv does not use, a word about this project's
    tool. ``body``: the message lines as in the patch file (its DEP-3
    fields and sign-off are replaced on the way out, so they do not
    count)."""
    lines = [ln for ln in clean_message(body) if not SIGNED_OFF.match(ln)]
    problems = trailer_problems(lines)
    named = tool_names("\n".join([subject] + lines))
    if named:
        problems.append("names this project's tool (%s): upstream's "
                        "history has no use for it" % ", ".join(named))
    return problems
