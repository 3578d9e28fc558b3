"""FedImpro: training the high-level part of the network on a shared feature distribution.

Paper: Zhenheng Tang, Yonggang Zhang, Shaohuai Shi, Xinmei Tian, Tongliang Liu, Bo Han,
Xiaowen Chu, "FedImpro: Measuring and Improving Client Update in Federated Learning", ICLR 2024
(arXiv 2402.07011). Official code: github.com/wizard1203/FedImpro.

Under label skew local models drift apart. FedImpro bounds the generalisation contribution of
a local update by the conditional Wasserstein distance between clients' distributions and
shrinks it for the upper part of the network: the model is cut into a low-level extractor L and
a high-level head H, and every client trains H on its real features plus features sampled from a
server-aggregated class-conditional Gaussian estimate of the global feature distribution.

How the code maps to the paper / official code
- :mod:`.split_network`: ``SplitNet`` (f = H o L), ``split_sequential``, the digits MLP.
- :mod:`.feature_bank`: ``ClassGaussianBank`` (mu ~ U(0,1), sigma = sigma_max init, running
  per-class update, sigma <= sigma_max, class-balanced sampling), ``aggregate_class_gaussians``
  (law of total variance, per-class weights), ``privatize`` (noise on shared statistics),
  ``class_moments``; NaN/inf features, negative or NaN sigma and NaN noise are refused.
- :mod:`.local_update`: the weight schedules (official "gradual2half" default), the split loss,
  ``fedimpro_local_train``, ``FedImproClient`` and ``FedImproServer`` for the kit's simulator
  (``share_statistics=False``: the no-sharing ablation), ``ExactStatisticsServer`` /
  ``exact_class_gaussians`` (exact statistics of all clients: the positive control).
- :mod:`.diagnostics`: ``gradient_drift`` (mean_k ||g_k - g_bar||^2, judged), the normalised
  ``gradient_dissimilarity`` (reported) and per-client head gradients.
- :mod:`.simulation`: ``simulate("fedavg" | "fedprox" | "fedimpro", ...)`` on the kit, and
  ``train_centralised`` (the same MLP on the union of the clients' data, the reference that
  chose the claims' federated task).
- :mod:`.flower` (optional ``[flower]`` extra): ``FedImproStrategy`` and the client app.

Differences from the paper (scaled down): ResNet-18 on CIFAR-10 with the cut after ``layer2`` is
replaced by an MLP 64-128-128-10 on sklearn's bundled digits with the cut after the first
Linear+ReLU (D = 128); the claims' federated task (10 clients, Dirichlet alpha = 0.05, 3 clients
per round, 10 local epochs, 30 rounds) was chosen, before FedImpro ran on it, as one where FedAvg
stays >= 10 points below centralised training (0.850 vs 0.973; see :mod:`.claims`). T_w of the
weight schedule equals the number of rounds (the official FEMNIST run uses T_w = max_epochs). The running statistics use the intended
count-based weight omega = n_c / N_c (N_c = the training set's per-class count) instead of the
official code's effective omega = 1 (available as ``ema="official"``). SCAFFOLD and FedNova are
not implemented; FedAvg and FedProx are the baselines. The MLP has no BatchNorm, so the question of
BN statistics from mixed real+synthetic batches (official behaviour) does not arise here.
Not in the paper (issue 38): the claims also run FedImpro without sharing (the server never
updates its bank; ``FedImproConfig(bank_sharing="none")``) and with exact sharing
(``bank_sharing="exact"``), to judge what the *shared* statistics add to the class-balanced
synthetic labels; client drift is judged unnormalised (``gradient_drift``).

Usage::

    from iclr24.kits.federated import digits_split, dirichlet_label_partition
    from iclr24.papers.fedimpro import simulate
    data = digits_split(seed=0)
    parts = dirichlet_label_partition(data.y_train.numpy(), 10, alpha=0.1, min_partition_size=5)
    hist = simulate("fedimpro", data, parts, rounds=50, seed=0)
    hist.last_mean("accuracy", 5)
"""

from .diagnostics import gradient_dissimilarity, gradient_drift, head_gradient
from .feature_bank import (
    ClassGaussianBank,
    aggregate_class_gaussians,
    check_noise_std,
    class_moments,
    privatize,
)
from .local_update import (
    ExactStatisticsServer,
    FedImproClient,
    FedImproServer,
    LocalResult,
    exact_class_gaussians,
    fedimpro_local_train,
    fedimpro_loss,
    head_parameters,
    synthetic_weight,
)
from .simulation import FedImproConfig, simulate, train_centralised
from .split_network import SplitNet, digits_mlp, split_sequential

__all__ = [
    "ClassGaussianBank",
    "ExactStatisticsServer",
    "FedImproClient",
    "FedImproConfig",
    "FedImproServer",
    "LocalResult",
    "SplitNet",
    "aggregate_class_gaussians",
    "check_noise_std",
    "class_moments",
    "digits_mlp",
    "exact_class_gaussians",
    "fedimpro_local_train",
    "fedimpro_loss",
    "gradient_dissimilarity",
    "gradient_drift",
    "head_gradient",
    "head_parameters",
    "privatize",
    "simulate",
    "split_sequential",
    "synthetic_weight",
    "train_centralised",
]
