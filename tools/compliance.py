"""Generate docs/compliance.md: every section and subsection of the four chapters, with citing tests.

    .venv/bin/python tools/compliance.py            # rewrite docs/compliance.md
    .venv/bin/python tools/compliance.py --check    # exit 1 if docs/compliance.md is stale
    .venv/bin/python tools/compliance.py --regs DIR # also regenerate the index from the text

The sections and subsection labels of the four chapters (facts: the numbering and
the headings, no regulation text) are kept in tools/regulation-index.txt, so the
matrix needs nothing outside the repository. With `--regs DIR` (a folder holding
the chapters' text files, named as in CHAPTER_FILES) the index is first parsed
again from the text and rewritten; with `--regs DIR --check` a stale index fails
too. Tests are scanned for citations written either dotted ("631a.11(c)(2)(iii)" in a name,
parametrize id, docstring or string) or in a test name
("test_631a_11_c_2_iii_..."). A clause no test cites is listed with the reason
it is not the controller's to check, or flagged NOT COVERED.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "compliance.md"
INDEX = REPO / "tools" / "regulation-index.txt"
CHAPTER_FILES = {"631a": "631a-baccarat.txt", "631c": "631c-baccarat-side-wagers.txt",
                 "627b": "627b-minibaccarat-side-wagers.txt", "681a": "681a-21-baccarat.txt"}
ROMANS = ["i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x", "xi", "xii", "xiii",
          "xiv", "xv", "xvi", "xvii", "xviii", "xix", "xx", "xxi", "xxii", "xxiii", "xxiv", "xxv"]

# Why a clause with no citing test is not the controller's to check (longest prefix wins).
REASONS: dict[str, str] = {
    "631a.2(b)": "table layout approved under 601a.10(a); no controller behaviour",
    "631a.2(c)": "marker-button storage; physical equipment",
    "631a.2(d)": "drop box and tip box; physical equipment",
    "631a.2(e)": "discard bucket; physical equipment",
    "631a.3(b)": "card inventory procedure; the controller ends the shoe (631a.10(d) tests)",
    "631a.4": "opening inspection of the decks by dealer and floorperson",
    "631a.5(a)": "manual wash and shuffle by the dealers",
    "631a.5(b)": "offering the cut to players is a dealer procedure",
    "631a.5(e)": "floor decision to recut",
    "631a.7": "shoe and curator selection are human procedures; the shoe reports the cards",
    "631a.8(b)": "how chips are placed; no controller behaviour",
    "631a.8(c)": "'no more bets' is the table state machine's lock-out (controller/table/machine.py)",
    "631a.9(b)": "the dealer's announcement 'cards'",
    "631a.9(d)": "optional squeeze procedure (config game.squeeze); card order is unchanged",
    "631a.9(f)": "relinquishing the right to turn cards; a dealer procedure",
    "631a.10(a)": "the dealer's announcement of Point Counts",
    "631a.10(b)": "the dealer instructs the curator; the coup's next_card() gives the instruction",
    "631a.12(c)": "removing cards to the discard bucket",
    "631a.14": "curator continuation and succession; human procedure",
    "631c.1(a)": "Perfect Pairs layout approved under 601a.10(a); no controller behaviour",
    "631c.4(b)": "Lucky Nines layout approved under 601a.10(a); no controller behaviour",
    "631c.5(b)": "commission-free layout areas (pairs, Lucky Six) approved under 601a.10(a); "
                 "no controller behaviour",
    "631c.5(l)": "cards to the discard rack; physical (as 631a.12(c)); irregularities are "
                 "631a.15's, tested there",
    "631c.7(a)": "Majestic Match layout approved under 601a.10(a); no controller behaviour",
    "627b.1(b)": "Perfect Pairs layout approved under 601a.10(a); no controller behaviour",
    "627b.2(b)": "commission-free layout areas (pairs, Lucky Six) per 627a.2; no controller "
                 "behaviour",
    "627b.2(l)": "cards to the discard rack; physical (as 631a.12(c)); irregularities (627a.13) "
                 "follow the 631a.15 handling tested there",
    "627b.4(d)": "table physical characteristics of 627a.2; no controller behaviour",
    "627b.4(e)": "Rising Phoenix layout areas for the Bonus and Harmony wagers; no controller "
                 "behaviour",
    "627b.6(b)": "Harmony Progressive layout area per 627a.2; no controller behaviour",
    "681a.2": "table layout and equipment approved under 601a.10; no controller behaviour",
    "681a.3(b)": "two-batch shuffler alternation: drivers/shuffler and the table controller",
    "681a.3(c)": "deck replacement every 24 hours: operations procedure",
    "681a.4": "opening inspection of the decks",
    "681a.5(a)": "shuffling by dealer or device (drivers/shuffler)",
    "681a.5(b)": "offering the cut to players is a dealer procedure",
    "681a.5(e)": "floor decision to reshuffle or recut",
    "681a.5(g)": "inactive-table procedure for the cards",
    "681a.5(h)": "approved automatic reshuffling shoe; device approval",
    "681a.6(a)": "how chips are placed",
    "681a.6(b)": "betting before the first card: the table state machine's lock-out",
    "681a.7(a)": "where the shoe sits; physical",
    "681a.7(b)": "which hand the dealer uses; physical",
    "681a.7(l)": "cards to the discard rack for reconstruction; physical",
    "681a.7(m)": "players may not handle cards; physical",
    "681a.9(d)": "covering an out-of-order shuffler; physical",
}

SECTION_RE = re.compile(r"^§\s*(6\d\d[a-z])\.(\d+)\.\s*(.*?)\s*$")
LABEL_RE = re.compile(r"^\s*(?:-\s*)?\(([A-Za-z]{1,5}|\d{1,2})\)\s")
DOTTED_RE = re.compile(r"(6\d\d[a-z])\.(\d+)((?:\([A-Za-z0-9]{1,5}\))*)")
# A label token never swallows the next citation: "..._631c_3_c_631c_4_c_627b_5_b" cites three.
NAME_RE = re.compile(r"(6\d\d[a-z])_(\d+)((?:_(?!6\d\d[a-z]_\d)[A-Za-z0-9]{1,5})*)")


@dataclass
class Clause:
    cid: str
    depth: int
    title: str = ""


def _kind(label: str) -> str:
    if label.isdigit():
        return "number"
    if label.isupper():
        return "capital"
    return "letter-or-roman"


def parse_chapter(chapter: str, text: str) -> list[Clause]:
    """Section and subsection ids, in document order."""
    clauses: list[Clause] = []
    section: str | None = None
    stack: list[str] = []  # labels: letter, number, roman, capital
    in_body = False
    for line in text.splitlines():
        m = SECTION_RE.match(line)
        if m and m.group(1) == chapter:
            section = f"{chapter}.{m.group(2)}"
            clauses.append(Clause(section, 0, m.group(3)))
            stack, in_body = [], True
            continue
        if line.strip() in ("Authority", "Source", "Cross References"):
            in_body = False
            continue
        if section is None or not in_body:
            continue
        lm = LABEL_RE.match(line)
        if not lm:
            continue
        label = lm.group(1)
        placed = _place(stack, label)
        if placed is None:
            continue
        stack = placed
        clauses.append(Clause(section + "".join(f"({x})" for x in stack), len(stack)))
    return clauses


def _next_letter(stack: list[str]) -> str:
    return chr(ord(stack[0]) + 1) if stack else "a"


def _place(stack: list[str], label: str) -> list[str] | None:
    """Where `label` sits given the current path, or None if it is not a subsection label."""
    kind = _kind(label)
    if kind == "number":
        if len(label) > 2:
            return None
        n = int(label)
        if len(stack) >= 2 and stack[1].isdigit() and n == int(stack[1]) + 1:
            return stack[:1] + [label]
        if n == 1 and stack and _next_letter(stack) == "l" and len(stack) >= 2:
            return ["l"]  # the source text prints subsection (l) as "(1)"
        if n == 1 and stack:
            return stack[:1] + [label]
        return None
    if kind == "capital":
        if len(stack) >= 3:
            prev = stack[3] if len(stack) >= 4 else None
            if (prev is None and label == "A") or (prev and label == chr(ord(prev) + 1)):
                return stack[:3] + [label]
        return None
    low = label
    if low in ROMANS and len(stack) >= 2 and stack[1].isdigit():
        prev = stack[2] if len(stack) >= 3 else None
        expected = ROMANS[ROMANS.index(prev) + 1] if prev in ROMANS else "i"
        if low == expected and not (len(low) == 1 and low == _next_letter(stack) and low != "i"):
            return stack[:2] + [low]
    if len(low) == 1 and low == _next_letter(stack):
        return [low]
    return None


def render_index(regs: Path) -> str:
    """The index file's text, parsed from the chapters' text files in `regs`."""
    lines = ["# Sections and subsection labels of 58 Pa. Code chapters 631a, 631c, 627b and 681a,",
             "# one clause a line (a section with its heading). Generated by",
             "# `tools/compliance.py --regs DIR` from the regulation text; do not edit by hand."]
    for chapter, fname in CHAPTER_FILES.items():
        path = regs / fname
        if not path.is_file():
            raise SystemExit(f"--regs {regs}: {fname} not found (the {chapter} text is needed)")
        for clause in parse_chapter(chapter, path.read_text(encoding="utf-8")):
            lines.append(f"{clause.cid} {clause.title}".rstrip())
    return "\n".join(lines) + "\n"


def read_index(text: str) -> dict[str, list[Clause]]:
    """Chapter -> clauses in document order, from the index file's text."""
    chapters: dict[str, list[Clause]] = {chapter: [] for chapter in CHAPTER_FILES}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cid, _, title = line.partition(" ")
        m = DOTTED_RE.fullmatch(cid)
        if m is None or m.group(1) not in chapters:
            raise SystemExit(f"{INDEX.relative_to(REPO)} line {number}: {cid!r} is not a clause "
                             "of 631a, 631c, 627b or 681a")
        depth = m.group(3).count("(")
        chapters[m.group(1)].append(Clause(cid, depth, title.strip()))
    return chapters


