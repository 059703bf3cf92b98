"""The words of a patch for upstream: its commit message without this
fork's bookkeeping (series/message.py), and a pull-request description
made from it.

Pure text in, text out: no git, no files, so it is easy to test. Nothing
here names this project or its tool: upstream reviews libuv's change,
its own tests and the figures of its message.
"""

import re

from ..series.message import REF_TRAILER, SIGNED_OFF, clean_message

_TRAILER = re.compile(r"^[A-Za-z][A-Za-z-]*: \S")
_KEEP_IN_PR = re.compile(r"^(Fixes|Refs|Bug):", re.I)
# Paragraphs that say what the change does, in libuv's usual wording.
_FIX_START = re.compile(
    r"^(Fix|Fixes the|This (commit|patch|change)|Make|Use|Add|Bound|Limit|"
    r"Cap|Stop|Drop|Instead|Now|With this|The fix|Solution|Change|Check|"
    r"Handle|Return|Keep|Move|Avoid|Call|Reset|Clamp|Set|Teach|Let)\b")
_TEST_IMPL = re.compile(r"^TEST_IMPL\((\w+)\)")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")
# Where a pull request or issue of libuv's is named: GitHub links #N.
_LIBUV_REF = re.compile(r"^https://github\.com/libuv/libuv/(pull|issues)/"
                        r"(\d+)/?$")
# Files that say how to build, not what libuv does.
_BUILD_LISTS = ("CMakeLists.txt", "Makefile.am")
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$")


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


def upstream_body(body, who):
    """The message lines as they go upstream: without this fork's fields,
    signed off by ``who`` (``Name <email>``) alone."""
    lines = [ln for ln in clean_message(body) if not SIGNED_OFF.match(ln)]
    while lines and not lines[-1].strip():
        lines.pop()
    sign = "Signed-off-by: " + who
    paras = _paragraphs(lines)
    if paras and all(_TRAILER.match(ln) for ln in paras[-1]):
        return lines + [sign]
    return lines + ["", sign]


def _by_file(patch_text):
    """(path, line) for each line of the patch after its diff header."""
    path = None
    for line in patch_text.split("\n"):
        m = _DIFF.match(line)
        if m:
            path = m.group(2)
        elif path:
            yield path, line


def _is_change(line):
    return line[:1] in "+-" and not line.startswith(("+++ ", "--- "))


def code_lines(patch_text):
    """Lines the patch adds or removes outside test/ and docs/: what a
    reviewer has to judge."""
    return sum(1 for path, line in _by_file(patch_text)
               if _is_change(line) and not path.startswith(("test/",
                                                            "docs/")))


def _test_bodies(text):
    """[(name, first line, last line)] of the TEST_IMPLs of a test file,
    1-based; a body ends at the first "}" in column 0."""
    lines = text.split("\n")
    bodies = []
    for n, line in enumerate(lines, 1):
        m = _TEST_IMPL.match(line)
        if m:
            end = next((k for k in range(n, len(lines) + 1)
                        if lines[k - 1] == "}"), len(lines))
            bodies.append((m.group(1), n, end))
    return bodies


def own_tests(diff_text, new_text_of):
    """[(file, test name)] of libuv's tests that a diff adds or changes:
    the TEST_IMPLs it adds under test/ and, in a test file it changes,
    those whose body a changed line falls in; a change outside every
    body (a helper they share) counts for all of the file's tests.
    ``new_text_of(path)``: the file's text after the diff."""
    changed = {}   # path: (added names, new-side lines changed, is new)
    path = new_line = None
    for line in diff_text.split("\n"):
        m = _DIFF.match(line)
        if m:
            path = m.group(2)
            if path.startswith("test/") and path.endswith(".c"):
                changed.setdefault(path, ([], set(), False))
            continue
        if path not in changed:
            continue
        if line == "--- /dev/null":
            changed[path] = (changed[path][0], changed[path][1], True)
            continue
        m = _HUNK.match(line)
        if m:
            new_line = int(m.group(1))
            continue
        if new_line is None or line.startswith(("+++ ", "--- ", "\\")):
            continue
        if line.startswith("+"):
            t = _TEST_IMPL.match(line[1:])
            if t:
                changed[path][0].append(t.group(1))
            changed[path][1].add(new_line)
            new_line += 1
        elif line.startswith("-"):
            changed[path][1].add(new_line)
        else:
            new_line += 1
    found = []
    for path, (added, lines, new) in changed.items():
        names = list(added)
        if not new and lines:
            bodies = _test_bodies(new_text_of(path) or "")
            hit = [name for name, a, b in bodies
                   if any(a <= n <= b for n in lines)]
            inside = all(any(a <= n <= b for _, a, b in bodies)
                         for n in lines)
            names += hit if inside else [name for name, _, _ in bodies]
        for name in names:
            if (path, name) not in found:
                found.append((path, name))
    return found


