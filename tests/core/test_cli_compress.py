"""`iclr24 compress` / `iclr24 decompress` on a user's file with the n-gram model."""

from __future__ import annotations

from typer.testing import CliRunner

from iclr24.cli import app

runner = CliRunner()

DATA = (b"GNU GENERAL PUBLIC LICENSE. Everyone is permitted to copy and distribute verbatim "
        b"copies of this license document, but changing it is not allowed.\n") * 20 + \
    bytes(range(256))


def test_compress_check_then_decompress_roundtrip(tmp_path):
    src = tmp_path / "notes.txt"
    src.write_bytes(DATA)
    res = runner.invoke(app, ["compress", str(src), "--model", "ngram", "--chunk-size", "512",
                              "--check"])
    assert res.exit_code == 0, res.output
    for name in ("ngram + range coder", "gzip", "xz", "zstd", "round trip exact"):
        assert name in res.output
    packed = tmp_path / "notes.txt.lmc"
    assert packed.stat().st_size < len(DATA)
    src.unlink()
    res = runner.invoke(app, ["decompress", str(packed)])
    assert res.exit_code == 0, res.output
    assert src.read_bytes() == DATA


def test_compress_and_decompress_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.lmc"
    bad.write_bytes(b"not a compressed file")
    res = runner.invoke(app, ["decompress", str(bad)])
    assert res.exit_code == 1 and "bad magic" in res.output
    src = tmp_path / "a.txt"
    src.write_bytes(b"hello hello hello")
    res = runner.invoke(app, ["compress", str(src), "--model", str(tmp_path / "missing")])
    assert res.exit_code == 1 and "--model must be" in res.output
    assert "'smollm2-int8'" in " ".join(res.output.split())  # the named models are listed
    assert runner.invoke(app, ["compress", str(src)]).exit_code == 0
    res = runner.invoke(app, ["decompress", str(src) + ".lmc", "--model", "smollm2"])
    assert res.exit_code == 1 and "compressed with model 'ngram'" in res.output
    odd = tmp_path / "a.packed"
    odd.write_bytes((tmp_path / "a.txt.lmc").read_bytes())
    res = runner.invoke(app, ["decompress", str(odd)])
    assert res.exit_code == 1 and "--output" in res.output
    truncated = tmp_path / "t.lmc"
    truncated.write_bytes((tmp_path / "a.txt.lmc").read_bytes()[:-3])
    res = runner.invoke(app, ["decompress", str(truncated), "-o", str(tmp_path / "t.out")])
    assert res.exit_code == 1 and "truncated" in res.output