def citations_in(text: str) -> set[str]:
    found: set[str] = set()
    for m in DOTTED_RE.finditer(text):
        found.add(f"{m.group(1)}.{m.group(2)}{m.group(3)}")
    for m in NAME_RE.finditer(text):
        path = _labels_from_tokens([t for t in m.group(3).split("_") if t])
        found.add(f"{m.group(1)}.{m.group(2)}" + "".join(f"({x})" for x in path))
    return found


def _labels_from_tokens(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for tok in tokens:
        level = len(out)
        if level == 0 and len(tok) == 1 and tok.islower():
            out.append(tok)
        elif level == 1 and tok.isdigit():
            out.append(tok)
        elif level == 2 and tok in ROMANS:
            out.append(tok)
        elif level == 3 and len(tok) == 1 and tok.isupper():
            out.append(tok)
        else:
            break
    return out


def scan_tests(root: Path) -> dict[str, set[str]]:
    """Clause id -> test node ids citing it."""
    cites: dict[str, set[str]] = defaultdict(set)
    for path in sorted(root.rglob("test_*.py")):
        rel = path.relative_to(REPO).as_posix()
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        lines = source.splitlines()
        claimed: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                end = node.end_lineno or node.lineno
                segment = "\n".join(lines[start - 1:end])
                claimed.update(range(start, end + 1))
                for cid in citations_in(segment):
                    cites[cid].add(f"{rel}::{node.name}")
        rest = "\n".join(text for i, text in enumerate(lines, 1) if i not in claimed)
        for cid in citations_in(rest):
            cites[cid].add(rel)
    return cites


def _reason(cid: str) -> str | None:
    best = None
    for prefix, reason in REASONS.items():
        if (cid == prefix or cid.startswith(prefix + "(")) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, reason)
    return best[1] if best else None


