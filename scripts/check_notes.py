#!/usr/bin/env python3
"""Every cited `Note [Title]` is defined, once.

A Note is defined by a comment line holding only `Note [Title]` followed by
more comment (GHC's and PyTorch's convention: the title, then the text; an
underline of ~ may follow); anywhere else, `Note [Title]` cites it (a Note
line followed by code cites it for that code). Run by the test command
(scripts/ember.sh test); exits 1 listing the Notes cited and never defined
and the Notes defined twice.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTE = re.compile(r"Note \[([^\]]+)\]")
DEFINITION = re.compile(r"^\s*(?://+|#+|\*|--)?\s*Note \[([^\]]+)\]\s*$")
COMMENT = re.compile(r"^\s*(?://+|#+|\*|--)\s*\S")


def tracked_files():
    """The repository's files (git's list; without git, the tree minus build
    folders)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs
                       if not x.startswith((".", "build")) and x != "__pycache__"]
            out += [os.path.relpath(os.path.join(d, f), ROOT) for f in files]
    return [f for f in out if not f.startswith(("bench/results/", "../"))]


def main():
    defined, cited = {}, {}
    for rel in tracked_files():
        if rel == "scripts/check_notes.py":
            continue
        try:
            text = open(os.path.join(ROOT, rel), encoding="utf-8").read()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        lines = text.splitlines()
        for n, line in enumerate(lines, 1):
            d = DEFINITION.match(line)
            # A definition's text follows it in the same comment; a Note
            # line followed by code cites the Note for that code.
            if d and n < len(lines) and COMMENT.match(lines[n]):
                defined.setdefault(d.group(1), []).append(f"{rel}:{n}")
                continue
            for m in NOTE.finditer(line):
                cited.setdefault(m.group(1), []).append(f"{rel}:{n}")
    bad = 0
    for title, where in sorted(cited.items()):
        if title not in defined:
            bad += 1
            print(f"Note [{title}] is cited but defined nowhere: {', '.join(where[:4])}")
    for title, where in sorted(defined.items()):
        if len(where) > 1:
            bad += 1
            print(f"Note [{title}] is defined {len(where)} times: {', '.join(where)}")
    if bad:
        print("(define a Note as a comment line holding only `Note [Title]`, "
              "followed by its text)")
        return 1
    print(f"notes: {len(defined)} defined, {sum(map(len, cited.values()))} citations, all defined")
    return 0


if __name__ == "__main__":
    sys.exit(main())
