import pytest
import torch

from iclr24.kits.vector_quantization import VQAutoencoder, fit_vq_autoencoder


def _images(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    base = torch.zeros(n, 1, 8, 8)
    for i in range(n):  # bars at random rows: a learnable, non-trivial family
        base[i, 0, int(torch.randint(0, 8, (1,), generator=g))] = 1.0
    return base * 2 - 1


def test_shapes_and_decode_indices():
    torch.manual_seed(0)
    ae = VQAutoencoder(in_ch=1, ch=8, ch_mult=(1, 2), code_dim=4, n_codes=16)
    x = _images(3)
    z = ae.encode(x)
    assert z.shape == (3, 4, 4, 4)
    rec, out = ae(x)
    assert rec.shape == x.shape and out.indices.shape == (3, 4, 4)
    assert torch.allclose(ae.decode_indices(out.indices), ae.decode(out.quantized), atol=1e-6)


def test_fit_learns_and_is_deterministic(one_torch_thread):
    x = _images(64)

    def run():
        torch.manual_seed(0)
        ae = VQAutoencoder(in_ch=1, ch=8, ch_mult=(1, 2), code_dim=4, n_codes=16)
        hist = fit_vq_autoencoder(ae, x, steps=60, batch_size=32, lr=3e-3, seed=0,
                                  restart_every=20)
        return ae, hist

    ae, h1 = run()
    _, h2 = run()
    assert h1.recon == h2.recon
    assert sum(h1.recon[-10:]) / 10 < 0.5 * h1.recon[0]
    assert not ae.training
    assert h1.perplexity[-1] > 1.5  # more than one code in use


def test_bad_input():
    ae = VQAutoencoder(in_ch=1, ch=8, ch_mult=(1, 2, 2), code_dim=4, n_codes=16)
    with pytest.raises(ValueError, match="multiples of 4"):
        ae.encode(torch.zeros(1, 1, 6, 8))
    with pytest.raises(ValueError, match=r"\(B, 1, H, W\)"):
        ae.encode(torch.zeros(1, 3, 8, 8))
    with pytest.raises(ValueError, match="ch_mult"):
        VQAutoencoder(ch_mult=())
    with pytest.raises(ValueError, match="steps"):
        fit_vq_autoencoder(ae, torch.zeros(4, 1, 8, 8), steps=0)
    with pytest.raises(ValueError, match="zq"):
        ae.decode(torch.zeros(1, 3, 2, 2))