def render(chapters: dict[str, list[Clause]]) -> str:
    cites = scan_tests(REPO / "tests")
    for cid, nodes in scan_tests(REPO / "hil").items():  # the HIL scenarios cite clauses too
        cites.setdefault(cid, set()).update(nodes)
    out = ["# Compliance: every clause of 631a, 631c, 627b and 681a, and the tests that check it",
           "",
           "Generated by `tools/compliance.py`; do not edit by hand. Regenerate with:",
           "",
           "    .venv/bin/python tools/compliance.py",
           "",
           "A clause is *covered* when a test cites it (or one of its subsections), *not the "
           "controller's* when a reason is given, otherwise **NOT COVERED**.", ""]
    summary: list[str] = []
    body: list[str] = []
    for chapter, clauses in chapters.items():
        known = {c.cid for c in clauses}
        counts = {"covered": 0, "reason": 0, "missing": 0}
        body.append(f"## {chapter}\n")
        body.append("| clause | status | tests |")
        body.append("| --- | --- | --- |")
        for clause in clauses:
            direct = sorted(cites.get(clause.cid, ()))
            via_child = any(k.startswith(clause.cid + "(") and cites.get(k) for k in cites)
            reason = _reason(clause.cid)
            if direct:
                status, counts["covered"] = "covered", counts["covered"] + 1
                detail = "<br>".join(f"`{t}`" for t in direct[:6])
                if len(direct) > 6:
                    detail += f"<br>... and {len(direct) - 6} more"
            elif via_child:
                status, counts["covered"] = "covered", counts["covered"] + 1
                detail = "see subsections"
            elif reason:
                status, counts["reason"] = "not the controller's", counts["reason"] + 1
                detail = reason
            else:
                status, counts["missing"] = "**NOT COVERED**", counts["missing"] + 1
                detail = ""
            title = f" {clause.title}" if clause.title else ""
            body.append(f"| {'&nbsp;' * 2 * clause.depth}{clause.cid}{title} | {status} | {detail} |")
        stray = sorted(c for c in cites if c.startswith(chapter + ".") and c not in known)
        if stray:
            body.append("")
            body.append("Cited but not found as a clause in the source text (check the "
                        "citation): " + ", ".join(f"`{c}`" for c in stray))
        body.append("")
        summary.append(f"| {chapter} | {len(clauses)} | {counts['covered']} | {counts['reason']} "
                       f"| {counts['missing']} |")
    out += ["| chapter | clauses | covered | not the controller's | not covered |",
            "| --- | --- | --- | --- | --- |", *summary, "", *body]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    parser.add_argument("--regs", type=Path, metavar="DIR",
                        help="folder with the chapters' text: regenerate the index from it first")
    args = parser.parse_args(argv)
    stale: list[tuple[Path, str]] = []
    index_text = INDEX.read_text(encoding="utf-8") if INDEX.exists() else ""
    if args.regs is not None:
        fresh = render_index(args.regs)
        if fresh != index_text:
            stale.append((INDEX, f"--regs {args.regs}"))
        index_text = fresh
    if not index_text:
        print(f"{INDEX.relative_to(REPO)} is missing; run: .venv/bin/python tools/compliance.py "
              "--regs DIR (DIR: the chapters' text)", file=sys.stderr)
        return 1
    matrix = render(read_index(index_text))
    if matrix != (OUT.read_text(encoding="utf-8") if OUT.exists() else ""):
        stale.append((OUT, ""))
    if args.check:
        for path, how in stale:
            print(f"{path.relative_to(REPO)} is stale; run: .venv/bin/python tools/compliance.py "
                  f"{how}".rstrip(), file=sys.stderr)
        return 1 if stale else 0
    if args.regs is not None:
        INDEX.write_text(index_text, encoding="utf-8")
    OUT.write_text(matrix, encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}" + (f" and {INDEX.relative_to(REPO)}" if args.regs else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
