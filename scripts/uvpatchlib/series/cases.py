"""The regression programs of tests/regress and their cases, read from the
C sources, without building them.

A program is a *.c file or a folder of them (tests/uv-programs.cmake).
Its cases are the names in its `test_case NAME[] = { ... }` table: each
entry's first member, a string literal, or what a macro of the program
makes of one (an X-macro list whose entries stringize a name). Every
branch of an `#if` counts: a case that only one system builds is still
a case.
"""

import difflib
import glob
import os
import re

# One C token: a string or character literal, a comment, an identifier,
# a number, or a punctuator (## and # among them).
_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|'
                    r'//[^\n]*|[A-Za-z_]\w*|\d\w*|##|\S', re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?"
                     r"(.*)$", re.M)
_TABLE = re.compile(r"\btest_case\s+\w+\s*\[\s*\]\s*=\s*\{")
_DEPTH = 32


def programs(root):
    """{program: [its *.c files]} of tests/regress."""
    folder = os.path.join(root, "tests", "regress")
    found = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.c"))):
        found[os.path.splitext(os.path.basename(path))[0]] = [path]
    for path in sorted(glob.glob(os.path.join(folder, "*", "*.c"))):
        found.setdefault(os.path.basename(os.path.dirname(path)),
                         []).append(path)
    return found


def _read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        # Continued lines are one line, as the preprocessor sees them.
        return f.read().replace("\\\r\n", " ").replace("\\\n", " ")


def _tokens(text):
    return [t for t in _TOKEN.findall(text)
            if not t.startswith(("/*", "//"))]


def _macros(texts):
    """{name: (params or None, body tokens)} of the #defines in
    ``texts``; the first definition of a name wins."""
    found = {}
    for text in texts:
        text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
        for m in _DEFINE.finditer(text):
            params = None
            if m.group(2) is not None:
                params = [p.strip() for p in m.group(2)[1:-1].split(",")
                          if p.strip()]
            found.setdefault(m.group(1), (params, _tokens(m.group(3))))
    return found


def _arguments(tokens, i):
    """The arguments of a macro call whose "(" is tokens[i]: (list of
    token lists, index after the ")"), or None when it is not closed."""
    args, current, depth = [], [], 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if t == "(":
            depth += 1
            if depth == 1:
                continue
        elif t == ")":
            depth -= 1
            if depth == 0:
                args.append(current)
                return args, j + 1
        elif t == "," and depth == 1:
            args.append(current)
            current = []
            continue
        current.append(t)
    return None


def _substitute(params, body, args):
    by_name = dict(zip(params, args))
    out = []
    i = 0
    while i < len(body):
        t = body[i]
        if t == "#" and i + 1 < len(body) and body[i + 1] in by_name:
            out.append('"%s"' % " ".join(by_name[body[i + 1]]))
            i += 2
            continue
        if t == "##" and out and i + 1 < len(body):
            nxt = by_name.get(body[i + 1], [body[i + 1]])
            out[-1] = out[-1] + (nxt[0] if nxt else "")
            out.extend(nxt[1:])
            i += 2
            continue
        out.extend(by_name.get(t, [t]))
        i += 1
    return out


def _expand(tokens, macros, active=frozenset(), depth=0):
    if depth > _DEPTH:
        return tokens
    out = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        macro = macros.get(t) if t not in active else None
        if macro is None:
            out.append(t)
            i += 1
            continue
        params, body = macro
        if params is None:
            out.extend(_expand(body, macros, active | {t}, depth + 1))
            i += 1
            continue
        call = _arguments(tokens, i + 1) if i + 1 < len(tokens) and \
            tokens[i + 1] == "(" else None
        if call is None:
            out.append(t)
            i += 1
            continue
        args, i = call
        args = [_expand(a, macros, active, depth + 1) for a in args]
        out.extend(_expand(_substitute(params, body, args), macros,
                           active | {t}, depth + 1))
    return out


def _table_body(text):
    """The tokens between the braces of the first case table in
    ``text``, or None."""
    m = _TABLE.search(text)
    if not m:
        return None
    tokens = _tokens(text[m.end() - 1:])
    depth = 0
    for j, t in enumerate(tokens):
        depth += {"{": 1, "}": -1}.get(t, 0)
        if depth == 0:
            return tokens[1:j]
    return None


def _drop_directives(text):
    """Conditional lines go, their code stays: every branch is read."""
    return re.sub(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b.*$",
                  "", text, flags=re.M)


