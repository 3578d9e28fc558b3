"""The registry's cache of statically read claims.py metadata: same answer, edits re-read."""

from __future__ import annotations

import os

from iclr24 import registry

SOURCE = '''
from iclr24.claims import claim

@claim(rule="x > 0", resources={"cpus": 2}, scales=("smoke", "small"))
def first(scale, seed):
    """First claim."""

@claim(rule="y > 0", name="renamed")
def second(scale, seed):
    pass
'''


def test_cached_metadata_equals_a_fresh_parse_and_edits_invalidate(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path / "cache"))
    registry._source_cache.cache_clear()
    path = tmp_path / "claims.py"
    path.write_text(SOURCE)
    parsed = registry._parse_claims(path)
    assert parsed[0] == ("first", "renamed") and parsed[1] == {"first": {"cpus": 2}}
    assert parsed[3] == {"first": ("smoke", "small")} and parsed[2]["first"] == "First claim."
    assert registry._claims_from_source(path) == parsed          # parsed, then stored
    assert (tmp_path / "cache" / registry._SOURCE_CACHE).is_file()
    registry._source_cache.cache_clear()
    assert registry._claims_from_source(path) == parsed          # read back from the cache
    path.write_text(SOURCE.replace('name="renamed"', 'name="other"'))
    os.utime(path, ns=(1, 1))  # even with an old mtime the size change invalidates
    assert registry._claims_from_source(path)[0] == ("first", "other")
    (tmp_path / "cache" / registry._SOURCE_CACHE).write_text("{not json")
    registry._source_cache.cache_clear()
    assert registry._claims_from_source(path)[0] == ("first", "other")  # a broken cache: parse
    registry._source_cache.cache_clear()
