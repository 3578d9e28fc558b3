"""The README's paper table, generated from the reference results (never written by hand).

Between the markers ``<!-- papers:begin -->`` and ``<!-- papers:end -->`` the README holds one
row per paper with each claim's headline verdict computed from the repository's reference
results only (a user's own store never reaches the README). ``iclr24 publish`` rewrites it when
publishing into the checkout's results; ``iclr24 readme`` rewrites it on demand; a test checks
that the committed table equals the generated one, so the README cannot drift from the evidence.
"""

from __future__ import annotations

from pathlib import Path

from iclr24 import published, registry
from iclr24.headline import Headline, headlines, summary_line

BEGIN, END = "<!-- papers:begin -->", "<!-- papers:end -->"


def readme_path() -> Path | None:
    """This checkout's README.md (beside ``src/``), when it has the table's markers."""
    path = registry.PACKAGE_DIR.parent.parent / "README.md"
    if path.is_file() and BEGIN in path.read_text(encoding="utf-8"):
        return path
    return None


def _cell(h: Headline) -> str:
    return f"`{h.claim}`: {h.label}"


def paper_table() -> str:
    """The Markdown table (with a summary line) from the reference results."""
    papers = [p for p in registry.papers() if p.implemented]
    heads = headlines(papers, [], published.load(papers=[p.slug for p in papers]))
    summary = summary_line(heads)
    lines = [f"{summary[0].upper()}{summary[1:]} (from `src/iclr24/results/`).", "",
             "| slug | paper | claims: headline verdict |", "|---|---|---|"]
    for p in papers:
        cells = "; ".join(_cell(heads[(p.slug, n)]) for n in p.claim_names)
        lines.append(f"| `{p.slug}` | {p.title} | {cells} |")
    return "\n".join(lines)


def update_readme(path: Path) -> bool:
    """Replace the table between the markers in ``path``; True if the file changed."""
    text = Path(path).read_text(encoding="utf-8")
    if BEGIN not in text or END not in text or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{path} has no {BEGIN} ... {END} section for the paper table")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{paper_table()}\n{END}{tail}"
    if new == text:
        return False
    Path(path).write_text(new, encoding="utf-8")
    return True


def committed_table(path: Path) -> str:
    """The table as it stands in ``path`` (for the consistency test)."""
    text = Path(path).read_text(encoding="utf-8")
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
