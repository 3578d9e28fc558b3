"""Discrepancies between measures: sliced Wasserstein (the paper's loss) and Chamfer (baseline).

Sliced Wasserstein (Le et al., ICLR 2024, Sec. 3.2), for mu = sum_i a_i delta_{x_i} and
nu = sum_j b_j delta_{y_j} in R^d:

    SW_p^p(mu, nu) = E_{theta ~ U(S^{d-1})} W_p^p(theta # mu, theta # nu)
                  ~= (1/L) sum_l int_0^1 |F^{-1}_{theta_l # mu}(q) - F^{-1}_{theta_l # nu}(q)|^p dq.

The 1-D integral is computed exactly for *weighted* measures by merging the two cumulative
weight sequences (the quantile levels where either quantile function jumps), so measures of
different sizes and area weights (the varifold measure) are handled without resampling. The
function returns SW_p = (SW_p^p)^(1/p), the convention of ``ot.sliced_wasserstein_distance``, which
the tests use as the reference for the same projections. Directions are drawn fresh at every
call from the caller's ``torch.Generator`` (fixed directions would bias the training loss).

Chamfer distance (pytorch3d convention, squared distances, mean over points):
CD(X, Y) = 1/|X| sum_x min_y ||x - y||^2 + 1/|Y| sum_y min_x ||x - y||^2. It is exact brute force
(``torch.cdist``), computed block-wise so memory stays O(n * block); the nearest neighbours are
found without autograd and the squared distances to them are then recomputed differentiably,
which gives the same value and gradient as differentiating the full distance matrix.
"""

from __future__ import annotations

import torch

__all__ = ["chamfer_distance", "random_projections", "sliced_wasserstein", "wasserstein_1d"]


def _check_measure(x: torch.Tensor, w: torch.Tensor | None, name: str, wname: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (n, d), got {type(x).__name__}")
    if x.ndim != 2 or x.shape[0] == 0 or not x.is_floating_point():
        raise ValueError(f"{name} must be a non-empty float tensor of shape (n, d), got "
                         f"{tuple(x.shape)} {x.dtype}")
    if not bool(torch.isfinite(x.detach()).all()):
        raise ValueError(f"{name} contains NaN or inf ({int((~torch.isfinite(x.detach())).sum())} "
                         f"of {x.numel()} entries); a measure's support must be finite")
    if w is None:
        return torch.full((x.shape[0],), 1.0 / x.shape[0], dtype=x.dtype, device=x.device)
    if not isinstance(w, torch.Tensor):
        w = torch.as_tensor(w, dtype=x.dtype, device=x.device)
    if w.shape != (x.shape[0],):
        raise ValueError(f"{wname} must have shape ({x.shape[0]},) to match {name}, got "
                         f"{tuple(w.shape)}")
    if not torch.isfinite(w.detach()).all() or bool((w.detach() < 0).any()):
        raise ValueError(f"{wname} must be finite and non-negative "
                         f"(min {float(w.detach().min()):.3g})")
    total = w.sum()
    if not float(total.detach()) > 0.0:
        raise ValueError(f"{wname} must have a positive sum")
    return w.to(x.dtype) / total


def _check_pair(x: torch.Tensor, y: torch.Tensor) -> None:
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must live in the same dimension, got x: (n, {x.shape[1]}) and "
                         f"y: (m, {y.shape[1]})")
    if x.dtype != y.dtype:
        raise TypeError(f"x and y must have the same dtype, got x: {x.dtype} and y: {y.dtype}; "
                        "cast one of them (e.g. y.to(x.dtype))")
    if x.device != y.device:
        raise ValueError(f"x and y must be on the same device, got {x.device} and {y.device}")


def random_projections(d: int, n_projections: int, generator: torch.Generator | None = None,
                       dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"
                       ) -> torch.Tensor:
    """``n_projections`` i.i.d. uniform directions on S^{d-1}, as columns: (d, L)."""
    if not isinstance(n_projections, int) or isinstance(n_projections, bool) or n_projections < 1:
        raise ValueError(f"n_projections must be a positive int, got {n_projections!r}")
    gen_device = generator.device if generator is not None else device
    theta = torch.randn(d, n_projections, generator=generator, dtype=dtype, device=gen_device)
    return (theta / torch.linalg.vector_norm(theta, dim=0, keepdim=True)).to(device)


