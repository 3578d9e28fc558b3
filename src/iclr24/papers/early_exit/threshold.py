"""The confidence-threshold baseline of the JEI-DNN paper (Sec. 5: the usual EDNN practice):
IMs trained on all samples (here the warm-up IMs) and a fixed rule that leaves at the first IM
whose max softmax probability reaches ``threshold``; otherwise at the final head. Sweeping the
threshold traces the baseline's accuracy-cost curve on the same frozen backbone."""

from __future__ import annotations

import numpy as np
import torch

from .network import EarlyExitNet
from .training import _average_cost, as_features

__all__ = ["ThresholdExit"]


class ThresholdExit:
    """Max-probability threshold exits on ``net``.

    threshold: in [0, 1]; 0 exits every sample at the first IM, a value above 1 never exits
    early (pass ``float("inf")``). exit_overhead: cost of an IM plus the max-probability test,
    in the units of ``net.block_costs``. ``predict(X)`` -> (pred (n,), exit_index (n,),
    probs (n, C) of the exit taken); ``average_cost(exit_index)`` as in JEI-DNN.
    """

    def __init__(self, net: EarlyExitNet, threshold: float, *, exit_overhead: float = 0.0
                 ) -> None:
        if not isinstance(net, EarlyExitNet):
            raise TypeError(f"net must be an EarlyExitNet, got {type(net).__name__}")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)) \
                or np.isnan(threshold) or threshold < 0:
            raise ValueError(f"threshold must be a number >= 0, got {threshold!r}")
        self.net, self.threshold = net, float(threshold)
        self.costs = net.exit_costs(exit_overhead).to(torch.float32)

    def exits_from_logits(self, logits: list[torch.Tensor]) -> torch.Tensor:
        """Exit index (B,) from the L exit logits (B, C)."""
        conf = torch.stack([torch.softmax(z, 1).amax(1) for z in logits[:-1]], dim=1)
        fire = torch.cat([conf >= self.threshold, torch.ones_like(conf[:, :1], dtype=torch.bool)],
                         dim=1)
        return fire.to(torch.int64).argmax(dim=1)

    def predict(self, X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        Xt = as_features(X)
        with torch.no_grad():
            logits = self.net.forward_all(Xt)
            exits = self.exits_from_logits(logits)
            probs = torch.softmax(torch.stack(logits, 1)[torch.arange(Xt.shape[0]), exits], 1)
        return probs.argmax(1).numpy(), exits.numpy(), probs.numpy().astype(np.float64)

    def average_cost(self, exit_index) -> float:
        return _average_cost(self.costs, exit_index)