def test_part(diff_text):
    """The part of a diff (made with little context) that puts a change's
    tests on the unpatched tree: every file under test/, and the hunks of
    the build lists whose every changed line names a file under test/."""
    out, keep, hunk, header = [], False, None, []

    def flush():
        if hunk and all("test/" in ln for ln in hunk[1:] if _is_change(ln)):
            out.extend(header)
            header[:] = []
            out.extend(hunk)

    for line in diff_text.split("\n"):
        m = _DIFF.match(line)
        if m:
            flush()
            hunk, header = None, []
            path = m.group(2)
            keep = "all" if path.startswith("test/") else \
                "hunks" if path in _BUILD_LISTS else None
            if keep == "all":
                out.append(line)
            else:
                header.append(line)
            continue
        if keep == "all":
            out.append(line)
        elif keep == "hunks":
            if line.startswith("@@"):
                flush()
                hunk = [line]
            elif hunk is not None:
                hunk.append(line)
            else:
                header.append(line)
    flush()
    text = "\n".join(out).rstrip("\n")
    return text + "\n" if text else ""


def _markdown_table(para):
    if all(ln.count("|") >= 2 for ln in para):
        return "\n".join(ln.strip() for ln in para)
    # An aligned plain-text table reads right only in a fixed font.
    return "```\n" + "\n".join(para) + "\n```"


def _join(paras):
    # Wrapped lines stay as written: Markdown joins them, and indented
    # blocks stay code.
    return "\n\n".join("\n".join(p) for p in paras)


def _sentences(paras):
    text = " ".join(" ".join(ln.strip() for ln in p) for p in paras)
    return re.split(r"(?<=[.!?])\s+(?=[A-Z0-9`(])", text)


def related(body):
    """["#N: what the message says of it"] for each pull request or issue
    of libuv's that a Fixes: or Refs: trailer names."""
    part = sections(body)
    prose = part["defect"] + part["fix"]
    out = []
    for line in part["trailers"]:
        m = REF_TRAILER.match(line)
        ref = m and _LIBUV_REF.match(m.group(2).strip())
        if not ref:
            continue
        number = ref.group(2)
        said = [s for s in _sentences(prose)
                if re.search(r"(?<![\w/])#?%s(?!\d)" % number, s)]
        kind = "pull request" if ref.group(1) == "pull" else "issue"
        out.append("#%s (%s, %s)%s" % (
            number, kind, m.group(1), ": " + " ".join(said) if said else ""))
    return out


def _cell(result):
    status, why = result
    text = status.lower() + (": " + why if why else "")
    return text.replace("|", "/")[:300]


def results_text(blocks):
    """What the change's tests gave, unpatched and patched; ``blocks``:
    None when they were not run, else [{"title", "columns" (unpatched,
    patched), "rows" [(test, (status, why), (status, why))], "notes"}]."""
    if blocks is None:
        return ["These tests were not run for this text; run them as "
                "above, with and without the change.", ""]
    text = []
    for block in blocks:
        text += [block["title"], ""]
        if block["rows"]:
            text += ["| test | %s | %s |" % tuple(block["columns"]),
                     "|---|---|---|"]
            text += ["| `%s` | %s | %s |" % (name, _cell(before),
                                             _cell(after))
                     for name, before, after in block["rows"]]
            text.append("")
        for note in block.get("notes", []):
            text += [note, ""]
    return text


def _reproduce(tests, base_label, base_ref, revert, system, stacked):
    if not tests:
        return ["The change adds or changes none of libuv's tests; the "
                "defect is described above (on %s)." % base_label, ""]
    names = [n for _, n in tests]
    files = sorted({f for f, _ in tests})
    where = ("On %s, with" % system) if system else "With"
    text = ["The change comes with its tests: %s (in %s). %s the change, "
            "on %s:" % (", ".join("`%s`" % n for n in names),
                        ", ".join("`%s`" % f for f in files), where,
                        base_label),
            "", "```sh", "cmake -B build -DBUILD_TESTING=ON",
            "cmake --build build"]
    text += ["build/uv_run_tests_a %s" % n for n in names]
    text += ["```", ""]
    if revert:
        text += ["To see them fail without %s, keep the tests, put back "
                 "the unpatched sources, rebuild and run them again:"
                 % ("the changes of this branch" if stacked else "the fix"),
                 "", "```sh",
                 "git checkout %s -- %s" % (base_ref, " ".join(revert)),
                 "cmake --build build", "```", ""]
    return text


def pull_request(subject, body, base_label, tests=(), depends=(),
                 results=None, base_ref=None, revert=(), system=None):
    """The Markdown description of one patch's pull request.

    ``tests``: [(file, name)] of the change's own tests; ``depends``: the
    subjects of the changes it builds on; ``results``: what its tests
    gave (see results_text; None: not run); ``revert``: the source files
    to check out from ``base_ref`` to see the tests fail; ``system``:
    where the change's code runs when that is one system ("Windows")."""
    while body and not body[0].strip():
        body = body[1:]
    part = sections(body)
    text = ["# " + subject, ""]
    if depends:
        one = len(depends) == 1
        text += ["This builds on %s, whose pull request%s go%s first; %s "
                 "first on this branch too, so that this one applies:"
                 % ("another change" if one else "other changes",
                    "" if one else "s", "es" if one else "",
                    "its commit comes" if one else "their commits come"),
                 ""]
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
    links = related(body)
    if links:
        text += ["## Related", ""] + ["- " + ln for ln in links] + [""]
    text += ["## How to reproduce", ""]
    text += _reproduce(list(tests), base_label, base_ref, list(revert),
                       system, bool(depends))
    if tests:
        text += ["## What the tests show", ""] + results_text(results)
    refs = [ln for ln in part["trailers"] if _KEEP_IN_PR.match(ln)]
    if refs:
        text += ["- " + ln for ln in refs] + [""]
    return "\n".join(text)
