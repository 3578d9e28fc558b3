"""The lm_compression library's documented path, ``compress(data, model)`` /
``decompress(blob, model)`` with default arguments, beside gzip -9 on the same bytes.

    .venv/bin/python benchmarks/lm_compression_api_speed.py [--repeats 3]

Goal (issue 37): >= 200 KB/s both ways on ~110 KB of text with the order-3 n-gram fitted on
CPython's bundled documentation (before: ~45 KB/s decode, one sequence coded a byte per step),
and a compressor a user can trust: random bytes never expand beyond a small header, and text
unlike the training prose is never coded worse than by the model's own adaptive variant (the
n-gram without its trained counts).

Inputs: the held-out pydoc topics (English prose the model never saw), the first ~110 KB of
the standard library's ``_pydecimal.py`` (code), 64 KB of seeded random bytes, and a Russian
gettext catalogue (``ase/gui/po/ru/LC_MESSAGES/ag.po``) where that package is installed.

For each input: KB/s of CPU time (``time.process_time``, single-threaded: run with
OMP_NUM_THREADS=1) for compress and decompress, medians over ``--repeats`` interleaved
repeats, and the same for gzip -9 / gunzip, with the ratio; the rate of the default path, of
2048-byte independent chunks (the paper's protocol, ``chunk_size=2048``), of the adaptive
variant alone, and of gzip -9. The machine may be shared: compare the ratio to gzip, measured
in the same run, rather than absolute speeds. No assertions but the round trips: a script, not
a test.
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sysconfig
import time
from pathlib import Path

import numpy as np


def _cpu(fn):
    c0 = time.process_time()
    out = fn()
    return out, time.process_time() - c0


def _inputs() -> dict[str, bytes]:
    import importlib.util

    from iclr24.kits.language_models import pydoc_topics_corpus

    out = {"pydoc held-out prose": pydoc_topics_corpus().heldout,
           "_pydecimal.py (110 KB)": (Path(sysconfig.get_paths()["stdlib"])
                                      / "_pydecimal.py").read_bytes()[:110_000],
           "random bytes (64 KB)": np.random.default_rng(0).integers(
               0, 256, 65_536, dtype=np.uint8).tobytes()}
    spec = importlib.util.find_spec("ase")
    if spec is not None and spec.origin is not None:
        po = Path(spec.origin).parent / "gui" / "po" / "ru" / "LC_MESSAGES" / "ag.po"
        if po.is_file():
            out["Russian ag.po (ase)"] = po.read_bytes()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from iclr24.kits.language_models import pydoc_topics_corpus
    from iclr24.papers.lm_compression import AdaptiveNGramModel, compress, decompress

    model = AdaptiveNGramModel(order=3).fit(pydoc_topics_corpus().train)
    warm = pydoc_topics_corpus().train[:140_000]
    decompress(compress(warm, model), model)  # compiles the kernels (numba caches them)
    print(f"{'input':24s} {'bytes':>8s} | {'rate':>6s} {'2048-B':>6s} {'adapt.':>6s} "
          f"{'gzip':>6s} | {'enc KB/s':>8s} {'dec KB/s':>8s} | {'gzip':>7s} {'gunzip':>7s} | "
          f"gzip faster: enc, dec")
    for name, data in _inputs().items():
        kb = len(data) / 1024
        enc, dec, genc, gdec = [], [], [], []
        for _ in range(args.repeats):  # interleaved: every coder sees the same machine load
            blob, t = _cpu(lambda data=data: compress(data, model))
            enc.append(t)
            back, t = _cpu(lambda blob=blob: decompress(blob, model))
            dec.append(t)
            assert back == data, f"round trip failed on {name}"
            gz, t = _cpu(lambda data=data: gzip.compress(data, 9))
            genc.append(t)
            _, t = _cpu(lambda gz=gz: gzip.decompress(gz))
            gdec.append(t)
        chunked = compress(data, model, chunk_size=2048)
        assert decompress(chunked, model) == data
        adaptive = compress(data, model.adaptive_only())
        e, d = statistics.median(enc), statistics.median(dec)
        ge, gd = statistics.median(genc), statistics.median(gdec)
        print(f"{name:24s} {len(data):8d} | {len(blob) / len(data):6.4f} "
              f"{len(chunked) / len(data):6.4f} {len(adaptive) / len(data):6.4f} "
              f"{len(gz) / len(data):6.4f} | {kb / e:8.1f} {kb / d:8.1f} | {kb / ge:7.0f} "
              f"{kb / gd:7.0f} | {e / ge:5.0f}x, {d / gd:5.0f}x")


if __name__ == "__main__":
    main()
