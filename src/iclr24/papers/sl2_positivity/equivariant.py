"""The SO(2)-equivariant network for max-det Gram matrices (Lawrence & Harris, ICLR 2024, Sec. 4;
official ``models/so2models.py``, ``SO2Net`` in ``max_det`` mode).

Pipeline, as in the official net:

1. the form p (degree 2d) restricted to the unit circle is a real trigonometric polynomial with
   even frequencies 0, 2, ..., 2d; its circular harmonics c_f = (1/N) sum_j p(cos t_j, sin t_j)
   e^{-i f t_j} (exact for N > 4d) transform as c_f -> e^{i f phi} c_f when p -> p o R_phi;
2. each layer forms the channel-wise tensor products c_f c_g (frequency f + g, kept up to 2d, the
   official ``max_irrep_degree`` cap) and c_f conj(c_g) (frequency f - g), adds the features
   themselves, and mixes channels with one complex linear map per frequency (real, with bias, at
   frequency 0, whose features are invariants);
3. nonlinearities act on invariants only: leaky ReLU at frequency 0 and a norm gate
   u -> u sigmoid(|u|^2 + b) at f > 0 (the official net runs an MLP with sigmoids on the
   invariants; the norm gate is our choice, allowed because SO(2) is compact);
4. the last layer's frequency-f outputs are the coordinates of the Gram matrix in a basis of the
   frequency-f isotypic part of symmetric matrices under G -> M_d(R)^T G M_d(R) (computed
   exactly by averaging over N rotations), so G_raw is equivariant; the anti-diagonal
   constraints are then enforced by the orthogonal projection for an SO(2)-invariant inner
   product (minimal-norm correction), which keeps equivariance (the official net instead builds
   the Gram matrix from the SL(2) irreps, with the degree-2d irrep set to p itself).

Differences from the official net: the input is normalised by its L2 norm on the circle (a
rotation invariant; the MLP's coefficient norm is not) and the net is 1-homogeneous,
forward(lambda p) = lambda forward(p) for lambda > 0, as G*(lambda p) = lambda G*(p); complex
float64 throughout; defaults (2 layers, 16 channels) are scaled down. The SL(2)-equivariant
(Clebsch-Gordan) net is not implemented.
"""

from __future__ import annotations

import functools

import numpy as np

from .forms import induced_matrix

__all__ = ["SO2GramNet", "rotation"]


def rotation(phi: float) -> np.ndarray:
    """R_phi = [[cos, -sin], [sin, cos]] (2, 2), an element of SO(2) in SL(2)."""
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def _n_angles(d: int) -> int:
    return 4 * d + 4                                           # > 4d: no aliasing below


@functools.lru_cache(maxsize=8)
def _circle_harmonics(d: int) -> np.ndarray:
    """F (d+1, 2d+1) complex: (F p)_m = c_{2m}, m = 0..d."""
    t = 2 * np.pi * np.arange(_n_angles(d)) / _n_angles(d)
    k = np.arange(2 * d + 1)
    mon = np.cos(t)[:, None] ** k * np.sin(t)[:, None] ** (2 * d - k)   # p(cos t, sin t) = mon p
    f = 2 * np.arange(d + 1)
    return np.exp(-1j * f[:, None] * t[None, :]) @ mon / len(t)


@functools.lru_cache(maxsize=8)
def _gram_geometry(d: int):
    """Per frequency 2m an orthonormal basis B_m (n1^2, n_m) of the e^{i 2m phi} eigenspace of
    rho(phi) vec(G) = vec(M_d(R_phi)^T G M_d(R_phi)) on symmetric G, and the equivariant
    constraint projection: vec(G) -> vec(G) + K (p - S vec(G)) (K = Q^-1 S^T (S Q^-1 S^T)^-1,
    Q the rotation average of rho^T rho, S the anti-diagonal sum map)."""
    n1 = d + 1
    phis = 2 * np.pi * np.arange(_n_angles(d)) / _n_angles(d)
    rhos = []
    for phi in phis:
        M = induced_matrix(rotation(phi), d)
        rhos.append(np.kron(M.T, M.T))                        # row-major vec(M^T G M)
    swap = np.eye(n1 * n1).reshape(n1, n1, n1, n1).transpose(1, 0, 2, 3).reshape(n1 * n1, -1)
    sym = (np.eye(n1 * n1) + swap) / 2
    bases = []
    for m in range(d + 1):
        # Pi_f = (1/N) sum_j e^{-i f phi_j} rho(phi_j): projector on frequency f (exact, N > 4d)
        Pi = sum(np.exp(-2j * m * phi) * r for phi, r in zip(phis, rhos)) / len(phis) @ sym
        U, s, _ = np.linalg.svd(Pi.real if m == 0 else Pi)
        bases.append(U[:, s > 1e-8])
    Q = sum(r.T @ r for r in rhos) / len(rhos)                  # SO(2)-invariant inner product
    i, j = np.indices((n1, n1))
    S = (i.ravel()[None, :] + j.ravel()[None, :] == np.arange(2 * d + 1)[:, None]).astype(float)
    QiSt = np.linalg.solve(Q, S.T)
    K = QiSt @ np.linalg.inv(S @ QiSt)
    return bases, S, K


