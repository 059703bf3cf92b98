"""Reading a `git format-patch` file: its header, message and hunks.

The header is a mail header, read by the email package: folded lines
and RFC 2047 encoded words (which `git format-patch
--encode-email-headers`, and so refresh, writes for a subject that is not
ASCII) come out as the text they stand for.
"""

import email.parser
import email.policy
import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_DIFF = re.compile(r"^diff --git a/(.*) b/(.*)$")


class Hunk:
    def __init__(self, path, number, header, old_start, new_start):
        self.path = path
        self.number = number          # 1-based, within its file
        self.header = header          # the whole @@ line
        self.old_start = old_start
        self.new_start = new_start


class Patch:
    def __init__(self, text):
        self.text = text
        self.lines = text.split("\n")
        self.hunks = []
        self.files = []
        self.subject = ""
        self._parse()

    def _parse(self):
        path = None
        count = 0
        in_header = True
        for line in self.lines:
            if in_header:
                in_header = line != ""
                continue
            m = _DIFF.match(line)
            if m:
                path = m.group(2)
                self.files.append(path)
                count = 0
                continue
            m = _HUNK.match(line)
            if m and path is not None:
                count += 1
                self.hunks.append(Hunk(path, count, line,
                                       int(m.group(1)), int(m.group(3))))
        self.subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "",
                              header(self.text).get("Subject") or "")

    def hunk_at(self, path, old_line):
        """The hunk of ``path`` whose old range starts at ``old_line``."""
        for hunk in self.hunks:
            if hunk.path == path and hunk.old_start == old_line:
                return hunk
        return None

    def hunk_ranges(self):
        return [(h.path, _range(h.header)) for h in self.hunks]

    def message(self):
        """The commit message body: between the header and ``---``."""
        out = []
        started = False
        for line in self.lines:
            if not started:
                if line == "":
                    started = True
                continue
            if line == "---":
                break
            out.append(line)
        return out


def header(text):
    """The mail header of a format-patch file (an email.message.Message;
    its body left unread): each field unfolded, its encoded words
    decoded. Text that is not valid RFC 2047 stays as it stands."""
    end = text.find("\n\n")
    return email.parser.HeaderParser(policy=email.policy.default).parsestr(
        text if end < 0 else text[:end + 1])


def _range(header):
    m = _HUNK.match(header)
    return (int(m.group(1)), int(m.group(2) or 1),
            int(m.group(3)), int(m.group(4) or 1))


def hunk_ranges_of_diff(text):
    return Patch(text).hunk_ranges()


_DIFF_ANY = re.compile(r"^diff --git (\S+) (\S+)$")


def _outside(path, prefix):
    """Why a path of a diff header is not a path in the tree, or ''."""
    if path == "/dev/null":
        return ""
    if path.startswith("/"):
        return "an absolute path"
    if not path.startswith(prefix):
        return "no %s prefix" % prefix
    parts = path[len(prefix):].split("/")
    if "" in parts or "." in parts or ".." in parts or "\\" in path:
        return "a path that leaves the tree"
    return ""


def unusable(text):
    """(message, hint) when a patch file cannot be applied as the series
    applies patches, naming the real cause; None when it can be tried."""
    if "\r\n" in text:
        return ("its lines end in CRLF (\\r\\n), not LF as `git "
                "format-patch` writes them",
                "convert the file back to LF (`sed -i 's/\\r$//' FILE`, "
                "or check it out again: the repository's .gitattributes "
                "keeps patches byte-exact) and write its new sha256 in "
                "deps.json")
    header = False
    for line in text.split("\n"):
        m = _DIFF_ANY.match(line)
        if m:
            header = True
            paths = [(m.group(1), "a/"), (m.group(2), "b/")]
        elif header and line.startswith(("--- ", "+++ ")):
            path = line[4:].split("\t")[0]
            paths = [(path, "a/" if line[0] == "-" else "b/")]
        elif line.startswith("@@ "):
            header = False
            continue
        else:
            continue
        for path, prefix in paths:
            why = _outside(path, prefix)
            if why:
                return ("its diff names %r: %s" % (path, why),
                        "paths in a patch are relative to the libuv tree, "
                        "as a/PATH and b/PATH (`git format-patch` writes "
                        "them so); remake the patch from a commit")
    if Patch(text).hunks:
        return None
    if "\nGIT binary patch\n" in text or re.search(
            r"^Binary files .* differ$", text, re.M):
        return ("it holds only a binary diff; the series applies text "
                "diffs, whose hunks it checks line by line",
                "leave binary files out of the series, or make the change "
                "in text files")
    return ("no diff in the patch",
            "a patch must change at least one file, with `diff --git` and "
            "`@@` hunks as `git format-patch` writes them")
