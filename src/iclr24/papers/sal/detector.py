"""SAL's two steps as an estimator (Du et al., ICLR 2024, Sec. 3, Algorithm 1): *separate*
candidate outliers from the wild data with the gradient filter, then *learn* a binary ID-vs-OOD
head on the labelled ID data and the candidates.

- :func:`sal_filter` - steps 1-4 for any trained classifier with numpy ``features`` / ``logits``
  (the kit's :class:`~iclr24.kits.small_classifiers.TrainedClassifier`): ID gradient rows with
  true labels give the reference means and the threshold T (ID scores with their own singular
  vectors, 95th percentile); wild rows with pseudo-labels give the wild scores; tau > T flags
  the candidates S_T (or the top-pi fraction, ``use_thres=0``).
- :func:`train_ood_classifier` - step 5 (official ``train_binary_classifier``): a fresh copy of
  the pretrained ID network plus a linear head r: R^D -> R on the penultimate features, trained
  with CE(ID logits, y) + 10 * BCE(r(phi), 1 for ID / 0 for outliers) (``loss_add=1``,
  ``ft_weight=10``), each step an ID batch of 128 with 128 outliers (reshuffled when fewer than
  a batch remain), SGD lr 1e-3, momentum 0.9, Nesterov, weight decay 5e-4, cosine decay to
  1e-6 per step, 100 epochs. The same step with all wild data or with the true outliers as the
  outlier set gives the paper's naive-wild and oracle comparisons.
- :class:`SALDetector` - scikit-learn style: ``fit(X_id, y_id, X_wild)`` then
  ``score_samples(X)`` = r(phi(x)), higher = more ID.
- :func:`msp_scores`, :func:`energy_scores` - the post-hoc baselines (max softmax probability;
  negative energy logsumexp(logits), T = 1), higher = more ID.
- :class:`SplitNetwork` / :class:`NumpyClassifier` - adapters for a user's own torch network:
  a torchvision-style model whose last layer is a linear ``fc`` (or any named linear head) is
  split into ``features`` + ``head``; inputs may be any shape (n, ...), e.g. image tensors
  (n, C, H, W). :func:`sal_filter`, :func:`train_ood_classifier` and :class:`SALDetector` apply
  them by themselves when given an ``nn.Module``.

Scaled down: the backbone is the kit's MLP (in -> 128 -> 128 = phi -> C, Adam) on vectors,
not a WRN-40-2 (dropout 0.3) pretrained 100 epochs on CIFAR; CIFAR OOD mixtures with WRN-40-2
are out of reach offline on CPU. The filter and the learning step are the official ones.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .gradient_filter import (
    class_reference_means,
    filter_candidates,
    last_layer_grad_rows,
    sal_scores,
    sal_threshold,
)

__all__ = [
    "FilterResult",
    "NumpyClassifier",
    "OODClassifier",
    "SALDetector",
    "SplitNetwork",
    "energy_scores",
    "msp_scores",
    "sal_filter",
    "train_ood_classifier",
]


def _logits_array(logits) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 2 or z.shape[0] == 0:
        raise ValueError(f"logits must be a non-empty 2-D array (n, C), got shape {z.shape}")
    return z


def msp_scores(logits) -> np.ndarray:
    """Maximum softmax probability (n,) of logits (n, C); higher = more ID."""
    from scipy.special import softmax

    return softmax(_logits_array(logits), axis=1).max(axis=1)


def energy_scores(logits) -> np.ndarray:
    """Negative free energy logsumexp(logits) (n,) of logits (n, C), temperature 1; higher =
    more ID."""
    from scipy.special import logsumexp

    return logsumexp(_logits_array(logits), axis=1)


def _inputs(X, name: str, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """X as float32 (n, ...): vectors (n, d) or any per-sample shape, e.g. images (n, C, H, W);
    ``shape`` is the per-sample shape it must match."""
    a = np.asarray(X.detach().cpu().numpy() if hasattr(X, "detach") else X, dtype=np.float32)
    if a.ndim < 2:
        raise ValueError(f"{name} must be an array of samples (n, d) or (n, ...), got shape "
                         f"{a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} must not be empty")
    if shape is not None and a.shape[1:] != tuple(shape):
        raise ValueError(f"{name} must have per-sample shape {tuple(shape)} like X_id, got "
                         f"{a.shape[1:]}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


class SplitNetwork(nn.Module):
    """A classifier ``model`` whose last layer is the linear ``model.<head>`` (torchvision's
    ``fc``, or any name), seen as ``features(x)`` (everything before that layer) and ``head``.
    The body is a copy of ``model`` with the head replaced by the identity, so ``model``'s own
    forward must apply the head last to the penultimate features (true of torchvision's
    ResNets and of most classifiers). Features are flattened to (n, D)."""

    def __init__(self, model, head: str = "fc") -> None:
        super().__init__()
        if not isinstance(model, nn.Module):
            raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        layer = getattr(model, head, None) if isinstance(head, str) else None
        if not isinstance(layer, nn.Linear):
            raise TypeError(f"model.{head} must be the final nn.Linear layer, got "
                            f"{type(layer).__name__}")
        self.body = copy.deepcopy(model)
        setattr(self.body, head, nn.Identity())
        self.head = copy.deepcopy(layer)

    def features(self, x):
        """Penultimate features (n, D)."""
        return self.body(x).flatten(1)

    def forward(self, x):
        return self.head(self.features(x))


def _as_split(model):
    """``model`` itself when it has ``features`` and a linear ``head``; otherwise split at a
    linear ``fc`` (:class:`SplitNetwork`); TypeError when neither applies."""
    net = getattr(model, "model", model)  # the kit's TrainedClassifier holds its module
    if not isinstance(net, nn.Module):
        raise TypeError(f"the network must be a torch.nn.Module (or the kit's TrainedClassifier),"
                        f" got {type(model).__name__}")
    if callable(getattr(net, "features", None)) and isinstance(getattr(net, "head", None),
                                                               nn.Linear):
        return net
    if isinstance(getattr(net, "fc", None), nn.Linear):
        return SplitNetwork(net, "fc")
    raise TypeError("the network needs features() and a linear head, or a final linear fc "
                    f"layer (wrap it in SplitNetwork(model, head=...)), got "
                    f"{type(net).__name__}")


class NumpyClassifier:
    """A torch classifier with ``features`` and a linear ``head`` (or a final ``fc``) seen
    numpy in, numpy out, as :func:`sal_filter` reads it: ``features(X) -> (n, D)``,
    ``logits(X) -> (n, C)`` for X of any per-sample shape; evaluated without gradients in
    batches of ``batch_size`` on the network's own device."""

    def __init__(self, model, batch_size: int = 512) -> None:
        self.model = _as_split(model).eval()
        self.batch_size = int(batch_size)

    def _run(self, fn, X) -> np.ndarray:
        X = _inputs(X, "X")
        device = next(self.model.parameters()).device
        with torch.no_grad():
            out = [fn(torch.as_tensor(X[i:i + self.batch_size], device=device)).cpu()
                   for i in range(0, len(X), self.batch_size)]
        return torch.cat(out).numpy().astype(np.float64)

    def features(self, X) -> np.ndarray:
        return self._run(self.model.features, X)

    def logits(self, X) -> np.ndarray:
        return self._run(lambda t: self.model.head(self.model.features(t)), X)