def case_names(root, sources):
    """The case names of the program made of ``sources``, in table
    order, or None when no table of cases is found in them."""
    texts = [_read(p) for p in sources]
    folder = os.path.dirname(sources[0])
    headers = sorted(set(glob.glob(os.path.join(folder, "*.h")) +
                         glob.glob(os.path.join(root, "tests", "regress",
                                                "*.h")) +
                         glob.glob(os.path.join(root, "tests", "common",
                                                "*.h"))))
    for text in texts:
        body = _table_body(_drop_directives(text))
        if body is None:
            continue
        macros = _macros(texts + [_read(h) for h in headers])
        tokens = _expand(body, macros)
        names = []
        for j, t in enumerate(tokens[:-1]):
            if t == "{" and tokens[j + 1].startswith('"'):
                names.append(tokens[j + 1][1:-1])
        return names
    return None


def known_cases(root):
    """{program: [case names] or None (no table found)} of
    tests/regress."""
    return {name: case_names(root, sources)
            for name, sources in programs(root).items()}


def near(word, choices):
    """' (did you mean X?)' for the choice nearest ``word``, or ''."""
    close = difflib.get_close_matches(word, sorted(choices), n=1,
                                      cutoff=0.6)
    return " (did you mean %s?)" % close[0] if close else ""


def named_cases(entry):
    """[(field, program/case)] of one deps.json series entry: its proof
    cases (every target) and repairs."""
    found = []
    for proof in entry.get("proof", []):
        found += [("proof", c) for c in proof.get("cases", [])]
    found += [("repairs", c) for c in entry.get("repairs", [])]
    return found


def name_problems(entry, known):
    """Problems with the programs and cases a deps.json entry names,
    against ``known`` (known_cases())."""
    problems = []
    for program in entry.get("tests", []):
        if program not in known:
            problems.append("tests names %s, which is no program of "
                            "tests/regress%s" % (program,
                                                 near(program, known)))
    everything = ["%s/%s" % (p, c) for p, cases in known.items()
                  for c in cases or ()]
    for field, name in named_cases(entry):
        program, _, case = name.partition("/")
        cases = known.get(program)
        if program not in known:
            problems.append("%s names %s, but tests/regress has no "
                            "program %s%s" % (field, name, program,
                                              near(name, everything)))
        elif cases is None:
            problems.append("%s names %s, but no table of cases was found "
                            "in tests/regress/%s" % (field, name, program))
        elif case not in cases:
            problems.append("%s names %s, which is no case of %s%s"
                            % (field, name, program,
                               near(name, everything)))
    return problems


# How a program names a patch it needs (tests/regress/harness.h).
_NEEDS = re.compile(r"\bUVPATCH_IN_(?:SERIES|TREE)_(\w+)|"
                    r"\bSKIP_WITHOUT_PATCH\s*\(\s*\"([^\"]*)\"")


def patch_id(name):
    """The C identifier of a patch, as tests/uv-programs.cmake makes it:
    its file name (or name alone) without number and .patch, in upper
    case, each character but letters and digits made "_"."""
    name = re.sub(r"^[0-9]+-|\.patch$", "", name)
    return re.sub(r"[^A-Za-z0-9_]", "_", name).upper()


def needed_patches(root):
    """{patch id: [where it is named, as path:line]} of tests/regress."""
    found = {}
    folder = os.path.join(root, "tests", "regress")
    for path in sorted(glob.glob(os.path.join(folder, "*.[ch]")) +
                       glob.glob(os.path.join(folder, "*", "*.[ch]"))):
        if os.path.basename(path) == "harness.h":
            continue  # its comment shows the form with a made-up patch
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                for m in _NEEDS.finditer(line):
                    pid = m.group(1) or patch_id(m.group(2))
                    found.setdefault(pid, []).append("%s:%d" % (
                        os.path.relpath(path, root).replace(os.sep, "/"),
                        n))
    return found


def needed_patch_problems(root, bases):
    """The patches tests/regress names that no series of ``bases``
    (deps.json's) has: a case skipped everywhere, by a typo or a
    rename."""
    known = {patch_id(e["file"]) for b in bases for e in b["series"]}
    return ["%s names patch %s, which no series has%s"
            % (", ".join(where), pid, near(pid, known))
            for pid, where in sorted(needed_patches(root).items())
            if pid not in known]
