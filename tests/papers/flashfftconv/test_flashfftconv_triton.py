"""The Triton kernel (triton_kernel.py) and backend selection in MonarchFFTConv.

The kernel runs here under Triton's CPU interpreter: ``triton.jit`` reads ``TRITON_INTERPRET``
when it decorates, and the package decorates its kernel lazily once per mode, so setting the
variable with ``monkeypatch.setenv`` before the first launch is enough, even when triton was
imported earlier in the process. Exactness is checked against the float64 rfft convolution.
"""

import builtins
import importlib
import importlib.util
import pathlib
import subprocess
import sys

import pytest
import torch

from iclr24.papers.flashfftconv import MonarchFFTConv, fft_conv_reference

HAS_TRITON = importlib.util.find_spec("triton") is not None
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (optional: "
                                  "the fused GPU kernel; the torch path is tested elsewhere)")

# max |y - y_ref| / max |y_ref|, per operand dtype (fp32: exact fp32 dots)
TOL = {torch.float32: 2e-6, torch.float16: 3e-3, torch.bfloat16: 3e-2}
ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _case(b, h, length, klen, seed, gates):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(b, h, length, generator=g, dtype=torch.float64)
    k = torch.randn(h, klen, generator=g, dtype=torch.float64) * torch.exp(
        -3.0 * torch.arange(klen, dtype=torch.float64) / max(klen, 1))
    pre = torch.rand(b, h, length, generator=g, dtype=torch.float64) if gates else None
    post = torch.rand(b, h, length, generator=g, dtype=torch.float64) if gates else None
    return u, k, pre, post


def _ref(u, k, pre, post, dtype, n):
    """float64 reference on the dtype-rounded inputs."""
    r = lambda t: None if t is None else t.to(dtype).double()
    x = r(u) if pre is None else r(u) * r(pre)
    y = fft_conv_reference(x, r(k), fft_size=n)
    return y if post is None else y * r(post)


def _rel(y, ref):
    return float((y.double() - ref).abs().max() / ref.abs().max())