@dataclass(frozen=True)
class FilterResult:
    """Output of :func:`sal_filter`: wild ``scores`` (m,), their ``pred_labels`` (m,), the
    ``threshold`` T, the ``candidate_mask`` (m,) of S_T, the labelled ID ``id_scores`` (n,)
    behind T and the ``class_means`` (C, D)."""

    scores: np.ndarray
    pred_labels: np.ndarray
    threshold: float
    candidate_mask: np.ndarray
    id_scores: np.ndarray
    class_means: np.ndarray


def sal_filter(classifier, X_id, y_id, X_wild, *, quantile: float = 0.95,
               pi: float | None = None, min_class_size: int = 3) -> FilterResult:
    """SAL's separation step with a trained ``classifier`` (numpy ``features(X) -> (n, D)`` and
    ``logits(X) -> (n, C)``, or a torch network, wrapped in :class:`NumpyClassifier`). X_id
    (n, ...), y_id (n,): labelled ID data (true labels); X_wild (m, ...): the wild set
    (pseudo-labels); samples may be vectors or images. Candidates are tau > T, T the
    ``quantile`` of the ID scores; with ``pi`` the top-pi fraction instead (T is still
    reported)."""
    if isinstance(classifier, nn.Module):
        classifier = NumpyClassifier(classifier)
    X_id = _inputs(X_id, "X_id")
    X_wild = _inputs(X_wild, "X_wild", X_id.shape[1:])
    phi_id, z_id = classifier.features(X_id), classifier.logits(X_id)
    c = z_id.shape[1]
    g_id = last_layer_grad_rows(phi_id, z_id, y_id)  # ID rows at the true labels
    means = class_reference_means(g_id, y_id, c)
    id_scores = sal_scores(g_id, y_id, means, min_class_size=min_class_size)
    threshold = sal_threshold(g_id, y_id, means, quantile, min_class_size=min_class_size)
    z_w = classifier.logits(X_wild)
    pred = z_w.argmax(axis=1)  # pseudo-labels y_hat = argmax h(x)
    g_w = last_layer_grad_rows(classifier.features(X_wild), z_w, pred)
    scores = sal_scores(g_w, pred, means, min_class_size=min_class_size)
    mask = filter_candidates(scores, pi=pi) if pi is not None else \
        filter_candidates(scores, threshold=threshold)
    return FilterResult(scores, pred, threshold, mask, id_scores, means)


