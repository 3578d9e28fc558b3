"""Reproductions of autofd's claims (spec: shared/papers/autofd.md, "Laptop-scale reproduction").

* ``exact_derivatives`` - functional derivatives of local, semilocal and nonlocal functionals
  equal the hand-derived Euler-Lagrange expressions at off-grid points, against the
  "discretize then differentiate" baseline in the same run; null arm: the semilocal
  derivatives without the term the nabla transpose supplies.
* ``brachistochrone`` - minimising F(y) with the functional-gradient machinery reaches the
  cycloid (gap ratio to the cycloid, scored by an accurate quadrature; 3 seeds at small);
  null arm: the untrained curve; positive control: an optimised polyline.
* ``call_cache`` - call caching makes the evaluation count of nested compositions linear in the
  depth instead of exponential without changing the computed values; the neural-functional
  example's loss decreases under functional gradient descent, below the same descent with the
  kernels frozen (null arm).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_metric, sizes

# --------------------------------------------------------------------------------------------
# exact_derivatives
# --------------------------------------------------------------------------------------------


# One-shot programs (evaluated once per run): compile time dominates their cost on CPU, so they
# are compiled with XLA's backend optimisation off (same values up to rounding).
_ONE_SHOT = {"xla_backend_optimization_level": 0}


def _jit_once(fun: Callable[..., Any], **kwargs: Any) -> Callable[..., Any]:
    import jax
    return jax.jit(fun, compiler_options=_ONE_SHOT, **kwargs)


def _both_routes(*grads: Any, xq: Any) -> tuple[Any, ...]:
    """Gradient functions (functional_grad, jax.grad, the null arm) at the points xq, in one
    compiled program."""
    import jax
    return _jit_once(jax.vmap(lambda x: tuple(g(x) for g in grads)))(xq)


def _gradient_slot_off(integrand: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """The null arm of a semilocal functional int phi(f, grad f): phi with the derivative through
    its gradient slot stopped, so the functional derivative keeps only d phi/d f and loses
    -div(d phi/d grad f), the term the nabla transpose contributes."""
    import jax

    def phi(f: Any, g: Any) -> Any:
        return integrand(f, jax.lax.stop_gradient(g))
    return phi


def _interp_1d(grid_x: Any, values: Any, xq: Any) -> Any:
    import jax.numpy as jnp
    return jnp.interp(xq, grid_x, values)


def _case_lda(n_base: int, xq: np.ndarray) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    from . import Function, Grid, functional_grad, gauss_legendre, lda_exchange
    from .applications import LDA_EXCHANGE_CONSTANT

    a, b = -4.0, 4.0

    def rho_fn(x: Any) -> Any:
        return jnp.exp(-(x**2))

    def exact(x: Any) -> Any:  # v_x = -(3/pi)^(1/3) rho^(1/3)
        return -((3.0 / math.pi) ** (1.0 / 3.0)) * rho_fn(x) ** (1.0 / 3.0)

    nodes, weights = gauss_legendre(64, a, b)
    rho = Function(rho_fn, [()], (), Grid((nodes,), (weights,)), name="rho")
    ours, ours_jax = _both_routes(functional_grad(lda_exchange)(rho),
                                  jax.grad(lda_exchange)(rho), xq=xq)

    def baseline(xq: Any) -> Any:
        # rho on a uniform grid, jax.grad of the quadrature sum / weight, interpolated
        xs = jnp.linspace(a, b, n_base)
        w = jnp.full(n_base, (b - a) / (n_base - 1)).at[0].mul(0.5).at[-1].mul(0.5)

        def e_h(r: Any) -> Any:
            return jnp.sum(w * LDA_EXCHANGE_CONSTANT * r ** (4.0 / 3.0))
        g_nodes = jax.grad(e_h)(rho_fn(xs)) / w
        return _interp_1d(xs, g_nodes, xq), exact(xq)
    base, ref = _jit_once(baseline)(xq)
    return {"ours": ours, "ours_jax": ours_jax, "base": base, "ref": ref}


def _case_vw(n_base: int, rq: np.ndarray, dim: int) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    from jax.scipy.ndimage import map_coordinates

    from . import (
        Function,
        Grid,
        compose,
        functional_grad,
        gauss_legendre,
        integrate,
        nabla,
        product_grid,
        von_weizsacker,
    )

    a, b = -4.0, 4.0

    def rho_fn(r: Any) -> Any:
        return jnp.exp(-jnp.sum(r**2, axis=-1))

    def exact(r: Any) -> Any:  # dT_W/drho = -|grad rho|^2/(8 rho^2) - div(grad rho / rho)/4
        return dim / 2.0 - jnp.sum(r**2, axis=-1) / 2.0

    n1, w1 = gauss_legendre(12 if dim == 3 else 24, a, b)
    pts, ww = product_grid(n1, w1, dim)
    rho = Function(rho_fn, [(dim,)], (), Grid((pts,), (ww,)), name="rho")

    def t_w(r: Any, g: Any) -> Any:
        return jnp.sum(g**2) / r / 8.0  # |grad rho|^2 / (8 rho), as von_weizsacker

    def nabla_off(rho: Any) -> Any:
        return integrate(compose(_gradient_slot_off(t_w), rho, nabla(rho)))
    ours, ours_jax, null = _both_routes(functional_grad(von_weizsacker)(rho),
                                        jax.grad(von_weizsacker)(rho),
                                        functional_grad(nabla_off)(rho), xq=rq)
    h = (b - a) / (n_base - 1)

    def baseline(rq: Any) -> Any:
        # uniform grid, central finite differences, jax.grad of the sum / cell volume
        xs = jnp.linspace(a, b, n_base)
        mesh = jnp.stack(jnp.meshgrid(*([xs] * dim), indexing="ij"), axis=-1)
        vol = h**dim

        def t_h(r: Any) -> Any:
            grads = jnp.stack(jnp.gradient(r, h), axis=-1)
            return jnp.sum(vol * jnp.sum(grads**2, axis=-1) / r / 8.0)
        g_nodes = jax.grad(t_h)(rho_fn(mesh)) / vol
        coords = [(rq[:, i] - a) / h for i in range(dim)]
        return map_coordinates(g_nodes, coords, order=1), exact(rq)
    base, ref = _jit_once(baseline)(rq)
    return {"ours": ours, "ours_jax": ours_jax, "base": base, "ref": ref, "nabla_off": null}


def _case_brachistochrone(n_base: int, xq: np.ndarray) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    from . import (
        Function,
        Grid,
        brachistochrone_functional,
        brachistochrone_integrand,
        compose,
        functional_grad,
        integrate,
        nabla,
        sqrt_substitution,
    )

    def y_fn(x: Any) -> Any:
        return -jnp.sin(jnp.pi * x / 2.0)

    def exact(x: Any) -> Any:
        # hand-derived Euler-Lagrange: dL/dy - d/dx dL/dy', L = sqrt(1+p^2)/sqrt(-y)
        y = y_fn(x)
        p = -(jnp.pi / 2.0) * jnp.cos(jnp.pi * x / 2.0)
        pp = (jnp.pi / 2.0) ** 2 * jnp.sin(jnp.pi * x / 2.0)
        q = jnp.sqrt(1.0 + p**2)
        dldy = 0.5 * q * (-y) ** -1.5
        d_dx_dldp = pp * (1.0 + p**2) ** -1.5 * (-y) ** -0.5 + 0.5 * p**2 / q * (-y) ** -1.5
        return dldy - d_dx_dldp

    nodes, weights = sqrt_substitution(64)
    y = Function(y_fn, [()], (), Grid((nodes,), (weights,)), name="y")

    def nabla_off(y: Any) -> Any:
        return integrate(compose(_gradient_slot_off(brachistochrone_integrand), y, nabla(y)))
    ours, ours_jax, null = _both_routes(functional_grad(brachistochrone_functional)(y),
                                        jax.grad(brachistochrone_functional)(y),
                                        functional_grad(nabla_off)(y), xq=xq)
    h = 1.0 / n_base

    def baseline(xq: Any) -> Any:
        # y at x_i = i h (i = 1..n), y_0 = 0 fixed, central differences, grad / h
        xs = jnp.arange(1, n_base + 1) * h

        def f_h(u: Any) -> Any:
            full = jnp.concatenate([jnp.zeros(1), u])
            du = jnp.gradient(full, h)[1:]
            return jnp.sum(h * brachistochrone_integrand(u, du))
        g_nodes = jax.grad(f_h)(y_fn(xs)) / h
        return _interp_1d(xs, g_nodes, xq), exact(xq)
    base, ref = _jit_once(baseline)(xq)
    return {"ours": ours, "ours_jax": ours_jax, "base": base, "ref": ref, "nabla_off": null}


def _case_nonlocal(n_base: int, xq: np.ndarray) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp

    from . import Function, Grid, functional_grad, gauss_legendre, nonlocal_energy

    a, b = -6.0, 6.0
    nodes, weights = gauss_legendre(200, a, b)

    def f_fn(x: Any) -> Any:
        return jnp.exp(-(x**2))

    def k_fn(x: Any, y: Any) -> Any:
        return jnp.exp(-((x - y) ** 2))

    f = Function(f_fn, [()], (), Grid((nodes,), (weights,)), name="f")
    k = Function(k_fn, [(), ()], (), Grid((nodes, nodes), (weights, weights)), name="k")
    ours, ours_jax = _both_routes(functional_grad(nonlocal_energy)(f, k),
                                  jax.grad(nonlocal_energy)(f, k), xq=xq)

    def baseline(xq: Any) -> Any:
        # 2 int k(x, y) f(y) dy = 2 sqrt(pi/2) exp(-x^2/2)
        ref = 2.0 * math.sqrt(math.pi / 2.0) * jnp.exp(-(xq**2) / 2.0)
        xs = jnp.linspace(a, b, n_base)
        w = jnp.full(n_base, (b - a) / (n_base - 1)).at[0].mul(0.5).at[-1].mul(0.5)
        kmat = k_fn(xs[:, None], xs[None, :])

        def e_h(u: Any) -> Any:
            return jnp.sum(w[:, None] * w[None, :] * kmat * u[:, None] * u[None, :])
        g_nodes = jax.grad(e_h)(f_fn(xs)) / w
        return _interp_1d(xs, g_nodes, xq), ref
    base, ref = _jit_once(baseline)(xq)
    return {"ours": ours, "ours_jax": ours_jax, "base": base, "ref": ref}


def _second_order_nonlocal(xq: np.ndarray) -> float:
    """d/de <dF/df[f + e g], v> = <2 int k(., y) g(y) dy, v>: JVP through a returned gradient."""
    import jax.numpy as jnp

    from . import (
        Function,
        Grid,
        functional_grad,
        functional_jvp,
        gauss_legendre,
        integrate,
        nonlocal_energy,
    )

    nodes, weights = gauss_legendre(120, -6.0, 6.0)
    grid1 = Grid((nodes,), (weights,))
    f = Function(lambda x: jnp.exp(-(x**2)), [()], (), grid1, name="f")
    g = Function(lambda x: x * jnp.exp(-(x**2) / 2.0), [()], (), grid1, name="g")
    v = Function(lambda x: jnp.exp(-((x - 0.5) ** 2)), [()], (), grid1, name="v")
    k = Function(lambda x, y: jnp.exp(-((x - y) ** 2)), [(), ()], (),
                 Grid((nodes, nodes), (weights, weights)), name="k")

    def pairing(f_: Any) -> Any:
        return integrate(functional_grad(nonlocal_energy)(f_, k) * v)
    _, second = functional_jvp(pairing, (f,), (g,))
    w = jnp.asarray(weights)
    kmat = jnp.exp(-((nodes[:, None] - nodes[None, :]) ** 2))
    ref = jnp.sum(w * jnp.exp(-((nodes - 0.5) ** 2))
                  * (2.0 * kmat @ (w * nodes * jnp.exp(-(nodes**2) / 2.0))))
    return float(abs(second - ref) / abs(ref))


_EXACT = "ours_max_err <= 1e-8 and baseline_min_err >= 100 * max(ours_max_err, 1e-8)"


@claim(
    rule={"smoke": _EXACT, "small": _EXACT + " and second_order_err <= 1e-8"},
    control="nabla_off_min_err > 1e-8",
    paper=("Functional derivatives of local, semilocal and nonlocal functionals come out of "
           "jax.grad as exact callable functions (qualitative, whole paper); the spec expects "
           "max error <= 1e-8 at off-grid points vs 1e-2..1e-4 for discretize-then-"
           "differentiate."),
    paper_numbers={"ours_max_err": 1e-8},
    against=("discretize-then-differentiate (64-point uniform grid, finite differences, "
             "interpolated); hand-derived closed forms as reference; null arm: the semilocal "
             "derivatives with the gradient slot's contribution switched off"),
)
def exact_derivatives(scale: Scale, seed: int) -> Measurement:
    """LDA exchange (local), von Weizsaecker 3-D (semilocal), brachistochrone integrand
    (semilocal) and a Gaussian-kernel nonlocal energy: max |error| against the hand-derived
    closed forms at 64 random off-grid interior points for autofd's functional gradient (both
    routes: ``functional_grad`` and ``jax.grad``) and for discretize-then-differentiate (64
    points per dimension, finite differences, interpolated). ``small`` adds von Weizsaecker in
    2-D and a second-order check (a JVP through a returned gradient, relative error).

    An exactness check: the method is deterministic and the reference closed-form, so there are
    no seeds to average and an interval would mean nothing. The rule fails when any case is off
    by more than 1e-8 (float64), when the baseline is not at least 100x worse than that
    tolerance (the paper's point is exact derivatives where discretising is approximate), or
    at small when the second-order error exceeds 1e-8.

    Control (a sceptic's "would this comparison notice a wrong derivative?"): the two semilocal
    cases are also differentiated with the gradient slot stopped (``stop_gradient`` on grad f
    inside the integrand), which drops -div(d phi/d grad f), the term the nabla transpose
    supplies; that plausible-but-wrong derivative must miss the closed form by more than the
    rule's 1e-8 in every such case (``nabla_off_min_err``)."""
    import jax

    rng = np.random.default_rng(seed)
    n_query = 64
    n_base = 64
    cases: dict[str, Callable[[], dict[str, Any]]] = {
        "lda": lambda: _case_lda(n_base, rng.uniform(-3.0, 3.0, n_query)),
        "vw3d": lambda: _case_vw(n_base, _ball(rng, n_query, 3, 1.5), 3),
        "brachistochrone": lambda: _case_brachistochrone(n_base, rng.uniform(0.1, 0.9, n_query)),
        "nonlocal": lambda: _case_nonlocal(n_base, rng.uniform(-3.0, 3.0, n_query)),
    }
    if scale is not Scale.SMOKE:
        cases["vw2d"] = lambda: _case_vw(n_base, _ball(rng, n_query, 2, 1.5), 2)
    from . import compiler_options

    metrics: dict[str, float] = {}
    rows = []
    with jax.enable_x64(True), compiler_options(**_ONE_SHOT):
        for name, run in cases.items():
            t0 = time.perf_counter()
            out = run()
            err = float(np.max(np.abs(np.asarray(out["ours"]) - np.asarray(out["ref"]))))
            err_jax = float(np.max(np.abs(np.asarray(out["ours_jax"]) - np.asarray(out["ref"]))))
            base = float(np.max(np.abs(np.asarray(out["base"]) - np.asarray(out["ref"]))))
            metrics[f"ours_err_{name}"] = err
            metrics[f"jax_grad_err_{name}"] = err_jax
            metrics[f"baseline_err_{name}"] = base
            row = {"case": name, "functional_grad max err": err, "jax.grad max err": err_jax,
                   "discretize-then-differentiate max err": base}
            if "nabla_off" in out:
                metrics[f"nabla_off_err_{name}"] = row["null: grad slot off, max err"] = float(
                    np.max(np.abs(np.asarray(out["nabla_off"]) - np.asarray(out["ref"]))))
            rows.append({**row, "seconds": round(time.perf_counter() - t0, 2)})
        if scale is not Scale.SMOKE:
            metrics["second_order_err"] = _second_order_nonlocal(rng.uniform(-3, 3, 8))
    names = list(cases)
    metrics["ours_max_err"] = max(max(metrics[f"ours_err_{n}"], metrics[f"jax_grad_err_{n}"])
                                  for n in names)
    metrics["baseline_min_err"] = min(metrics[f"baseline_err_{n}"] for n in names)
    metrics["nabla_off_min_err"] = min(v for k, v in metrics.items()
                                       if k.startswith("nabla_off_err_"))
    return Measurement(
        metrics=metrics,
        tables={"errors": rows},
        notes=("Errors are max |dF/df(x) - closed form| at 64 random interior off-grid points, "
               "float64. 'ours' counts both routes (functional_grad and jax.grad, which share "
               "the rules); the nonlocal case carries 200-node Gauss-Legendre quadrature error "
               "because its derivative is itself an integral. The baseline is exact at its own "
               "nodes for local functionals; its error is finite-difference + interpolation. "
               "nabla_off_* is the null arm: the semilocal derivative without the term the "
               "nabla transpose supplies, scored against the same closed form."),
    )


def _ball(rng: np.random.Generator, n: int, dim: int, radius: float) -> np.ndarray:
    x = rng.normal(size=(n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x * radius * rng.uniform(0.0, 1.0, (n, 1)) ** (1.0 / dim)


# --------------------------------------------------------------------------------------------
# brachistochrone
# --------------------------------------------------------------------------------------------

F_CYCLOID = 2.5819  # cycloid through (0, 0) and (1, -1)
F_LINE = 2.0 * math.sqrt(2.0)  # straight line y = -x


def _mlp_init(key: Any, width: int) -> list[tuple[Any, Any]]:
    import jax
    import jax.numpy as jnp
    sizes_ = [1, width, width, 1]
    params = []
    for i, (m, n) in enumerate(itertools.pairwise(sizes_)):
        key, sub = jax.random.split(key)
        scale = 0.0 if i == len(sizes_) - 2 else 1.0 / math.sqrt(m)  # last layer 0: y = -x
        params.append((scale * jax.random.normal(sub, (m, n)), jnp.zeros(n)))
    return params


def _mlp(params: list[tuple[Any, Any]], x: Any) -> Any:
    import jax
    h = x.reshape(1)
    for i, (w, b) in enumerate(params):
        h = h @ w + b
        if i < len(params) - 1:
            h = jax.nn.sigmoid(h)
    return h[0]


def _curve(params: list[tuple[Any, Any]]) -> Callable[[Any], Any]:
    import jax.numpy as jnp

    def y(x: Any) -> Any:
        return jnp.sin(jnp.pi * x) * _mlp(params, x) - x  # y = sin(pi x) MLP(x) - x
    y.params = params  # type: ignore[attr-defined]
    return y


def _adam(grad_fn: Callable[[Any], tuple[Any, Any]], params: Any, lr: float, steps: int,
          progress: Callable[..., None], label: str, frac: tuple[float, float]
          ) -> tuple[Any, list[float]]:
    """Plain Adam (b1=0.9, b2=0.999, eps=1e-8), jitted step; returns params and loss curve."""
    import jax
    import jax.numpy as jnp
    tmap = jax.tree_util.tree_map
    m = tmap(jnp.zeros_like, params)
    v = tmap(jnp.zeros_like, params)

    @_jit_once  # compiled once, run per step: at these sizes compile time still dominates
    def step(p: Any, m: Any, v: Any, t: Any) -> Any:
        loss, g = grad_fn(p)
        m = tmap(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = tmap(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        mhat = tmap(lambda a: a / (1 - 0.9**t), m)
        vhat = tmap(lambda a: a / (1 - 0.999**t), v)
        p = tmap(lambda a, mh, vh: a - lr * mh / (jnp.sqrt(vh) + 1e-8), p, mhat, vhat)
        return p, m, v, loss
    losses = []
    for t in range(1, steps + 1):
        params, m, v, loss = step(params, m, v, jnp.asarray(t, dtype=jnp.float64))
        if t % 50 == 0 or t == 1 or t == steps:
            losses.append(float(loss))
            progress(frac[0] + (frac[1] - frac[0]) * t / steps, f"{label}: step {t}")
    return params, losses


def _polyline_time(y_inner: Any, n_seg: int) -> Any:
    """Exact F of the polyline through (0,0), (x_i, y_i), (1,-1): per segment
    sqrt(dx^2 + dy^2) * 2 / (sqrt(-y0) + sqrt(-y1)) (1/sqrt(-y) integrated exactly)."""
    import jax.numpy as jnp
    xs = jnp.linspace(0.0, 1.0, n_seg + 1)
    ys = jnp.concatenate([jnp.zeros(1), y_inner, -jnp.ones(1)])
    dx, dy = jnp.diff(xs), jnp.diff(ys)
    s = jnp.sqrt(-jnp.minimum(ys, 0.0))
    return jnp.sum(jnp.sqrt(dx**2 + dy**2) * 2.0 / (s[:-1] + s[1:]))


_BRACH = "gap_ratio < 0.15 and residual_log10_drop >= 1 and fd_route_grad_rel_diff <= 1e-6"


@claim(
    rule={"smoke": _BRACH,
          "small": _BRACH + " and gap_ratio_fd < 0.15 and gap_ratio_residual < 0.15"},
    control="gap_ratio_polyline < 0.15 and gap_ratio_untrained >= 0.15",
    paper=("examples/brachistochrone.ipynb: an MLP curve trained on F (and on the functional-"
           "derivative losses) approaches the cycloid; cycloid F* = 2.5819, straight line "
           "F = 2.8284 (reference values computed for the spec; the notebook's printed loss is "
           "a biased quadrature)."),
    paper_numbers={"F_learned": F_CYCLOID, "F_line": F_LINE},
    against=("the cycloid's F* and the straight line y = -x (gap ratio); controls: the untrained "
             "curve (null) and a 64-segment polyline optimised on its exact travel time "
             "(positive control)"),
)
def brachistochrone(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Train y(x) = sin(pi x) MLP(x) - x (MLP 1-32-32-1, sigmoid, Adam) on the notebook's three
    losses: F directly, F through the functional derivative (int stop_grad(dF/dy) y) and the
    Euler-Lagrange residual int (dF/dy)^2 (smoke: F only, 1 seed; small: all three, 3 seeds,
    each seed its own initialisation). Every curve is scored by an accurate quadrature (x = s^2,
    400-node Gauss-Legendre); ``gap_ratio`` = (F - F*) / (F_line - F*) is 0 at the cycloid and
    1 at the straight line (mean over seeds, t interval at small).

    The rule, on the paper's terms (the curves approach the cycloid and the functional
    derivative is the Euler-Lagrange expression): every loss's gap ratio below 0.15 over its
    whole interval; the EL residual int (dF/dy)^2 at the F-trained curve at least 10x below the
    start (``residual_log10_drop`` >= 1: dF/dy vanishes at the minimiser, as it must if the
    derivative is right); the functional-derivative route's parameter gradient equal to F's
    (``fd_route_grad_rel_diff`` <= 1e-6, an exactness check, max over seeds). It fails when a
    curve stays above the band, the residual does not fall, or the routes disagree.

    Control: the null a sceptic tries first, the untrained model (the training's starting curve,
    the line by construction: the MLP's last layer starts at 0), must sit outside the band
    (``gap_ratio_untrained`` >= 0.15); and a positive control, a 64-segment polyline optimised
    by plain ``jax.grad`` of its exact travel time with the same step budget, must reach the
    band (``gap_ratio_polyline`` < 0.15), showing that the quadrature and F* let an independent
    optimiser get there (the spec: the baseline lands in the same range; the claim is that the
    functional-gradient route is correct and competitive, not faster)."""
    return _brachistochrone(scale, seed, progress)


def _brachistochrone(scale: Scale, seed: int, progress: Callable[..., None] | None = None,
                     method_steps: int | None = None) -> Measurement:
    """The body of :func:`brachistochrone`; ``method_steps`` overrides the MLP's training steps
    (the tests pass 0: the untrained null arm), the polyline keeps its budget."""
    import jax
    import jax.numpy as jnp

    from . import (
        Function,
        Grid,
        brachistochrone_functional,
        brachistochrone_travel_time,
        compose,
        cycloid,
        functional_grad,
        integrate,
        sqrt_substitution,
    )

    progress = progress or (lambda *a, **k: None)
    steps = sizes(scale, smoke=300, small=5000)
    mlp_steps = steps if method_steps is None else int(method_steps)
    lr = sizes(scale, smoke=1e-2, small=1e-3)
    n_seeds = sizes(scale, smoke=1, small=3)
    width, n_grid, n_seg = 32, 50, 64
    xc, yc, f_star = cycloid()
    with jax.enable_x64(True):
        f_line = brachistochrone_travel_time(lambda x: -x)  # float64, like every curve's F
    span = f_line - f_star

    def gap(f: float) -> float:
        return (f - f_star) / span  # (F - F*) / (F_line - F*)

    per_seed: dict[str, list[float]] = {}

    def record(name: str, value: float) -> None:
        per_seed.setdefault(name, []).append(float(value))

    with jax.enable_x64(True):
        nodes, weights = sqrt_substitution(n_grid)
        grid = Grid((nodes,), (weights,))

        def as_function(params: Any) -> Function:
            return Function(_curve(params), [()], (), grid, name="y")

        def loss_direct(params: Any) -> Any:
            return brachistochrone_functional(as_function(params))  # F(y)

        def loss_fd(params: Any) -> Any:
            y = as_function(params)
            dfdy = functional_grad(brachistochrone_functional)(y)
            # int stop_grad(dF/dy) y dx: its theta-gradient is dF/dtheta by the chain rule
            return integrate(compose(lambda a, b: jax.lax.stop_gradient(a) * b, dfdy, y))

        interior = (nodes > 0.05) & (nodes < 0.95)

        def residual(params: Any) -> Any:
            dfdy = functional_grad(brachistochrone_functional)(as_function(params))
            vals = jax.vmap(dfdy)(jnp.asarray(nodes))
            return jnp.sum(jnp.where(interior, weights * vals**2, 0.0))  # int (dF/dy)^2

        def route_diff(p: Any) -> Any:
            # the functional-derivative route gives the same parameter gradient as F itself
            flat = [jnp.concatenate([a.ravel() for a in jax.tree_util.tree_leaves(g)])
                    for g in (jax.grad(loss_direct)(p), jax.grad(loss_fd)(p))]
            return jnp.linalg.norm(flat[0] - flat[1]) / jnp.linalg.norm(flat[0])
        route_diff = _jit_once(route_diff)
        residual_jit = _jit_once(residual)
        init_fn = _jit_once(lambda key: jax.tree_util.tree_map(
            lambda a: a.astype(jnp.float64), _mlp_init(key, width)))

        runs = [("direct", loss_direct), ("fd", loss_fd), ("residual", residual)]
        if scale is Scale.SMOKE:
            runs = runs[:1]  # the fd route's gradient equals F's (checked on every seed)
        n_parts = n_seeds * len(runs) + 1
        curves: dict[str, Any] = {}
        curves_loss: dict[str, list[float]] = {}
        for s in range(n_seeds):
            init = init_fn(jax.random.PRNGKey(seed + s))
            # init has a zero last layer, so compare on a perturbed point too
            pert = jax.tree_util.tree_map(lambda a: a + 0.05, init)
            record("fd_route_grad_rel_diff", max(route_diff(init), route_diff(pert)))
            record("F_untrained", brachistochrone_travel_time(_curve(init)))
            for i, (name, fn) in enumerate(runs):
                part = s * len(runs) + i
                params, losses = _adam(jax.value_and_grad(fn), init, lr, mlp_steps, progress,
                                       f"seed {seed + s}: {name}",
                                       (part / n_parts, (part + 1) / n_parts))
                record(f"F_{name}", brachistochrone_travel_time(_curve(params)))
                if s == 0:
                    curves[name], curves_loss[name] = _curve(params), losses
                if name == "direct":
                    res0, res1 = float(residual_jit(init)), float(residual_jit(params))
                    record("residual_init", res0)
                    record("residual_direct_final", res1)
                    record("residual_log10_drop", math.log10(res0 / max(res1, 1e-300)))

        # polyline baseline on its exact travel time (starts at the line: no seed enters)
        y0 = -jnp.linspace(0.0, 1.0, n_seg + 1)[1:-1]
        y_poly, _ = _adam(jax.value_and_grad(lambda u: _polyline_time(u, n_seg)), y0, lr,
                          steps, progress, "polyline", ((n_parts - 1) / n_parts, 1.0))
        f_poly = float(_jit_once(_polyline_time, static_argnums=1)(y_poly, n_seg))

    metrics: dict[str, Any] = {
        "fd_route_grad_rel_diff": max(per_seed["fd_route_grad_rel_diff"]),
        "F_line": f_line, "F_cycloid": f_star, "F_polyline": f_poly,
        "gap_ratio_polyline": gap(f_poly),
        "gap_ratio_untrained": seed_metric([gap(f) for f in per_seed["F_untrained"]]),
    }
    for name, _ in runs:
        metrics[f"F_{name}"] = seed_metric(per_seed[f"F_{name}"])
        key = "gap_ratio" if name == "direct" else f"gap_ratio_{name}"
        metrics[key] = seed_metric([gap(f) for f in per_seed[f"F_{name}"]])
    for key in ("residual_init", "residual_direct_final", "residual_log10_drop"):
        metrics[key] = seed_metric(per_seed[key])
    metrics["F_learned"] = metrics["F_direct"]
    metrics["n_seeds"] = n_seeds

    plot_metrics = {k: getattr(v, "value", v) for k, v in metrics.items()}
    plot_metrics.update({f"F_{name}": per_seed[f"F_{name}"][0] for name, _ in runs})
    fig = _brachistochrone_figure(curves, xc, yc, y_poly, n_seg, curves_loss, plot_metrics)
    rows = [{"seed": seed + s, **{k: round(v[s], 6) for k, v in per_seed.items()}}
            for s in range(n_seeds)]
    return Measurement(
        metrics=metrics, figure=fig, tables={"per_seed": rows},
        notes=(f"{mlp_steps} Adam steps (lr {lr}) per loss and seed, {n_seeds} seed(s); "
               f"training grid: {n_grid} Gauss-Legendre nodes in s with x = s^2 (the "
               "notebook's uniform grid on [0.01, 1] is biased low). True F of every curve by "
               "400-node quadrature after the same substitution. The functional-derivative "
               "route (int stop_grad(dF/dy) y) reproduces F's parameter gradient "
               "(fd_route_grad_rel_diff). The residual loss int (dF/dy)^2 (interior nodes) and "
               "the fd route are trained at small scale only. The figure shows the first "
               "seed."),
    )


def _brachistochrone_figure(curves: dict[str, Any], xc: np.ndarray, yc: np.ndarray,
                            y_poly: Any, n_seg: int, losses: dict[str, list[float]],
                            metrics: dict[str, float]) -> Any:
    import jax
    import jax.numpy as jnp
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax, ax2 = fig.subplots(1, 2)
    xs = np.linspace(0.0, 1.0, 200)
    ax.plot(xc, yc, "k-", lw=2, label=f"cycloid F={metrics['F_cycloid']:.4f}")
    ax.plot(xs, -xs, "k:", label=f"line F={metrics['F_line']:.4f}")
    for name, c in curves.items():
        with jax.enable_x64(True):
            ys = np.asarray(_jit_once(jax.vmap(c))(jnp.asarray(xs)))
        ax.plot(xs, ys, "--", label=f"{name} F={metrics[f'F_{name}']:.4f}")
    px = np.linspace(0.0, 1.0, n_seg + 1)
    py = np.concatenate([[0.0], np.asarray(y_poly), [-1.0]])
    ax.plot(px, py, ":", label=f"polyline F={metrics['F_polyline']:.4f}")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize=7)
    ax.set_title("brachistochrone: learned curves vs cycloid")
    for name, ls in losses.items():
        ax2.plot(np.arange(len(ls)), ls, label=name)
    ax2.set_xlabel("logged step (every 50)")
    ax2.set_ylabel("training loss")
    ax2.set_yscale("symlog", linthresh=1e-3)
    ax2.legend(fontsize=7)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# call_cache
# --------------------------------------------------------------------------------------------

def _nested(depth: int) -> Any:
    from jax import lax

    from . import Function
    # lax primitives: the counted bodies are cheap to trace, so the exponential uncached count
    # costs little time (jnp.* would add a nested jit per call). The official benchmark uses
    # f = exp; cos keeps h_d bounded (|h_d| < 2) so its value can be checked at any depth; the
    # counts depend on the graph only, not on the bodies.
    h = Function(lax.sin, [()], (), name="h")
    f = Function(lax.cos, [()], (), name="f")
    g = Function(lax.tanh, [()], (), name="g")
    for _ in range(depth):
        h = f(h) + g(h)  # h_d = f(h_{d-1}) + g(h_{d-1})
    return h


def _nested_reference(depth: int, x: float) -> float:
    """h_d(x) of :func:`_nested` in plain float64 arithmetic (no autofd, no cache)."""
    h = math.sin(x)
    for _ in range(depth):
        h = math.cos(h) + math.tanh(h)
    return h


def _count(fn: Any, cache: bool, *args: Any) -> tuple[int, Any]:
    """(user-body evaluations while tracing one call of fn, the traced ClosedJaxpr)."""
    import jax

    from . import call_cache, count_calls
    with call_cache(cache), count_calls() as counter, jax.disable_jit():
        # a fresh callable: no trace cache; disable_jit: jnp functions trace inline
        closed = jax.make_jaxpr(lambda *a: fn(*a))(*args)
    return counter.leaf, closed


def _traced_value(closed: Any, *args: Any) -> float:
    """Evaluate a traced program (what the cached or uncached trace computes)."""
    from jax.extend.core import jaxpr_as_fun
    return float(np.asarray(jaxpr_as_fun(closed)(*args)[0]))


def _neural_functional(n_grid: int, steps: int, update_kernels: bool = True
                       ) -> tuple[list[float], list[float]]:
    import jax.numpy as jnp

    from . import Function, Grid, functional_value_and_grad, integrate, kernel_layer

    nodes = jnp.linspace(0.0, 1.0, n_grid)
    w = jnp.ones(n_grid) / n_grid
    g1, g2 = Grid((nodes,), (w,)), Grid((nodes, nodes), (w, w))
    x = Function(lambda t: jnp.sin(4 * t * jnp.pi), [()], (), g1, name="x")
    b = Function(lambda t: jnp.sin(t * jnp.pi), [()], (), g1, name="b")
    target = Function(lambda t: jnp.cos(t * jnp.pi), [()], (), g1, name="target")
    k = Function(lambda s, t: jnp.sin(s) + jnp.cos(t), [(), ()], (), g2, name="k")

    def loss(params: Any, x: Any, target: Any) -> Any:
        k1, b1, k2, b2 = params
        o1 = kernel_layer(k1, b1, x, jnp.tanh)
        o2 = kernel_layer(k2, b2, o1)
        return integrate((o2 - target) ** 2)

    params = (k, b, k, b)
    losses, times = [], []
    vg = functional_value_and_grad(loss)
    for _ in range(steps):
        t0 = time.perf_counter()
        value, grads = vg(params, x, target)
        new = tuple(p - 0.1 * gp for p, gp in zip(params, grads))  # functional GD, lr 0.1
        # the null arm keeps the kernels (the nonlocal part) fixed: only biases learn
        params = new if update_kernels else (params[0], new[1], params[2], new[3])
        losses.append(float(value))
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    losses.append(float(loss(params, x, target)))
    times.append(time.perf_counter() - t0)
    return losses, times


@claim(
    rule=("uncached_growth_factor >= 1.9 and cached_nonlinearity <= 0.05 and "
          "count_ratio_at_max_depth >= 100 and cache_value_max_diff <= 1e-10 and "
          "loss_strictly_decreasing == 1 and nf_loss_final < nf_frozen_kernels_loss_final"),
    control="uncached_nonlinearity > 0.05",
    paper=("Sec. 3.3 / examples/benchmark_function_call_cache.py: without caching, nested "
           "h <- f(h) + g(h) costs O(2^depth); with caching it is linear. "
           "examples/neural_operator.py: the neural-functional loss decreases under functional "
           "gradient descent (lr 0.1) while per-step time grows."),
    against=("the same nested compositions traced with the call cache switched off (evaluation "
             "counts and computed values) and a plain float64 recursion; the neural functional "
             "with its kernels frozen (only the biases learn)"),
)
def call_cache(scale: Scale, seed: int, progress: Callable[..., None]) -> Measurement:
    """Count user-function evaluations (deterministic counter, not wall time) when tracing
    h_d = f(h_{d-1}) + g(h_{d-1}) for d = 1..D with the call cache on and off, and for the
    functional gradient of int h_d^2; then run the two-layer neural functional (kernels and
    biases are Functions) for 3 functional-gradient steps. Everything here is deterministic
    (no seed enters): counts and values are exact, so no interval is formed.

    The rule, on the paper's terms: without the cache the count doubles per level
    (``uncached_growth_factor`` >= 1.9), with it the count grows by a constant per level
    (``cached_nonlinearity`` <= 0.05) and is >= 100x smaller at the largest depth; the cache
    does not change what is computed (``cache_value_max_diff`` = the largest difference of h_D
    and of the returned gradient function 2 h_d, traced with the cache on, traced with it off,
    and computed by a plain float64 recursion, <= 1e-10: a cache that skipped work by returning
    wrong values would pass the counts but not this); and the neural functional's loss
    decreases at every step *and* ends below the null arm's, the same descent with the kernels
    frozen (only the biases learn - with one input and one target the biases alone can lower
    the loss, so "it decreases" by itself does not show that the kernels' nonlocal functional
    gradients work). It fails when any of these does not hold.

    Control: the null arm for the linear-cost part, the cache switched off and measured in the
    same run, must not pass the linearity test (``uncached_nonlinearity`` > 0.05)."""
    import jax

    from . import Function, Grid, compiler_options, functional_grad, gauss_legendre, integrate

    max_depth = sizes(scale, smoke=11, small=14)
    grad_depth = sizes(scale, smoke=6, small=8)
    x0 = 0.1
    rows = []
    on, off = [], []
    value_diffs: list[float] = []
    with jax.enable_x64(True):
        for d in range(1, max_depth + 1):
            h = _nested(d)
            (n_on, j_on), (n_off, j_off) = _count(h, True, x0), _count(h, False, x0)
            on.append(n_on)
            off.append(n_off)
            rows.append({"depth": d, "cached": n_on, "uncached": n_off})
            if d == max_depth:
                ref = _nested_reference(d, x0)
                v_on, v_off = _traced_value(j_on, x0), _traced_value(j_off, x0)
                value_diffs += [abs(v_on - v_off), abs(v_on - ref)]
                h_value = v_on
            progress(0.5 * d / max_depth, f"depth {d}")
    inc, inc_off = np.diff(on), np.diff(off)
    metrics: dict[str, float] = {
        "max_depth": max_depth,
        "count_cached_at_max_depth": on[-1],
        "count_uncached_at_max_depth": off[-1],
        "count_ratio_at_max_depth": off[-1] / on[-1],
        "uncached_growth_factor": off[-1] / off[-2],  # ~2 for O(2^d)
        "cached_increment": float(np.mean(inc)),
        "cached_nonlinearity": float(np.max(np.abs(np.diff(inc))) / np.mean(inc)),
        "uncached_nonlinearity": float(np.max(np.abs(np.diff(inc_off))) / np.mean(inc_off)),
        "h_value_at_max_depth": h_value,
    }
    # evaluating a returned gradient function: the same effect one level up
    nodes, weights = gauss_legendre(16, -1.0, 1.0)
    grad_rows = []
    with jax.enable_x64(True), compiler_options(**_ONE_SHOT):
        # every graph below is new: compile time dominates
        for d in range(1, grad_depth + 1):
            h = _nested(d)
            h = Function(lambda x, h=h: h(x), [()], (), Grid((nodes,), (weights,)), name="hd")
            gfun = functional_grad(lambda u: integrate(u**2))(h)  # = 2 h_d
            (n_on, j_on), (n_off, j_off) = _count(gfun, True, x0), _count(gfun, False, x0)
            grad_rows.append({"depth": d, "cached": n_on, "uncached": n_off})
            if d == grad_depth:
                ref = 2.0 * _nested_reference(d, x0)
                v_on, v_off = _traced_value(j_on, x0), _traced_value(j_off, x0)
                value_diffs += [abs(v_on - v_off), abs(v_on - ref)]
        metrics["grad_count_cached_at_grad_depth"] = grad_rows[-1]["cached"]
        metrics["grad_count_uncached_at_grad_depth"] = grad_rows[-1]["uncached"]
    metrics["cache_value_max_diff"] = max(value_diffs)
    progress(0.6, "neural functional")
    n_grid = sizes(scale, smoke=30, small=100)
    steps = 3
    with compiler_options(**_ONE_SHOT):
        losses, times = _neural_functional(n_grid, steps)
        progress(0.8, "neural functional, kernels frozen")
        null_losses, _ = _neural_functional(n_grid, steps, update_kernels=False)
    for i, value in enumerate(losses):
        metrics[f"nf_loss_{i}"] = value
    for i, value in enumerate(null_losses):
        metrics[f"nf_frozen_kernels_loss_{i}"] = value
    metrics["nf_loss_final"] = losses[-1]
    metrics["nf_frozen_kernels_loss_final"] = null_losses[-1]
    metrics["loss_strictly_decreasing"] = float(all(b < a for a, b in itertools.pairwise(losses)))
    metrics["nf_frozen_kernels_strictly_decreasing"] = float(
        all(b < a for a, b in itertools.pairwise(null_losses)))
    metrics["nf_first_step_s"] = times[0]
    metrics["nf_last_step_s"] = times[-2]

    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 4))
    ax, ax2 = fig.subplots(1, 2)
    ds = np.arange(1, max_depth + 1)
    ax.semilogy(ds, on, "o-", label="call cache on")
    ax.semilogy(ds, off, "s-", label="call cache off")
    ax.set_xlabel("nesting depth d")
    ax.set_ylabel("user-function evaluations (one trace)")
    ax.legend()
    ax.set_title("h_d = f(h_{d-1}) + g(h_{d-1})")
    ax2.plot(np.arange(len(losses)), losses, "o-", label="functional GD (kernels + biases)")
    ax2.plot(np.arange(len(null_losses)), null_losses, "s--", label="null: kernels frozen")
    ax2.set_xlabel("functional GD step")
    ax2.set_ylabel("neural-functional loss")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    return Measurement(
        metrics=metrics, figure=fig,
        tables={"evaluation_counts": rows, "gradient_evaluation_counts": grad_rows},
        notes=(f"Counts are user-function body evaluations while tracing one call "
               f"(jax.make_jaxpr), cache on vs off; depth up to {max_depth} (14 at small; "
               f"smoke stops at 11 because the uncached trace itself is exponential). f = cos "
               "instead of the official benchmark's exp keeps h_d finite for the value check "
               "(the counts do not depend on the bodies). "
               f"Neural functional: {n_grid}-node grids, {steps} functional-GD steps, lr 0.1, "
               "float32 as the official example; the null arm freezes both kernels. Per-step "
               "wall time grows because each step composes a larger function graph (timings "
               "are noisy on a shared machine)."),
    )
