"""Unveiling the Unseen: Identifiable Clusters in Trained Depthwise Convolutional Kernels
(Z. Babaiee, P. M. Kiasari, D. Rus, R. Grosu; ICLR 2024; arXiv 2401.14469; no official code
found).

What the paper does. It collects the depthwise kernels of many ImageNet-trained depthwise-
separable CNNs (MobileNet, EfficientNet, ConvNeXt v1/v2, ConvMixer, ...), clusters them without
supervision (an autoencoder with a cosine loss, then grouping of the latent codes) and finds
that almost all fall into a handful of patterns resembling a Difference of Gaussians (DoG) and
its first and second derivatives, in every layer: > 95 % (ConvNeXtV2) and > 90 % (ConvNeXt) of
the filters are identifiable. It is an analysis pipeline, not a new model.

How the code maps to it.
- :mod:`.kernels`: :func:`depthwise_kernels` (any torch model: convs with groups == in_channels
  > 1, stem excluded), :func:`standard_conv_kernels` (the regular-conv control).
- :mod:`.templates`: :func:`dog_template_bank` (DoG, its first/second/mixed derivatives, a
  Gaussian's derivative; both signs; L2-normalised).
- :mod:`.matching`: :func:`match_templates` (best cosine, tau, dead kernels excluded and
  counted), the chance controls :func:`permute_pixels` and :func:`random_kernels`.
- :mod:`.autoencoder`: :class:`KernelAutoencoder` (cosine loss), :func:`cluster_kernels`
  (k-means on the latent codes), :func:`name_clusters` (a cluster is named by a template-match
  rule on its mean kernel, never by eye).
- :mod:`.coverage`: :func:`coverage_report` (per layer/stage/control and tau).
- :mod:`.convnext`: :class:`MicroConvNeXt` (ConvNeXt v1 block order), :class:`MicroCNN` (dense
  7x7 control), :func:`train_classifier`.
- ``claims.py``: ``dog_coverage``, ``cluster_structure``, ``layerwise``.

What is out of reach and scaled down. The paper analyses ImageNet-pretrained models; their
weights come from model hubs (timm/torchvision download them), which is not allowed here, and
timm/torchvision cannot be installed alongside our CPU torch. So the claims train a micro
ConvNeXt (~0.4 M parameters, 448 depthwise 7x7 kernels) for 400 CPU steps (small) on dead-
leaves images (classifying which of 8 radius exponents made the image; rotation prediction is
not learnable on rotation-invariant dead leaves) and ask whether the same structure appears
compared
with controls in the same run. The coverage measured here is expected far below the paper's
90-95 % and is not thresholded; the rules compare against the controls. The template bank is
our operationalisation of the paper's named classes; the autoencoder's sizes and the
clustering rule were not retrieved and are parameters.

Usage (on your own model, e.g. a ConvNeXt with weights you have locally)::

    from iclr24.papers.dscnn_dog import depthwise_kernels, dog_template_bank, coverage_report
    bank, labels = dog_template_bank(7)
    rows = coverage_report(depthwise_kernels(model), bank, labels, taus=(0.6, 0.7, 0.8))
"""

from .autoencoder import (
    ClusterResult,
    KernelAutoencoder,
    cluster_kernels,
    cosine_loss,
    name_clusters,
)
from .convnext import ConvNeXtBlock, MicroCNN, MicroConvNeXt, TrainConfig, train_classifier
from .coverage import coverage_at, coverage_report
from .kernels import depthwise_kernels, is_depthwise, stack_kernels, standard_conv_kernels
from .matching import (
    TemplateMatch,
    as_kernel_array,
    match_templates,
    permute_pixels,
    random_kernels,
)
from .templates import TEMPLATE_FAMILIES, dog_template_bank, lowpass_references, template_family

__all__ = [
    "TEMPLATE_FAMILIES",
    "ClusterResult",
    "ConvNeXtBlock",
    "KernelAutoencoder",
    "MicroCNN",
    "MicroConvNeXt",
    "TemplateMatch",
    "TrainConfig",
    "as_kernel_array",
    "cluster_kernels",
    "cosine_loss",
    "coverage_at",
    "coverage_report",
    "depthwise_kernels",
    "dog_template_bank",
    "is_depthwise",
    "lowpass_references",
    "match_templates",
    "name_clusters",
    "permute_pixels",
    "random_kernels",
    "stack_kernels",
    "standard_conv_kernels",
    "template_family",
    "train_classifier",
]
