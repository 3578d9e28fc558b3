"""The synthetic fact world and the shipped facts."""

from __future__ import annotations

import re

import numpy as np
import pytest

from iclr24.kits.language_models import ByteTokenizer
from iclr24.papers.sat_probe import (
    CONTROL_WORD,
    QUERY_TEMPLATE,
    factual_queries,
    make_fact_world,
    token_popularity,
)


def test_fact_world_counts_popularity_and_corpus():
    w = make_fact_world(200, zipf_a=1.1, seed=3, max_count=40)
    assert len(w) == 200 and len(set(w.names)) == 200
    assert np.all(np.diff(w.counts) <= 0) and w.counts[-1] == 1 and w.counts.max() == 40
    assert np.all((w.years >= 1900) & (w.years <= 1999))
    np.testing.assert_allclose(w.popularity, np.log1p(w.counts))
    lines = w.corpus.splitlines()
    assert len(lines) == w.counts.sum() + w.qa_seen.sum()  # a query spans two lines
    for i in (0, 7, 150, 199):
        assert len(re.findall(rf"\b{w.names[i]}\b", w.corpus)) == w.counts[i]
        sentences = [ln for ln in lines if re.search(rf"\b{w.names[i]}\b", ln)]
        assert all(str(w.years[i]) in ln for ln in sentences if not ln.startswith("User:"))
        query = QUERY_TEMPLATE.format(name=w.names[i]) + f" {w.years[i]}.\n"
        assert (query in w.corpus) == bool(w.qa_seen[i])
    assert w.prompts[5] == QUERY_TEMPLATE.format(name=w.names[5])
    assert CONTROL_WORD in w.prompts[5] and w.names[5] in w.prompts[5]
    assert w.answers[5] == str(w.years[5])


def test_fact_world_is_deterministic_and_validates():
    a, b = make_fact_world(50, seed=1), make_fact_world(50, seed=1)
    assert a.corpus == b.corpus and a.names == b.names
    assert make_fact_world(50, seed=2).names != a.names
    for kwargs in ({"n_entities": 5}, {"n_entities": 50, "zipf_a": 0},
                   {"n_entities": 50, "qa_fraction": 1.5}, {"n_entities": 50, "max_count": 0}):
        with pytest.raises(ValueError, match=next(iter(kwargs)) if len(kwargs) == 1
                           else list(kwargs)[1]):
            make_fact_world(**kwargs)


def test_shipped_facts():
    facts = factual_queries()
    assert len(facts) == 288
    for rel in ("capital", "symbol", "author"):
        ents = [f.entity for f in factual_queries([rel])]
        assert len(ents) == len(set(ents))
    for f in facts:
        assert f.entity in f.prompt and f.control in f.prompt and f.answer
    with pytest.raises(ValueError, match="relations"):
        factual_queries(["weather"])


def test_token_popularity_ranks_fewer_lower_ids_higher():
    tok = ByteTokenizer()
    assert token_popularity("ab", tok) > token_popularity("abc", tok)  # more tokens
    assert token_popularity("ab", tok) > token_popularity("yz", tok)  # higher ids
    assert token_popularity("a", tok) == pytest.approx(-np.log1p([32, 97]).sum())
    with pytest.raises(ValueError, match="entity"):
        token_popularity("", tok)
