"""FlashFFTConv on a CUDA GPU: the fused Triton kernel vs our PyTorch path vs torch rfft (issue 40).

Per sequence length L (FFT size 2L) and dtype, at fixed work B·H·L = 2^25 elements per call,
median CUDA-event time of 15 calls of: ours with ``backend="triton"`` (where the size is
supported, else "n/a"), ours with ``backend="torch"``, and the rfft convolution
``irfft(rfft(u) ⊙ rfft(k))`` (in u's dtype where cuFFT takes it, else fp32 with casts). Each call
includes the filter's FFT. ``floor`` is the memory-traffic floor: read u and k and write y once
at the copy bandwidth measured with ``torch.empty_like(x).copy_(x)`` of 1 GiB. The rows come from
:func:`iclr24.papers.flashfftconv.triton_kernel.gpu_throughput_table` (shared with the claim).

    .venv/bin/python benchmarks/flashfftconv_gpu.py [--lengths 8,10,...,17] [--dtypes fp32,fp16]
        [--repeats 15] [--work 25]

About 1–3 minutes on an H200 (most of it Triton compiling one kernel per size and dtype).
Exits with status 2 and a message when no CUDA device is present.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", default="8,10,11,12,13,14,15,16,17",
                    help="log2 of the sequence lengths L (comma separated)")
    ap.add_argument("--dtypes", default="fp32,fp16", help=f"comma separated, of {list(DTYPES)}")
    ap.add_argument("--repeats", type=int, default=15, help="timed calls per measurement")
    ap.add_argument("--work", type=int, default=25, help="log2 of B·H·L per call")
    args = ap.parse_args(argv)
    args.lengths = [2 ** int(e) for e in args.lengths.split(",")]
    try:
        args.dtypes = [DTYPES[d.strip()] for d in args.dtypes.split(",")]
    except KeyError as err:
        ap.error(f"unknown dtype {err}; choose from {list(DTYPES)}")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    return args


def _ms(x: float | None) -> str:
    return "     n/a" if x is None else f"{x:8.3f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("flashfftconv_gpu: no CUDA device (torch.cuda.is_available() is False); this "
              "benchmark times GPU kernels and has nothing to measure here.", file=sys.stderr)
        return 2
    try:
        from iclr24.papers.flashfftconv.triton_kernel import copy_bandwidth, gpu_throughput_table
    except ImportError as err:
        print(f"flashfftconv_gpu: triton is not importable ({err})", file=sys.stderr)
        return 2
    t0 = time.time()
    bw = copy_bandwidth()
    print(f"# {torch.cuda.get_device_name()}  torch {torch.__version__}  B·H·L = 2^{args.work}  "
          f"copy bandwidth {bw / 1e9:.0f} GB/s  median of {args.repeats}", flush=True)
    print("dtype   L        B     H  triton_ms  torch_ms   rfft_ms  floor_ms  rfft/triton "
          "triton/floor  err_triton  err_torch  rfft_in")
    for dtype in args.dtypes:
        for length in args.lengths:       # one row at a time: progress shows while it runs
            (r,) = gpu_throughput_table([length], dtype, args.repeats, work=2 ** args.work,
                                        bandwidth=bw)
            tri = r["t_triton_ms"]
            sp = "        n/a" if tri is None else f"{r['t_rfft_ms'] / tri:11.2f}"
            fl = "         n/a" if tri is None else f"{tri / r['t_floor_ms']:12.2f}"
            et = "       n/a" if r["err_triton"] is None else f"{r['err_triton']:10.1e}"
            print(f"{r['dtype']:7s} {length:<8d} {r['B']:<5d} {r['H']:<4d} {_ms(tri)}  "
                  f"{_ms(r['t_torch_ms'])}  {_ms(r['t_rfft_ms'])}  {_ms(r['t_floor_ms'])}  {sp} "
                  f"{fl}  {et}  {r['err_torch']:9.1e}  {r['rfft_dtype']}", flush=True)
    print(f"# total {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
