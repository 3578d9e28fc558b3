"""The report: a static site (index of all papers, one page per paper, history across runs)
and the same content as Markdown, written from the results store.

``iclr24 report --out DIR`` writes ``DIR/index.html``, ``DIR/papers/<slug>.html``,
``DIR/figures/`` (each claim's figure and its key metric across runs) and ``DIR/report.md``.
Modules: :mod:`.views` (what is shown, computed from records), :mod:`.history` (a claim
across runs), :mod:`.site` (HTML through Jinja2 templates in ``templates/``),
:mod:`.markdown`.
"""

from .history import history_rows
from .site import write_report

__all__ = ["history_rows", "write_report"]
