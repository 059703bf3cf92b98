"""The words of a patch for upstream: its commit message without this
fork's bookkeeping, and a pull-request description made from it.

Pure text in, text out: no git, no files, so it is easy to test.
"""

import re

# DEP-3 and Yocto fields that describe this fork's copy of the patch, not
# the change: they do not belong in upstream's history. Fixes:, Refs:,
# PR-URL:, Reviewed-By: and Signed-off-by: stay.
_LOCAL_FIELD = re.compile(
    r"^(Upstream-Status|Forwarded|Last-Update|Origin|Applied-Upstream|"
    r"Bug-[A-Za-z]+|Patch-Name|Gbp-Pq|DEP-3|Description):", re.I)
_TRAILER = re.compile(r"^[A-Za-z][A-Za-z-]*: \S")
_KEEP_IN_PR = re.compile(r"^(Fixes|Refs|Bug):", re.I)
# Paragraphs that say what the change does, in libuv's usual wording.
_FIX_START = re.compile(
    r"^(Fix|Fixes the|This (commit|patch|change)|Make|Use|Add|Bound|Limit|"
    r"Cap|Stop|Drop|Instead|Now|With this|The fix|Solution|Change|Check|"
    r"Handle|Return|Keep|Move|Avoid|Call|Reset|Clamp|Set|Teach|Let)\b")
_TEST_IMPL = re.compile(r"^\+TEST_IMPL\((\w+)\)")
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$")
# libuv names a commit, an issue or a pull request in a trailer by its
# URL (https://github.com/libuv/libuv/commit/HASH, .../issues/N,
# .../pull/N): a bare hash is not a link on GitHub, and a short one can
# become ambiguous.
_REF_TRAILER = re.compile(r"^(Fixes|Refs):\s*(.*)$", re.I)
_URL = re.compile(r"^https?://\S+$")
# This project's tool: upstream's history and reviewers have no use for
# it. The fork's own sign-off is replaced on the way out, so it is not
# looked at.
_TOOL = re.compile(r"[\w./-]*uvpatch[\w./-]*", re.I)
_SIGNED_OFF = re.compile(r"^Signed-off-by: ", re.I)


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
        m = _REF_TRAILER.match(line)
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
    lines = [ln for ln in clean_message(body) if not _SIGNED_OFF.match(ln)]
    problems = trailer_problems(lines)
    named = tool_names("\n".join([subject] + lines))
    if named:
        problems.append("names this project's tool (%s): upstream's "
                        "history has no use for it" % ", ".join(named))
    return problems


def clean_patch(text, body):
    """``text`` (a format-patch file) with its message body replaced by
    ``body`` (lines)."""
    lines = text.split("\n")
    start = lines.index("") + 1          # end of the mail header
    end = lines.index("---", start)      # start of the diffstat
    return "\n".join(lines[:start] + body + [""] + lines[end:])


def _paragraphs(lines):
    paras, cur = [], []
    for line in lines + [""]:
        if line.strip():
            cur.append(line)
        elif cur:
            paras.append(cur)
            cur = []
    return paras


def _is_table(para):
    if all(ln.count("|") >= 2 for ln in para) and len(para) >= 2:
        return True
    head = para[0].lower()
    return len(para) >= 2 and "before" in head and "after" in head


def sections(body):
    """{defect, fix, table, trailers} from the message body lines (the
    subject excluded): lists of paragraphs (each a list of lines)."""
    paras = _paragraphs(body)
    out = {"defect": [], "fix": [], "table": [], "trailers": []}
    in_fix = False
    for i, para in enumerate(paras):
        if all(_TRAILER.match(ln) for ln in para):
            out["trailers"].extend(para)
        elif _is_table(para):
            # An introduction ("Measured with ...:") goes with its table.
            prev = out["fix"] if in_fix else out["defect"]
            if prev and prev[-1][-1].rstrip().endswith(":"):
                out["table"].append(prev.pop())
            out["table"].append(para)
        else:
            if not in_fix and _FIX_START.match(para[0]) and out["defect"]:
                in_fix = True
            (out["fix"] if in_fix else out["defect"]).append(para)
    if not out["fix"] and len(out["defect"]) > 1:
        out["fix"] = out["defect"][1:]
        out["defect"] = out["defect"][:1]
    return out


def _by_file(patch_text):
    """(path, line) for each line of the patch after its diff header."""
    path = None
    for line in patch_text.split("\n"):
        m = _DIFF.match(line)
        if m:
            path = m.group(2)
        elif path:
            yield path, line