class OODClassifier:
    """A fine-tuned network with a binary head (step 5). ``score_samples(X) -> (n,)`` is the
    head's logit r(phi(x)) (higher = ID); ``predict(X) -> (n,)`` the ID class of the
    multi-task network."""

    def __init__(self, model, head) -> None:
        self.model = model.eval()
        self.head = head.eval()

    def _run(self, fn, X) -> np.ndarray:
        X = _inputs(X, "X")
        device = next(self.head.parameters()).device
        with torch.no_grad():
            return fn(torch.as_tensor(X, device=device)).cpu().numpy().astype(np.float64)

    def score_samples(self, X) -> np.ndarray:
        return self._run(lambda t: self.head(self.model.features(t)).view(-1), X)

    def predict(self, X) -> np.ndarray:
        return self._run(self.model, X).argmax(axis=1)


def _cosine_annealing(step: int, total: int, lr_max: float, lr_min: float) -> float:
    # official cosine_annealing: lr_min + (lr_max - lr_min) (1 + cos(pi step / total)) / 2
    return lr_min + (lr_max - lr_min) * 0.5 * (1 + math.cos(step / total * math.pi))


def train_ood_classifier(backbone, X_id, y_id, X_outliers, *, bce_weight: float = 10.0,
                         epochs: int = 100, lr: float = 1e-3, batch_size: int = 128,
                         weight_decay: float = 5e-4, momentum: float = 0.9,
                         seed: int = 0) -> OODClassifier:
    """Step 5: fine-tune a copy of ``backbone`` (an ``nn.Module`` with ``features`` and a
    linear ``head``, one whose last layer is a linear ``fc`` - split by :class:`SplitNetwork` -
    or the kit's ``TrainedClassifier``) with a new linear head r on
    loss = CE(h(x_id), y_id) + bce_weight * BCE(r(phi(x)), 1[x is ID]) over X_id (n, ...), y_id
    (n,) and X_outliers (k, ...), on the backbone's device. Official optimiser and schedule (see the module docstring);
    ``seed`` fixes the head's initialisation and the batch order."""
    import torch.nn.functional as F

    from iclr24.kits.small_classifiers import torch_generator

    net = _as_split(backbone)
    X_id = _inputs(X_id, "X_id")
    X_out = _inputs(X_outliers, "X_outliers", X_id.shape[1:])
    y = np.asarray(y_id)
    if y.shape != (len(X_id),) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y_id must be integers of shape ({len(X_id)},), got {y.dtype} "
                         f"{y.shape}")
    for name, v in (("epochs", epochs), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not bce_weight >= 0:
        raise ValueError(f"bce_weight must be >= 0, got {bce_weight!r}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr!r}")
    gen = torch_generator(seed)
    model = copy.deepcopy(net).train()
    head = nn.Linear(net.head.in_features, 1)
    bound = 1.0 / net.head.in_features ** 0.5
    with torch.no_grad():
        head.weight.uniform_(-bound, bound, generator=gen)
        head.bias.uniform_(-bound, bound, generator=gen)
    device = next(net.parameters()).device
    head = head.to(device)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum, nesterov=True,
                          weight_decay=weight_decay)
    steps_per_epoch = math.ceil(len(X_id) / batch_size)
    total = epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: _cosine_annealing(s, total, 1.0, 1e-6 / lr))
    Xi, Xo = torch.as_tensor(X_id, device=device), torch.as_tensor(X_out, device=device)
    yi = torch.as_tensor(y, dtype=torch.long, device=device)
    k = len(Xo)
    perm, begin = torch.randperm(k, generator=gen), 0
    for _ in range(epochs):
        order = torch.randperm(len(Xi), generator=gen)
        for start in range(0, len(Xi), batch_size):
            rows = order[start:start + batch_size]
            if k - begin < batch_size:  # fewer than a batch left: reshuffle (official)
                perm, begin = torch.randperm(k, generator=gen), 0
            out_rows = perm[begin:begin + batch_size]
            begin += batch_size
            x = torch.cat([Xi[rows], Xo[out_rows]])
            phi = model.features(x)
            n_in = len(rows)
            ce = F.cross_entropy(model.head(phi[:n_in]), yi[rows])
            target = torch.cat([torch.ones(n_in, device=device),
                                torch.zeros(len(out_rows), device=device)])
            bce = F.binary_cross_entropy_with_logits(head(phi).view(-1), target)
            loss = ce + bce_weight * bce  # loss_add = 1: CE + ft_weight * BCE
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
    return OODClassifier(model, head)


