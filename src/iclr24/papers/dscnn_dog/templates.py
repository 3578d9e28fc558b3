"""The Difference-of-Gaussians family as a template bank (the reference patterns that name
clusters and make the paper's finding measurable).

On a k x k grid with x, y in {-(k-1)/2, ..., (k-1)/2}:
    DoG = G_{sigma1} - beta G_{sigma2},  sigma2 = ratio * sigma1 > sigma1      (centre-surround)
    first derivative along u = (cos a, sin a):   d_u DoG = cos a d_x + sin a d_y
    second derivative along u:   d_uu DoG = cos^2 a d_xx + 2 cos a sin a d_xy + sin^2 a d_yy
    mixed d_xy DoG, and d_u G (a single Gaussian's derivative, the small-kernel limit).
Gaussians and their derivatives come from ``scipy.ndimage.gaussian_filter(delta, sigma,
order=...)`` on a unit impulse. Every template is L2-normalised and the bank holds both signs
(on- and off-centre are different classes). Bank sizes inflate chance matches: always report
the random-kernel baseline with the same bank and threshold.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TEMPLATE_FAMILIES", "dog_template_bank", "lowpass_references", "template_family"]

TEMPLATE_FAMILIES = ("dog", "dog_d1", "dog_d2", "dog_dxy", "gauss_d1")


def _gauss(k: int, sigma: float, order: tuple[int, int]) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    delta = np.zeros((k, k))
    delta[k // 2, k // 2] = 1.0
    truncate = max(4.0, (k // 2 + 1) / sigma)  # the filter must reach the kernel's border
    # filtering an impulse returns the kernel mirrored; mirror back so odd orders keep their sign
    return gaussian_filter(delta, sigma, order=order, mode="constant", truncate=truncate)[::-1, ::-1]


def _derivs(k: int, s1: float, s2: float, beta: float) -> dict[tuple[int, int], np.ndarray]:
    return {o: _gauss(k, s1, o) - beta * _gauss(k, s2, o)
            for o in ((0, 0), (0, 1), (1, 0), (0, 2), (2, 0), (1, 1))}  # (d_y order, d_x order)


def template_family(label: str) -> str:
    """The family of a template label (``"dog_d1+(...)"`` -> ``"dog_d1"``)."""
    return label.split("+")[0].split("-")[0]


def lowpass_references(k: int = 7, sigmas=(2.0,)) -> np.ndarray:
    """Same-sign low-pass kernels (L2-normalised, (1 + len(sigmas), k, k)): the constant
    (flat) kernel and broad Gaussian blobs G_sigma. A DoG with beta < 1 and a wide sigma1 is
    close to these; a bank that matches them counts mere smoothing as "DoG structure"."""
    refs = [np.ones((k, k))] + [_gauss(int(k), float(s), (0, 0)) for s in sigmas]
    return np.stack([r / np.linalg.norm(r) for r in refs])


def dog_template_bank(k: int = 7, sigmas1=(0.5, 0.75, 1.0, 1.5, 2.0), ratios=(1.5, 2.0, 3.0),
                      betas=(0.5, 0.75, 1.0), angles=(0.0, 45.0, 90.0, 135.0),
                      include_gaussian_derivative: bool = True,
                      max_lowpass_cosine: float | None = None
                      ) -> tuple[np.ndarray, list[str]]:
    """Templates (T, k, k), L2-normalised, both signs, and their labels
    (``"<family><sign>(sigma1=..,ratio=..,beta=..,angle=..)"``).

    ``max_lowpass_cosine``: if given, drop every template whose |cosine| with a low-pass
    reference (:func:`lowpass_references`: the flat kernel, a sigma = 2 Gaussian blob) exceeds
    it. The full 7x7 bank matches a constant kernel at cosine 0.85, so without this a
    same-sign smoothing kernel counts as "DoG-family"."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 3 or k % 2 == 0:
        raise ValueError(f"k must be an odd int >= 3, got {k!r}")
    if max_lowpass_cosine is not None and (
            isinstance(max_lowpass_cosine, bool)
            or not isinstance(max_lowpass_cosine, (int, float, np.floating))
            or not 0 < max_lowpass_cosine <= 1):
        raise ValueError(f"max_lowpass_cosine must be None or a number in (0, 1], "
                         f"got {max_lowpass_cosine!r}")
    for name, vals in (("sigmas1", sigmas1), ("ratios", ratios), ("betas", betas)):
        if len(vals) == 0 or any(not np.isfinite(v) or v <= 0 for v in vals):
            raise ValueError(f"{name} must be a non-empty sequence of positive numbers")
    if any(r <= 1 for r in ratios):
        raise ValueError("ratios must be > 1 (sigma2 > sigma1)")
    temps, labels = [], []

    def add(t: np.ndarray, family: str, desc: str) -> None:
        n = np.linalg.norm(t)
        if n < 1e-12:
            return
        for sign, ch in ((1.0, "+"), (-1.0, "-")):
            temps.append(sign * t / n)
            labels.append(f"{family}{ch}({desc})")

    rad = np.deg2rad(np.asarray(angles, dtype=np.float64))
    for s1 in sigmas1:
        for r in ratios:
            for b in betas:
                d = _derivs(int(k), s1, s1 * r, b)
                base = f"sigma1={s1:g},ratio={r:g},beta={b:g}"
                add(d[(0, 0)], "dog", base)  # G_s1 - beta G_s2
                for a, ang in zip(rad, angles):
                    c, s = np.cos(a), np.sin(a)
                    add(c * d[(0, 1)] + s * d[(1, 0)], "dog_d1", f"{base},angle={ang:g}")
                    add(c * c * d[(0, 2)] + 2 * c * s * d[(1, 1)] + s * s * d[(2, 0)], "dog_d2",
                        f"{base},angle={ang:g}")
                add(d[(1, 1)], "dog_dxy", base)
    if include_gaussian_derivative:
        for s1 in sigmas1:
            gx, gy = _gauss(int(k), s1, (0, 1)), _gauss(int(k), s1, (1, 0))
            for a, ang in zip(rad, angles):
                add(np.cos(a) * gx + np.sin(a) * gy, "gauss_d1", f"sigma={s1:g},angle={ang:g}")
    bank = np.stack(temps).astype(np.float64)
    if max_lowpass_cosine is not None:
        refs = lowpass_references(int(k)).reshape(-1, int(k) * int(k))
        lowpass = np.abs(bank.reshape(len(bank), -1) @ refs.T).max(axis=1)  # |cos(t, ref)|
        keep = lowpass <= max_lowpass_cosine
        if not keep.any():
            raise ValueError(f"max_lowpass_cosine={max_lowpass_cosine!r} removes every template")
        bank, labels = bank[keep], [lab for lab, kp in zip(labels, keep) if kp]
    return bank, labels
