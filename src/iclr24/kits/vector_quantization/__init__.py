"""Vector quantisation for the codebook-prior papers (daefr, oracle_robustness).

- ``codebook.py``: ``VectorQuantizer`` (nearest code, straight-through gradient, codebook +
  beta * commitment loss, usage counts, k-means init, dead-code restart), ``VQOutput``,
  ``code_perplexity``.
- ``autoencoder.py``: ``VQAutoencoder`` (a small taming-style VQGAN without GAN/LPIPS:
  ``encode``, ``quantize``, ``decode``, ``decode_indices``) and ``fit_vq_autoencoder``.

Usage::

    from iclr24.kits.vector_quantization import VQAutoencoder, fit_vq_autoencoder
    ae = VQAutoencoder(in_ch=1, ch=16, ch_mult=(1, 2, 2), code_dim=32, n_codes=64)
    hist = fit_vq_autoencoder(ae, images, steps=300, seed=0)   # images: (N, 1, 16, 16)
    rec, out = ae(images)            # out.indices: (N, 4, 4), out.perplexity
"""

from .autoencoder import VQAutoencoder, VQFit, fit_vq_autoencoder
from .codebook import VectorQuantizer, VQOutput, code_perplexity

__all__ = ["VQAutoencoder", "VQFit", "VQOutput", "VectorQuantizer", "code_perplexity",
           "fit_vq_autoencoder"]