def _slot_terms(L: int):
    """Tensor-product index pairs and, per frequency slot h (frequency 2h), the positions of its
    terms in the stacked features [x_0..x_{L-1}, c_a c_b (a <= b, a + b < L), c_b conj(c_a)
    (a <= b)]: the product c_a c_b has slot a + b, c_b conj(c_a) has slot b - a."""
    sa, sb, da, db = [], [], [], []
    for a in range(L):
        for b in range(a, L):
            if a + b < L:
                sa.append(a), sb.append(b)
            da.append(a), db.append(b)
    slot = list(range(L)) + [a + b for a, b in zip(sa, sb)] + [b - a for a, b in zip(da, db)]
    per_slot = [[t for t, h_t in enumerate(slot) if h_t == h] for h in range(L)]
    return (sa, sb, da, db), per_slot


def SO2GramNet(d: int, n_layers: int = 2, channels: int = 16):
    """An ``nn.Module`` mapping forms (n, 2d+1) to Gram matrices (n, d+1, d+1) that satisfy the
    anti-diagonal constraints exactly and commute with rotations:
    net(act_on_form(R, p)) = act_on_gram(R, net(p)) for R in SO(2). float64 parameters."""
    import torch

    nn = torch.nn
    for name, v, lo in (("d", d, 1), ("n_layers", n_layers, 1), ("channels", channels, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    L = d + 1
    (sa, sb, da, db), per_slot = _slot_terms(L)
    bases, S, K = _gram_geometry(d)

    class _SO2Layer(nn.Module):
        def __init__(self, c_in: int, c_out: list[int], last: bool):
            super().__init__()
            self.last = last
            # complex weights W_h = w_re[h] + i w_im[h] (f > 0), uniform(-1/sqrt(fan), ...)
            self.w_re, self.w_im, self.gate = (nn.ParameterList(), nn.ParameterDict(),
                                               nn.ParameterDict())
            for h in range(L):
                fan = c_in * len(per_slot[h])
                k = 1 / np.sqrt(fan)
                self.w_re.append(nn.Parameter((torch.rand(fan, c_out[h]) * 2 - 1) * k))
                if h > 0:
                    self.w_im[str(h)] = nn.Parameter((torch.rand(fan, c_out[h]) * 2 - 1) * k)
                    self.gate[str(h)] = nn.Parameter(torch.zeros(c_out[h]))
            self.bias0 = nn.Parameter(torch.zeros(c_out[0]))

        def forward(self, x):                                 # x (n, C, L) complex
            n = x.shape[0]
            feats = torch.cat([x, x[:, :, sa] * x[:, :, sb],                  # freq 2a + 2b
                               x[:, :, db] * torch.conj(x[:, :, da])], dim=2)  # freq 2b - 2a
            out = []
            for h in range(L):
                z = feats[:, :, per_slot[h]].reshape(n, -1)
                if h == 0:                                     # invariants: real
                    u = z.real @ self.w_re[0] + self.bias0
                    if not self.last:
                        u = torch.nn.functional.leaky_relu(u)
                    out.append(torch.complex(u, torch.zeros_like(u)))
                else:
                    u = z @ torch.complex(self.w_re[h], self.w_im[str(h)])
                    if not self.last:                          # norm gate u sigmoid(|u|^2 + b)
                        u = u * torch.sigmoid(u.real ** 2 + u.imag ** 2 + self.gate[str(h)])
                    out.append(u)
            if self.last:
                return out
            return torch.stack(out, dim=2)

    class _SO2GramNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("F", torch.from_numpy(_circle_harmonics(d)))
            self.register_buffer("K", torch.from_numpy(K))
            self.register_buffer("S", torch.from_numpy(S))
            for m, B in enumerate(bases):
                self.register_buffer(f"B{m}", torch.from_numpy(B.astype(np.complex128)))
            sizes = [1] + [channels] * (n_layers - 1)
            self.layers = nn.ModuleList(
                [_SO2Layer(c, [channels] * L, False) for c in sizes[:-1]]
                + [_SO2Layer(sizes[-1], [B.shape[1] for B in bases], True)])

        def forward(self, p):                                 # p (n, 2d+1) real
            if p.ndim != 2 or p.shape[1] != 2 * d + 1:
                raise ValueError(f"p must have shape (n, {2 * d + 1}), got {tuple(p.shape)}")
            c = p.to(self.F.dtype) @ self.F.T                  # (n, L) circular harmonics
            # rotation-invariant scale: ||p||_{L2(circle)}^2 = |c_0|^2 + 2 sum_{f>0} |c_f|^2
            s = torch.sqrt(c[:, 0].abs() ** 2 + 2 * (c[:, 1:].abs() ** 2).sum(1)).real
            s_div = torch.where(s > 0, s, torch.ones_like(s))  # zero form: no 0/0, output 0
            x = (c / s_div[:, None]).unsqueeze(1)              # (n, 1, L)
            for layer in self.layers[:-1]:
                x = layer(x)
            z = self.layers[-1](x)
            g = sum((zh @ getattr(self, f"B{m}").T).real for m, zh in enumerate(z))
            q = p / s_div[:, None]
            g = g + (q - g @ self.S.T) @ self.K.T              # equivariant exact constraints
            return (g * s[:, None]).reshape(-1, d + 1, d + 1)

    return _SO2GramNet()