class SALDetector:
    """Separate And Learn (Algorithm 1) as a scikit-learn style OOD detector.

    ``fit(X_id (n, d), y_id (n,), X_wild (m, d), backbone=None)`` trains the ID classifier
    (the kit's MLP in -> hidden -> C with Adam, unless a trained ``backbone`` is given), filters
    the wild set (:func:`sal_filter`) and fine-tunes the binary head on the candidates
    (:func:`train_ood_classifier`). ``score_samples(X) -> (n,)``: higher = more ID;
    ``predict(X)``: ID class.

    Fitted attributes: ``backbone_`` (the ID classifier), ``filter_`` (:class:`FilterResult`),
    ``candidate_mask_`` (m,), ``threshold_``, ``ood_classifier_``.
    Hyper-parameters: ``quantile`` (ID percentile of the threshold, 0.95), ``pi`` (use the
    top-pi wild fraction instead of the threshold), ``bce_weight`` (10), ``epochs`` / ``lr`` /
    ``batch_size`` / ``weight_decay`` of the learning step (official 100 / 1e-3 / 128 / 5e-4),
    ``classifier_*`` for the ID classifier, ``seed``.
    """

    def __init__(self, num_classes: int | None = None, *, hidden: tuple[int, ...] = (128, 128),
                 classifier_epochs: int = 50, classifier_lr: float = 1e-3,
                 classifier_batch_size: int = 64, classifier_weight_decay: float = 0.0,
                 quantile: float = 0.95, pi: float | None = None, min_class_size: int = 3,
                 bce_weight: float = 10.0, epochs: int = 100, lr: float = 1e-3,
                 batch_size: int = 128, weight_decay: float = 5e-4, seed: int = 0) -> None:
        if not isinstance(quantile, (int, float)) or isinstance(quantile, bool) \
                or not 0 < quantile < 1:
            raise ValueError(f"quantile must be a number in (0, 1), got {quantile!r}")
        if pi is not None and (isinstance(pi, bool) or not isinstance(pi, (int, float))
                               or not 0 < pi < 1):
            raise ValueError(f"pi must be None or a number in (0, 1), got {pi!r}")
        self.num_classes = num_classes
        self.hidden = tuple(hidden)
        self.classifier_epochs = classifier_epochs
        self.classifier_lr = classifier_lr
        self.classifier_batch_size = classifier_batch_size
        self.classifier_weight_decay = classifier_weight_decay
        self.quantile = quantile
        self.pi = pi
        self.min_class_size = min_class_size
        self.bce_weight = bce_weight
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.weight_decay = weight_decay
        self.seed = seed

    def _train_backbone(self, X_id: np.ndarray, y_id: np.ndarray):
        from iclr24.kits.small_classifiers import MLPTrainer

        trainer = MLPTrainer(hidden=self.hidden, epochs=self.classifier_epochs,
                             lr=self.classifier_lr, batch_size=self.classifier_batch_size,
                             weight_decay=self.classifier_weight_decay,
                             num_classes=self.num_classes)
        return trainer(X_id, y_id, rng=self.seed)

    def fit(self, X_id, y_id, X_wild, backbone=None) -> SALDetector:
        X_id = _inputs(X_id, "X_id")
        X_wild = _inputs(X_wild, "X_wild (the wild set)", X_id.shape[1:])
        y_id = np.asarray(y_id)
        self.backbone_ = backbone if backbone is not None else self._train_backbone(X_id, y_id)
        self.filter_ = sal_filter(self.backbone_, X_id, y_id, X_wild, quantile=self.quantile,
                                  pi=self.pi, min_class_size=self.min_class_size)
        self.candidate_mask_ = self.filter_.candidate_mask
        self.threshold_ = self.filter_.threshold
        if not self.candidate_mask_.any():
            raise ValueError("no wild point scored above the threshold: the filter found no "
                             "candidate outliers to learn from (try a lower quantile or pi=)")
        self.ood_classifier_ = train_ood_classifier(
            self.backbone_, X_id, y_id, X_wild[self.candidate_mask_], bce_weight=self.bce_weight,
            epochs=self.epochs, lr=self.lr, batch_size=self.batch_size,
            weight_decay=self.weight_decay, seed=self.seed)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "ood_classifier_"):
            raise RuntimeError("SALDetector is not fitted; call fit(X_id, y_id, X_wild) first")

    def score_samples(self, X) -> np.ndarray:
        """r(phi(x)) (n,) for X (n, d): higher = more in-distribution."""
        self._check_fitted()
        return self.ood_classifier_.score_samples(X)

    def predict(self, X) -> np.ndarray:
        """ID class (n,) of the fine-tuned multi-task network."""
        self._check_fitted()
        return self.ood_classifier_.predict(X)
