"""Weakly-supervised Audio Separation via Bi-modal Semantic Similarity (T. Mahmud, S. Amizadeh,
K. Koishida, D. Marculescu; ICLR 2024; OpenReview 4N97bz1sP6; official code
microsoft/BiModalAudioSeparation).

What the paper does. Text-queried separators trained by mix-and-separate on natural mixtures
never learn to extract a *single* source. The paper adds weak supervision from captions: on a
mixture of mixtures MoM = M_1 + M_2 it predicts each caption phrase's source S_hat_{n,k}, asks
that the phrase predictions of caption n add back up to M_n (consistency reconstruction), and
that each prediction sounds like its phrase under a frozen pretrained audio-text model, CLAP
(bi-modal InfoNCE). No single-source audio is used. Total loss
L = 0.5 L_cnt + 5 (L_cns + L_unsup).

How the code maps to it.
- :mod:`.unet`: :class:`TextConditionedUNet` (mask U-Net on log1p|STFT|) and the
  Sound-of-Pixels :class:`Synthesizer` (text-weighted inner product -> sigmoid mask);
- :mod:`.audio_text`: the :class:`AudioTextModel` protocol (CLAP's interface) and
  :class:`TinyCLAP` with :func:`pretrain_tiny_clap`;
- :mod:`.losses`: :func:`weighted_l1`, :func:`loss_weight`, :func:`consistency_reconstruction_loss`,
  :func:`bimodal_contrastive_loss`;
- :mod:`.separator`: :class:`BiModalSeparator` (``separate``, ``training_losses``),
  :class:`MixtureBatch`, :func:`parse_caption`;
- :mod:`.spectrogram`: torch.stft / istft with the mixture's phase;
- :mod:`.synthetic_sounds`: eight procedural sound classes with captions, the corpora;
- :mod:`.training`, :mod:`.evaluation`, :mod:`.experiment`: the three arms (mix-and-separate U,
  weak W, supervised S), bss_eval SDR (fast_bss_eval, no permutation search: each estimate is
  scored against the source its query names) on single-source test compositions, and the
  frozen CLAP's zero-shot accuracy on held-out clips (a positive control);
- ``claims.py``: ``weak_vs_mix_and_separate`` and ``near_supervised_sdr``.

What is out of reach and what differs. LAION CLAP's weights (a download) and its pretraining
data, and the AudioCaps, VGGSound and MUSIC datasets are out of reach on this offline CPU
machine: a tiny CLAP pretrained on a separate procedural single-source corpus stands in for CLAP,
and eight procedural sound classes (0.5 s at 8 kHz, captions = class words joined by "and")
stand in for the datasets. The U-Net is tiny (patch-folded input, 2 levels, FiLM conditioning
instead of cross-attention), trained for ~10^3 Adam steps at lr 1e-3 on batches of 4; the
audio-text model runs at the separator's rate (no 48 kHz resampling). The tiny CLAP's
bag-of-words text tower makes a one-word query a linear combination of caption embeddings, which
softens the paper's train/test shift for the mix-and-separate baseline (``audio_text.py``).
Each module says more.

Usage::

    from iclr24.papers.bimodal_separation import (BiModalSeparator, TextConditionedUNet,
                                                  Synthesizer, TinyCLAP)
    sep = BiModalSeparator(TextConditionedUNet(129, cond_dim=64), Synthesizer(8, 64), clap)
    losses = sep.training_losses(batch)          # {"unsup", "consistency", "contrastive", "total"}
    est = sep.separate(mixture, "whistle", 8000)  # (samples,)
"""

from .audio_text import (
                     AudioTextModel,
                     TinyCLAP,
                     phrase_words,
                     pretrain_tiny_clap,
                     zero_shot_accuracy,
)
from .evaluation import check_test_sources, evaluate_separation, score_separation
from .experiment import (
                     ARMS,
                     ExperimentConfig,
                     arm_scores,
                     build_separator,
                     clap_accuracy,
                     tiny_clap,
)
from .losses import (
                     bimodal_contrastive_loss,
                     consistency_reconstruction_loss,
                     loss_weight,
                     weighted_l1,
)
from .separator import TERMS, BiModalSeparator, MixtureBatch, parse_caption
from .spectrogram import istft_with_phase, stft
from .synthetic_sounds import (
                     CLIP_SAMPLES,
                     SAMPLE_RATE,
                     SOUND_CLASSES,
                     MixtureCorpus,
                     SourceClips,
                     TestCompositions,
                     heldout_compositions,
                     natural_mixtures,
                     single_source_clips,
                     synthesize_source,
)
from .training import supervised_batches, train_separator, weak_batches
from .unet import Synthesizer, TextConditionedUNet

__all__ = [
                     "ARMS",
                     "CLIP_SAMPLES",
                     "SAMPLE_RATE",
                     "SOUND_CLASSES",
                     "TERMS",
                     "AudioTextModel",
                     "BiModalSeparator",
                     "ExperimentConfig",
                     "MixtureBatch",
                     "MixtureCorpus",
                     "SourceClips",
                     "Synthesizer",
                     "TestCompositions",
                     "TextConditionedUNet",
                     "TinyCLAP",
                     "arm_scores",
                     "bimodal_contrastive_loss",
                     "build_separator",
                     "check_test_sources",
                     "clap_accuracy",
                     "consistency_reconstruction_loss",
                     "evaluate_separation",
                     "heldout_compositions",
                     "istft_with_phase",
                     "loss_weight",
                     "natural_mixtures",
                     "parse_caption",
                     "phrase_words",
                     "pretrain_tiny_clap",
                     "score_separation",
                     "single_source_clips",
                     "stft",
                     "supervised_batches",
                     "synthesize_source",
                     "tiny_clap",
                     "train_separator",
                     "weak_batches",
                     "weighted_l1",
                     "zero_shot_accuracy",
]