def wasserstein_1d(u: torch.Tensor, v: torch.Tensor, a: torch.Tensor, b: torch.Tensor,
                   p: float = 2.0) -> torch.Tensor:
    """W_p^p between weighted 1-D measures, batched over rows.

    ``u``: (L, n) values, ``a``: (n,) weights summing to 1; ``v``: (L, m), ``b``: (m,).
    Returns (L,): int_0^1 |F_u^{-1}(q) - F_v^{-1}(q)|^p dq, exact for discrete measures."""
    u_sorted, iu = torch.sort(u, dim=1)
    v_sorted, iv = torch.sort(v, dim=1)
    cu = torch.cumsum(a[iu], dim=1)  # F_u at its jump points
    cv = torch.cumsum(b[iv], dim=1)
    levels, _ = torch.sort(torch.cat([cu, cv], dim=1), dim=1)  # where either quantile jumps
    dq = torch.diff(levels, dim=1, prepend=torch.zeros_like(levels[:, :1]))
    q = levels.detach().contiguous()
    ku = torch.searchsorted(cu.detach().contiguous(), q).clamp_max(u.shape[1] - 1)
    kv = torch.searchsorted(cv.detach().contiguous(), q).clamp_max(v.shape[1] - 1)
    qu = torch.gather(u_sorted, 1, ku)  # F_u^{-1}(q)
    qv = torch.gather(v_sorted, 1, kv)
    return (dq * (qu - qv).abs().pow(p)).sum(dim=1)


def sliced_wasserstein(x: torch.Tensor, y: torch.Tensor, a: torch.Tensor | None = None,
                       b: torch.Tensor | None = None, n_projections: int = 100, p: float = 2.0,
                       generator: torch.Generator | None = None,
                       projections: torch.Tensor | None = None) -> torch.Tensor:
    """Monte-Carlo sliced Wasserstein distance SW_p between weighted point measures.

    ``x``: (n, d) support of the prediction, ``a``: (n,) weights (uniform if None; normalised);
    ``y``: (m, d) and ``b``: (m,) the target. ``projections``: optional (d, L) unit directions
    (then ``n_projections`` and ``generator`` are unused); otherwise L = ``n_projections`` fresh
    directions from ``generator``. Returns a scalar tensor, differentiable in x, y, a, b."""
    uniform_equal = a is None and b is None and x.shape[0] == y.shape[0]
    a = _check_measure(x, a, "x", "a")
    b = _check_measure(y, b, "y", "b")
    _check_pair(x, y)
    if isinstance(p, bool) or not isinstance(p, int | float) or not p >= 1:
        raise ValueError(f"p must be >= 1, got {p!r}")
    d = x.shape[1]
    if projections is None:
        theta = random_projections(d, n_projections, generator, x.dtype, x.device)
    else:
        theta = torch.as_tensor(projections, dtype=x.dtype, device=x.device)
        if theta.ndim != 2 or theta.shape[0] != d:
            raise ValueError(f"projections must have shape ({d}, L), got {tuple(theta.shape)}")
    u, v = (x @ theta).T, (y @ theta).T  # theta_l # mu, theta_l # nu
    if uniform_equal:  # equal-size uniform measures: the quantile functions are the sorted values
        w = (torch.sort(u, dim=1)[0] - torch.sort(v, dim=1)[0]).abs().pow(p).mean(dim=1)
    else:
        w = wasserstein_1d(u, v, a, b, p)  # W_p^p(theta_l # mu, theta_l # nu)
    return w.mean().pow(1.0 / p)  # SW_p = ((1/L) sum_l W_p^p)^(1/p)


def _nearest_sq(x: torch.Tensor, y: torch.Tensor, block: int) -> torch.Tensor:
    """||x_i - y_{nn(i)}||^2 for every row of x (differentiable in x and y)."""
    with torch.no_grad():
        idx = torch.cat([torch.cdist(x[i:i + block], y).argmin(dim=1)
                         for i in range(0, x.shape[0], block)])
    return (x - y[idx]).pow(2).sum(dim=1)


def chamfer_distance(x: torch.Tensor, y: torch.Tensor, block: int = 2048) -> torch.Tensor:
    """Exact symmetric Chamfer distance (squared, mean over points) between (n, d) and (m, d)
    point sets; O(n m) time, O((n + m) * block) memory. Returns a scalar tensor."""
    _check_measure(x, None, "x", "a")
    _check_measure(y, None, "y", "b")
    _check_pair(x, y)
    if not isinstance(block, int) or block < 1:
        raise ValueError(f"block must be a positive int, got {block!r}")
    # CD = mean_x min_y ||x - y||^2 + mean_y min_x ||x - y||^2
    return _nearest_sq(x, y, block).mean() + _nearest_sq(y, x, block).mean()
