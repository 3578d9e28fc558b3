"""Coverage tables: the share of kernels whose best DoG-family template reaches tau, per layer
(or stage) and per threshold, with the family shares of the identified kernels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from .matching import as_kernel_array, match_templates
from .templates import TEMPLATE_FAMILIES, template_family

__all__ = ["coverage_at", "coverage_report"]


def coverage_at(kernels, templates, tau: float) -> float:
    """Coverage of one kernel set (N, k, k) at one threshold."""
    return match_templates(kernels, templates, tau).coverage


def coverage_report(kernels: Mapping[str, object], templates, labels: Sequence[str],
                    taus: Sequence[float] = (0.6, 0.7, 0.8)) -> list[dict]:
    """Rows {group, tau, n_kernels, n_dead, coverage, share_<family>...} for each group of
    ``kernels`` (name -> (N, k, k), e.g. per layer, per stage or per control) and each tau.
    ``share_<family>`` is the fraction of identified kernels whose best template is of that
    family."""
    if not isinstance(kernels, Mapping) or not kernels:
        raise ValueError("kernels must be a non-empty mapping of group name -> (N, k, k)")
    rows = []
    for group, ks in kernels.items():
        arr = as_kernel_array(ks, f"kernels[{group!r}]")
        for tau in taus:
            m = match_templates(arr, templates, tau, labels=labels)
            fams = Counter(template_family(labels[b]) for b in m.best[m.identified])
            n_id = max(1, int(m.identified.sum()))
            rows.append({"group": group, "tau": float(tau), "n_kernels": len(arr),
                         "n_dead": m.n_dead, "coverage": m.coverage,
                         "mean_best_cosine": float(np.nanmean(m.scores)),
                         **{f"share_{f}": fams.get(f, 0) / n_id for f in TEMPLATE_FAMILIES}})
    return rows
