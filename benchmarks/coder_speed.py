"""How fast the lm_compression coder runs, beside gzip, on text nobody here wrote.

    .venv/bin/python benchmarks/coder_speed.py                 # n-gram + engines
    .venv/bin/python benchmarks/coder_speed.py --smollm2       # + SmolLM2 tokens/s, B = 1 and 8

Three measurements, each printed with the ratio it is judged by:

1. Engines on the same distributions: the order-3 n-gram's probability rows along 8,192 bytes,
   coded by the Python reference arithmetic coder (``arithmetic_coding``) and by the
   ``constriction`` range coder (``range_coding``, one call per batch of rows): KB/s and bytes.
2. The whole compressor with the order-3 n-gram (fitted on CPython's bundled documentation) on a
   large module of the Python standard library (``_pydecimal.py``, ~229 KB) and the GNU GPL
   that Debian ships (``/usr/share/common-licenses/GPL-3``) where present: compress and
   decompress KB/s (CPU time of this process, single-threaded numpy), the rate, and gzip -9's
   speed and rate on the same bytes.
3. SmolLM2-135M (``--smollm2``): tokens/s coding B chunks in lockstep through one KV-cached
   session (B = 1, 8, 16), encode and decode, on 1 and on 2 torch threads (``--threads``; the
   decoder uses the encoder's thread count, so both see the same floats), for the float32
   model and for its int8 dynamic-quantised copy (``load_smollm2(quantize="int8")``), with
   each one's rate: token-by-token decoding reads every weight once per step, so float32 is
   bound by memory traffic that int8 cuts by 4x, at the price of a somewhat worse model.

CPU time (``time.process_time``) is reported because the machine is shared; wall time is
printed beside it. No timed assertions: this is a script, not a test.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import sysconfig
import time
from pathlib import Path

import numpy as np


def _clock(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def engines(model, data: bytes) -> None:
    from iclr24.papers.lm_compression import RangeEncoder, encode_symbols, quantize_pdf

    sess = model.session(1)
    rows = []
    for b in data:
        rows.append(sess.next_probs()[0].astype(np.float64))
        sess.feed([b])
    probs = np.stack(rows)
    sym = np.frombuffer(data, dtype=np.uint8)
    kb = len(data) / 1024
    (py, _), py_cpu, _ = _clock(lambda: encode_symbols(quantize_pdf(probs), sym))

    def rc():
        enc = RangeEncoder()
        enc.encode(probs, sym)
        return enc.finish()

    stream, rc_cpu, _ = _clock(rc)
    ideal = -np.log2(probs[np.arange(sym.size), sym]).sum() / 8
    print(f"[engines] {len(data)} n-gram rows: Python reference {kb / py_cpu:8.1f} KB/s "
          f"{len(py)} B | constriction {kb / rc_cpu:8.1f} KB/s {len(stream)} B | ideal "
          f"{ideal:.0f} B | speed ratio {py_cpu / rc_cpu:.0f}x")


def ngram_file(model, path: Path, limit: int | None) -> None:
    from iclr24.papers.lm_compression import compress, decompress

    data = path.read_bytes()[:limit]
    kb = len(data) / 1024
    compress(data[:70_000], model, chunk_size=2048)  # compiles the block kernel (once per machine)
    blob, enc_cpu, enc_wall = _clock(lambda: compress(data, model, chunk_size=2048))
    back, dec_cpu, dec_wall = _clock(lambda: decompress(blob, model))
    assert back == data, "round trip failed"
    gz, gz_cpu, _ = _clock(lambda: gzip.compress(data, 9))
    _, gunz_cpu, _ = _clock(lambda: gzip.decompress(gz))
    print(f"[n-gram] {path.name} ({len(data):,} B, 2048-B chunks): rate {len(blob) / len(data):.4f}"
          f" (gzip -9 {len(gz) / len(data):.4f})")
    print(f"    compress   {kb / enc_cpu:8.1f} KB/s CPU ({kb / enc_wall:7.1f} wall) | gzip "
          f"{kb / gz_cpu:9.0f} KB/s | gzip is {enc_cpu / gz_cpu:.0f}x faster")
    print(f"    decompress {kb / dec_cpu:8.1f} KB/s CPU ({kb / dec_wall:7.1f} wall) | gunzip "
          f"{kb / gunz_cpu:9.0f} KB/s | gunzip is {dec_cpu / gunz_cpu:.0f}x faster")


def smollm2(n_bytes: int, batches: list[int], threads: list[int]) -> None:
    from iclr24.kits.language_models import load_smollm2, pydoc_topics_corpus
    from iclr24.papers.lm_compression import code_chunks, utf8_chunks

    lm, load_cpu, load_wall = _clock(load_smollm2)
    print(f"[SmolLM2] loaded in {load_cpu:.1f} s CPU ({load_wall:.1f} s wall)")
    q8, q_cpu, _ = _clock(lambda: load_smollm2(quantize="int8"))
    print(f"[SmolLM2 int8] quantised in {q_cpu:.1f} s CPU")
    text = pydoc_topics_corpus().heldout
    for (label, model), th, b in itertools.product((("float32", lm), ("int8", q8)), threads,
                                                   batches):
        pieces = utf8_chunks(text[20_000:20_000 + n_bytes], max(4, n_bytes // b))[:b]
        res, cpu, wall = _clock(lambda pieces=pieces, b=b, th=th, model=model: code_chunks(
            pieces, model, group_size=b, separate=False, threads=th))
        assert res.roundtrip_ok
        print(f"    {label:7s} {th} thread(s), B={b:2d}: {res.n_tokens} tokens in "
              f"{len(pieces)} chunks, "
              f"rate {res.rate:.3f}; encode {res.n_tokens / res.encode_seconds:6.1f} tok/s, "
              f"decode {res.n_tokens / res.decode_seconds:6.1f} tok/s (wall); encode+decode "
              f"{2 * res.n_tokens / wall:6.1f} tok/s wall, {2 * res.n_tokens / cpu:6.1f} "
              f"tok/s of CPU time")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smollm2", action="store_true", help="also time SmolLM2 (slow)")
    ap.add_argument("--limit", type=int, default=None, help="bytes of each file to code")
    ap.add_argument("--smollm2-bytes", type=int, default=2048)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2],
                    help="torch threads for SmolLM2 (2 = both cores of the reference machine)")
    args = ap.parse_args()

    from iclr24.kits.language_models import pydoc_topics_corpus
    from iclr24.papers.lm_compression import AdaptiveNGramModel

    model = AdaptiveNGramModel(order=3).fit(pydoc_topics_corpus().train)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    engines(model, (stdlib / "_pydecimal.py").read_bytes()[:8192])
    for path in (stdlib / "_pydecimal.py", Path("/usr/share/common-licenses/GPL-3")):
        if path.is_file():
            ngram_file(model, path, args.limit)
    if args.smollm2:
        smollm2(args.smollm2_bytes, [1, 8, 16], args.threads)


if __name__ == "__main__":
    main()