def added_tests(patch_text):
    """[(file, test name)] of the TEST_IMPLs the patch adds under test/."""
    found = []
    for path, line in _by_file(patch_text):
        m = _TEST_IMPL.match(line)
        if m and path.startswith("test/"):
            found.append((path, m.group(1)))
    return found


def _markdown_table(para):
    if all(ln.count("|") >= 2 for ln in para):
        return "\n".join(ln.strip() for ln in para)
    # An aligned plain-text table reads right only in a fixed font.
    return "```\n" + "\n".join(para) + "\n```"


def _join(paras):
    # Wrapped lines stay as written: Markdown joins them, and indented
    # blocks stay code.
    return "\n\n".join("\n".join(p) for p in paras)


def changed_tests(patch_text):
    """The files under test/ that the patch changes but does not add."""
    found = []
    for path, line in _by_file(patch_text):
        if line.startswith("--- a/test/") and path.endswith(".c") and \
                path not in found:
            found.append(path)
    return found


def _evidence_text(evidence):
    command, when, lines = evidence
    if not lines:
        return ["The regression programs of the series that carries this "
                "patch show it base vs patched: `%s` (no run of it was "
                "found here to quote)." % command, ""]
    text = ["What the series' regression programs gave, unpatched vs "
            "patched, run by `%s` (%s):" % (command, "; ".join(when)), ""]
    text += ["| case | unpatched | patched |", "|---|---|---|"]
    for target, case, got in lines:
        def cell(status, notes, why=""):
            said = "; ".join(notes) or why
            return ("%s: %s" % (status.lower(), said) if said
                    else status.lower()).replace("|", "/")[:300]
        text.append("| `%s` (%s) | %s | %s |" % (
            case, target,
            cell(got["base"], got["base_notes"], got.get("base_why", "")),
            cell(got["patched"], got["patched_notes"])))
    return text + [""]


def pull_request(subject, body, patch_text, base_label, depends=(),
                 evidence=None):
    """The Markdown description of one patch's pull request; ``depends``:
    the subjects of the changes it builds on; ``evidence``: what the
    series' own regression programs gave, as upstream._evidence makes it."""
    while body and not body[0].strip():
        body = body[1:]
    part = sections(body)
    text = ["# " + subject, ""]
    if depends:
        text += ["This builds on %s, which %s first (the branch holds "
                 "%s too):" % ("another change" if len(depends) == 1
                               else "other changes",
                               "goes" if len(depends) == 1 else "go",
                               "it" if len(depends) == 1 else "them"), ""]
        text += ["- " + d for d in depends] + [""]
    text += ["## The defect", "", _join(part["defect"]) or subject, ""]
    text += ["## The fix", "",
             _join(part["fix"]) or "See the commit: " + subject + ".", ""]
    if part["table"]:
        text += ["## Measurements", ""]
        for para in part["table"]:
            if _is_table(para):
                text += [_markdown_table(para), ""]
            else:
                text += [" ".join(ln.strip() for ln in para), ""]
    text += ["## How to reproduce", ""]
    tests = added_tests(patch_text)
    changed = changed_tests(patch_text)
    if tests:
        names = sorted({name for _, name in tests})
        files = sorted({f for f, _ in tests})
        text += ["The patch adds the test%s %s (in %s). Build the test "
                 "runner and run %s before and after the change (on %s):"
                 % ("s" if len(names) > 1 else "",
                    ", ".join("`%s`" % n for n in names),
                    ", ".join("`%s`" % f for f in files),
                    "them" if len(names) > 1 else "it", base_label), "",
                 "```sh",
                 "cmake -B build -DBUILD_TESTING=ON",
                 "cmake --build build"]
        text += ["build/uv_run_tests_a %s" % n for n in names]
        text += ["```", ""]
    elif changed:
        text += ["The patch changes the tests in %s so that they check "
                 "the fix; run them before and after the change (on %s)."
                 % (", ".join("`%s`" % f for f in changed), base_label), ""]
    else:
        text += ["The patch adds no test to libuv's suite; the defect is "
                 "described above (on %s)." % base_label, ""]
    if evidence is not None:
        text += _evidence_text(evidence)
    refs = [ln for ln in part["trailers"] if _KEEP_IN_PR.match(ln)]
    if refs:
        text += ["- " + ln for ln in refs] + [""]
    return "\n".join(text)
