"""Language-Informed Visual Concept Learning (Lee, Zhang, Wu et al., ICLR 2024; arXiv 2312.03587).

Language names concept *axes* (category, colour, material) but not the nuance along them. One
encoder per axis maps an image's frozen features to a word embedding in a frozen text-to-image
model's input space; a template with one placeholder per axis, filled with the K embeddings,
must regenerate the image through the diffusion loss (distillation), and each embedding is
anchored to the input embedding of a frozen VQA model's answer to the axis question. Embeddings
of different images can then be remixed (recomposition).

How the code maps to the paper:
- :mod:`.encoders`: ``ConceptEncoder`` (per-layer linear maps, dropout 0.2, mean, LeakyReLU,
  linear to the text encoder's input width), ``ConceptEncoders`` (one per axis);
- :mod:`.prompts`: ``TemplatePrompt`` (placeholder tokens; their *input* embeddings replaced),
  ``WordTokenizer``, ``HFTokenizer`` (any Hugging Face tokenizer, e.g. T5's, plugs in);
- :mod:`.interfaces`: protocols ``TextEncoder``, ``TextToImageModel``, ``VQAModel``,
  ``ImageFeatureExtractor`` for the frozen parts;
- :mod:`.distillation`: ``concept_distillation_loss`` (L_recon + lambda sum_k L_anchor,k),
  ``fit_concept_encoders``, ``vqa_anchor_words``, ``recompose``, ``generate``,
  ``test_time_finetune`` (L_recon only);
- :mod:`.standins`: the tiny frozen stand-ins (a diffusers UNet2DConditionModel T2I with a
  one-layer text encoder, a coarse VQA classifier, a small feature CNN, truth probes);
- :mod:`.world`: the procedural scenes (shape, continuous hue, texture) where truth is known;
- :mod:`.experiment`: arms, the lambda sweep and its pre-registered choice, the metrics.

Out of reach here: DeepFloyd IF with T5-XXL, BLIP-2 and CLIP ViT-L/14 weights (no downloads,
CPU only), natural-image domains, CLIP-score and human-study evaluation. Every pretrained part is
a protocol, so a user with local weights can plug them in; the claims use stand-ins trained on
8x8 procedural scenes (10 T2I training steps at smoke, 1500 at small) and then frozen. The spec
asks for 16x16 at small; on this 2-core CPU a 16x16 T2I step costs 3x an 8x8 one, and 16x16
with enough steps to follow captions does not fit the 5-minute budget (issue 38).
"""

from .distillation import (
                           anchor_embeddings,
                           check_images,
                           concept_distillation_loss,
                           fit_concept_encoders,
                           generate,
                           recompose,
                           test_time_finetune,
                           vqa_anchor_words,
)
from .encoders import ConceptEncoder, ConceptEncoders
from .interfaces import ImageFeatureExtractor, TextEncoder, TextToImageModel, VQAModel
from .prompts import HFTokenizer, TemplatePrompt, Tokenizer, WordTokenizer, placeholder_token

__all__ = [
                           "ConceptEncoder",
                           "ConceptEncoders",
                           "HFTokenizer",
                           "ImageFeatureExtractor",
                           "TemplatePrompt",
                           "TextEncoder",
                           "TextToImageModel",
                           "Tokenizer",
                           "VQAModel",
                           "WordTokenizer",
                           "anchor_embeddings",
                           "check_images",
                           "concept_distillation_loss",
                           "fit_concept_encoders",
                           "generate",
                           "placeholder_token",
                           "recompose",
                           "test_time_finetune",
                           "vqa_anchor_words",
]
