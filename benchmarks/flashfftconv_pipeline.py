"""Before/after timing of FlashFFTConv's CPU pipeline (issue 23).

Loads the previous ``MonarchFFTConv`` (half-size transform with a Hermitian mirror gather and
separate twiddle passes) from a git revision into a temporary package and times it against the
current module (folded-twiddle stages, two real sequences per complex transform) and against
``torch.fft.rfft`` convolution: one intra-op thread, the calling thread's CPU time, medians of
interleaved rounds, B·H·L fixed per call, each module at its own default order (``order=None``).

    .venv/bin/python benchmarks/flashfftconv_pipeline.py [--rev 469548a] [--work 19] [--rounds 5]
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import subprocess
import sys
import tempfile

import torch

from iclr24.papers.flashfftconv import MonarchFFTConv, paired_median_times

OLD_FILES = ("convolution.py", "monarch_fft.py", "order_selection.py")


def load_old(rev: str):
    root = pathlib.Path(__file__).resolve().parents[1]
    pkg = pathlib.Path(tempfile.mkdtemp()) / "old_flashfftconv"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in OLD_FILES:
        src = subprocess.run(["git", "-C", str(root), "show",
                              f"{rev}:src/iclr24/papers/flashfftconv/{name}"],
                             check=True, capture_output=True, text=True).stdout
        (pkg / name).write_text(src)
    sys.path.insert(0, str(pkg.parent))
    return importlib.import_module("old_flashfftconv.convolution")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="469548a")
    ap.add_argument("--work", type=int, default=19, help="log2 of B·H·L per call")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lengths", default="8,10,12,14,16")
    args = ap.parse_args()
    old = load_old(args.rev)
    print("L    old_ms   new_ms   rfft_ms  new/old  new/rfft  old/rfft")
    with torch.inference_mode():
        for e in map(int, args.lengths.split(",")):
            length, n = 2**e, 2**(e + 1)
            bh = max(2, 2**args.work // length)
            h = max(1, min(bh // 2, 64))
            u = torch.randn(bh // h, h, length)
            k = torch.randn(h, length) * torch.exp(-3.0 * torch.arange(length) / length)
            a, b = old.MonarchFFTConv(n), MonarchFFTConv(n)
            sa, sb = a.filter_spectrum(k), b.filter_spectrum(k)
            kr = torch.fft.rfft(k, n=n)
            t_old, t_new, t_rfft = paired_median_times(
                [lambda: a.forward_spectrum(u, sa), lambda: b.forward_spectrum(u, sb),
                 lambda: torch.fft.irfft(torch.fft.rfft(u, n=n) * kr, n=n)[..., :length]],
                rounds=args.rounds, clock="thread")
            print(f"{length:<5d}{1e3 * t_old:8.1f} {1e3 * t_new:8.1f} {1e3 * t_rfft:8.1f} "
                  f"{t_new / t_old:8.2f} {t_new / t_rfft:9.2f} {t_old / t_rfft:9.2f}", flush=True)


if __name__ == "__main__":
    main()