@needs_triton
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16],
                         ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("n, b, h, gates, pairs", [
    (256, 3, 2, True, 1),        # odd B: the last transform has a zero partner
    (512, 5, 3, False, 2),       # B*H not a multiple of the block: a half-empty last block
    (1024, 2, 1, True, None),    # N1 = N2 = 32, default block
    (2048, 1, 2, True, 4),       # N1 = 64 > N2 = 32, one sequence alone
])
def test_kernel_exact_against_float64_rfft(interpret, dtype, n, b, h, gates, pairs):
    from iclr24.papers.flashfftconv.triton_kernel import monarch_conv_triton

    u, k, pre, post = _case(b, h, n // 2, n // 2, seed=n + b, gates=gates)
    c = lambda t: None if t is None else t.to(dtype)
    y = monarch_conv_triton(c(u), c(k), c(pre), c(post), pairs_per_program=pairs)
    assert y.shape == u.shape and y.dtype == dtype
    assert _rel(y, _ref(u, k, pre, post, dtype, n)) < TOL[dtype]


@needs_triton
def test_kernel_short_inputs_and_large_fft(interpret):
    """L < N/2 and L_k < L (masked rows), and the largest supported FFT size (128 x 64)."""
    from iclr24.papers.flashfftconv.triton_kernel import monarch_conv_triton

    u, k, _, _ = _case(3, 2, 300, 77, seed=1, gates=False)
    y = monarch_conv_triton(u.float(), k.float(), fft_size=1024)
    assert _rel(y, _ref(u, k, None, None, torch.float32, 1024)) < TOL[torch.float32]
    u, k, _, _ = _case(1, 1, 4096, 4096, seed=2, gates=False)
    y = monarch_conv_triton(u.half(), k.half())
    assert _rel(y, _ref(u, k, None, None, torch.float16, 8192)) < TOL[torch.float16]


@needs_triton
def test_module_backends_agree_and_auto_keeps_cpu_on_torch(interpret):
    u, k, pre, post = _case(3, 2, 256, 256, seed=3, gates=True)
    u, k, pre, post = (t.float() for t in (u, k, pre, post))
    ref = _ref(u, k, pre, post, torch.float32, 512)
    auto = MonarchFFTConv(512)
    assert auto.backend == "auto" and auto.resolve_backend(u) == "torch"   # CPU tensor
    torch_y = MonarchFFTConv(512, backend="torch")(u, k, pre, post)
    assert torch.equal(auto(u, k, pre, post), torch_y)       # bit-identical torch path
    tri = MonarchFFTConv(512, backend="triton")
    assert tri.resolve_backend(u) == "triton"
    y = tri(u, k, pregate=pre, postgate=post)
    assert _rel(y, ref) < TOL[torch.float32]
    # non-contiguous inputs are made contiguous by the module
    ut = u.transpose(0, 1).contiguous().transpose(0, 1)
    assert torch.allclose(tri(ut, k), tri(u, k))


@needs_triton
def test_triton_backend_errors(monkeypatch):
    from iclr24.papers.flashfftconv import triton_kernel as tk

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    u, k = torch.randn(2, 1, 64), torch.randn(1, 64)
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        MonarchFFTConv(256, backend="triton")(torch.randn(2, 1, 128), torch.randn(1, 128))
    with pytest.raises(ValueError, match="N = 128"):
        MonarchFFTConv(128, backend="triton")(u, k)
    with pytest.raises(ValueError, match="N = 32768"):
        MonarchFFTConv(2**15, backend="triton")(u, k)
    assert MonarchFFTConv(2**15, backend="auto").resolve_backend(u) == "torch"
    with pytest.raises(TypeError, match="float64"):
        MonarchFFTConv(256, backend="triton")(u.double(), k.double())
    with pytest.raises(ValueError, match="backend"):
        MonarchFFTConv(256, backend="cuda")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    bad = [((u.double(), k), TypeError, "float16"),
           ((u.transpose(0, 2), k), ValueError, "contiguous"),
           ((u[0], k), ValueError, r"\(B, H, L\)"),
           ((u, torch.randn(2, 64)), ValueError, "H = 2"),
           ((u, k.to(torch.int32)), TypeError, "floating"),
           ((u, k, torch.randn(2, 1, 3)), ValueError, "pregate"),
           ((u, torch.randn(1, 200)), ValueError, "N/2"),
           (("u", k), TypeError, "torch.Tensor")]
    for args, err, msg in bad:
        with pytest.raises(err, match=msg):
            tk.monarch_conv_triton(*args)
    with pytest.raises(ValueError, match="device"):
        tk.monarch_conv_triton(u, torch.randn(1, 64, device="meta"))
    with pytest.raises(ValueError, match="pairs_per_program"):
        tk.monarch_conv_triton(u, k, pairs_per_program=0)
    assert tk.triton_factors(256) == (16, 16) and tk.triton_factors(2048) == (64, 32)
    assert not tk.triton_supports(100) and tk.triton_supports(8192)
    assert not tk.triton_supports(8192, torch.float32) and tk.triton_supports(4096, torch.float32)
    with pytest.raises(ValueError, match="N = 8192"):
        MonarchFFTConv(8192, backend="triton")(u, k)          # fp32 tops out at 4096


def test_triton_missing_gives_clear_error_and_torch_still_works(monkeypatch):
    """Without triton the package imports, 'auto'/'torch' run, and 'triton' says what is
    missing."""
    real_import = builtins.__import__

    def no_triton(name, *args, **kwargs):
        if name == "triton" or name.startswith("triton."):
            raise ImportError("No module named 'triton'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_triton)
    monkeypatch.delitem(sys.modules, "iclr24.papers.flashfftconv.triton_kernel", raising=False)
    monkeypatch.delattr(importlib.import_module("iclr24.papers.flashfftconv"), "triton_kernel",
                        raising=False)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    u, k = torch.randn(2, 1, 64), torch.randn(1, 64)
    ref = fft_conv_reference(u.double(), k.double())
    assert _rel(MonarchFFTConv(128)(u, k), ref) < 1e-5
    with pytest.raises(ImportError, match="backend='triton' needs the triton package"):
        MonarchFFTConv(256, backend="triton")(u, k)


def test_gpu_benchmark_script_cpu_side():
    """The GPU benchmark imports, parses its arguments and exits clearly without CUDA."""
    spec = importlib.util.spec_from_file_location("flashfftconv_gpu",
                                                  ROOT / "benchmarks" / "flashfftconv_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = mod.parse_args(["--lengths", "10,12", "--dtypes", "fp16", "--repeats", "3"])
    assert args.lengths == [1024, 4096] and args.dtypes == [torch.float16] and args.repeats == 3
    assert mod.parse_args([]).lengths[0] == 256
    if torch.cuda.is_available():
        pytest.skip("CUDA present: the no-CUDA message is not reachable")
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "flashfftconv_gpu.py")],
                         check=False, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "no CUDA device" in out.stderr
