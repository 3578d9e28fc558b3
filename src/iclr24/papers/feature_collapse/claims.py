"""Feature collapse: collapse goes with generalisation (Fig. 3) and LayerNorm is needed for
collapse under Zipf word frequencies (Fig. 4)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Measurement, Scale, claim, seed_difference, seed_metric, sizes

from .collapse_metrics import (
    classifier_block_ratio,
    norm_frequency_spearman,
    norm_spread,
    pca_spectrum_ratio,
    within_concept_ratio,
)
from .data_model import ConceptSentenceDataset


def _figure():
    from matplotlib.figure import Figure

    return Figure


def _run_arm(ds, train, test, epochs: int, seed: int, layer_norm: bool = False,
             freeze_embedding: bool = False, eval_every: int = 0) -> dict:
    import torch

    from iclr24.kits.threads import torch_threads

    from .collapse_model import EmbedLinearClassifier, accuracy, train_collapse_model

    with torch_threads(1):
        model = EmbedLinearClassifier(ds.n_words, ds.L, 100, ds.K, layer_norm=layer_norm,
                                      generator=torch.Generator().manual_seed(seed))
        hist = train_collapse_model(model, *train, epochs=epochs, seed=seed,
                                    freeze_embedding=freeze_embedding, test=test,
                                    eval_every=eval_every)
        feats = model.features().detach().numpy().astype(np.float64)
        with torch.no_grad():
            pred = model(torch.as_tensor(test[0])).argmax(1).numpy()
        return {
            "test_acc": accuracy(model, *test),
            "test_correct": pred == test[1],
            "train_acc": accuracy(model, *train),
            "within_ratio": within_concept_ratio(feats, ds.concept_of_word),
            "pca_ratio": pca_spectrum_ratio(feats, ds.n_concepts),
            "clf_ratio": classifier_block_ratio(model.clf.weight.detach().numpy(), ds.Z),
            "features": feats,
            "raw": model.emb.weight.detach().numpy().astype(np.float64),
            "curve": hist.test_accuracy,
            "final_loss": hist.train_loss[-1],
        }


@claim(
    rule="acc_gap > 0.3 and trained_acc >= 0.95 and ratio_gap > 0.3",
    control="frozen_acc < 0.95",
    paper="Fig. 3 (K = 1000 classes, 1200 words in 3 concepts, L = 15, d = 100, n_spl = 5, "
          "uniform frequencies, 1200 epochs): the embed + linear network trained with weight "
          "decay reaches ~100% test accuracy and its word embeddings collapse onto 3 points; "
          "networks whose features do not collapse generalise worse (Sec. 2).",
    paper_numbers={"trained_acc": 1.0},
    against=("the same network with the embedding frozen at its random N(0, 1) init (cannot "
             "collapse), same data, classifier init and SGD"),
)
def collapse_generalization(scale: Scale, seed: int, progress=None) -> Measurement:
    """Trainable embedding vs the same network with the embedding frozen at a random N(0, 1)
    initialisation (it cannot collapse), same data, same classifier initialisation, same SGD.
    ``acc_gap``: test accuracy trained - frozen; ``ratio_gap``: within-concept ratio frozen -
    trained (0 = perfect collapse, ~1 = none); paired over seeds at small (3 seeds, K = 200, 1200
    words, 1000 epochs = 10 000 SGD steps; the paper: K = 1000, 1200 epochs = 60 000 steps).
    Smoke: one seed, K = 50, 300 words, 600 epochs.

    Null arm: the frozen random embedding, measured in the same run. Control (added with the
    issue-34 repair, rule unchanged): the null arm itself must not reach the rule's accuracy
    level (``frozen_acc < 0.95``); if a random, non-collapsing embedding already generalises,
    the task does not need collapse at this size and the test bed cannot tell."""
    progress = progress or (lambda *a, **k: None)
    n_seeds = sizes(scale, smoke=1, small=3)
    K = sizes(scale, smoke=50, small=200)
    n_words = sizes(scale, smoke=300, small=1200)
    epochs = sizes(scale, smoke=600, small=1000)
    rows, arms = [], {"trained": [], "frozen": []}
    for i in range(n_seeds):
        s = seed + i
        ds = ConceptSentenceDataset(3, n_words, 15, K, "uniform", seed=s)
        train, test = ds.sample(5, rng=(s, 1)), ds.sample(5, rng=(s, 2))
        for arm, results in arms.items():
            r = _run_arm(ds, train, test, epochs, s, freeze_embedding=arm == "frozen",
                         eval_every=max(1, epochs // 10))
            results.append(r)
            rows.append({"seed": s, "arm": arm, **{k: r[k] for k in
                         ("test_acc", "train_acc", "within_ratio", "pca_ratio", "clf_ratio",
                          "final_loss")}})
            progress((2 * i + (arm == "frozen") + 1) / (2 * n_seeds), f"seed {s} {arm}")
    get = lambda arm, key: [r[key] for r in arms[arm]]
    metrics = {
        "acc_gap": seed_difference(get("trained", "test_acc"), get("frozen", "test_acc")),
        "ratio_gap": seed_difference(get("frozen", "within_ratio"),
                                     get("trained", "within_ratio")),
        "trained_acc": seed_metric(get("trained", "test_acc")),
        "frozen_acc": seed_metric(get("frozen", "test_acc")),
        "trained_within_ratio": seed_metric(get("trained", "within_ratio")),
        "frozen_within_ratio": seed_metric(get("frozen", "within_ratio")),
        "trained_pca_ratio": seed_metric(get("trained", "pca_ratio")),
        "trained_clf_ratio": seed_metric(get("trained", "clf_ratio")),
        "epochs": epochs, "K": K, "sgd_steps": epochs * int(np.ceil(5 * K / 100)),
    }
    from sklearn.decomposition import PCA

    Figure = _figure()
    fig = Figure(figsize=(11.0, 3.8))
    ds = ConceptSentenceDataset(3, n_words, 15, K, "uniform", seed=seed)
    for k, arm in enumerate(arms):
        ax = fig.add_subplot(1, 3, k + 1)
        pts = PCA(n_components=2).fit_transform(arms[arm][0]["features"])
        ax.scatter(pts[:, 0], pts[:, 1], s=2, c=ds.concept_of_word, cmap="brg")
        ax.set_title(f"{arm} embedding (PCA), ratio {arms[arm][0]['within_ratio']:.2f}")
    ax = fig.add_subplot(1, 3, 3)
    for arm in arms:
        ep, acc = zip(*arms[arm][0]["curve"])
        ax.plot(ep, acc, "o-", label=arm)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy")
    ax.legend()
    fig.tight_layout()
    return Measurement(metrics=metrics, figure=fig, tables={"per_seed": rows},
                       notes=f"{epochs} epochs of SGD (batch 100, lr 0.1, wd 1e-3 on W and U) "
                             f"with K = {K} classes; collapse keeps tightening with more steps "
                             "(the paper's Fig. 3 runs 60 000 steps), so the ratio is reported, "
                             "not a binary 'collapsed'.")


@claim(
    rule="spearman_noln > 0.5 and ratio_gap > 0 and acc_gap > 0",
    control="spearman_uniform_noln < 0.5 and uniform_minus_zipf_acc_noln > 0",
    paper="Fig. 4 / Thm. (large-sample limit): with Zipf word frequencies the embeddings "
          "collapse and the network generalises when a LayerNorm (no affine parameters) "
          "follows the embedding, while without it the embedding norms depend on the word "
          "frequency, rare words do not collapse and test accuracy is lower (notebooks: "
          "K = 1000, n_spl = 500 and 5; Fig. 4c's log: 100% test accuracy with LN by epoch 50).",
    paper_numbers={"test_acc_ln": 1.0},
    against=("the same network without LayerNorm after the embedding, same Zipf data, "
             "initialisation and SGD; null arm: the no-LN network on uniform word frequencies "
             "(same latents, same sizes), i.e. the long tail switched off"),
)
def layernorm_zipf(scale: Scale, seed: int, progress=None) -> Measurement:
    """Zipf frequencies (mu_beta ~ 1/beta), the same data, initialisation and SGD with and
    without LayerNorm, in the data-poor regime of Fig. 4b/c: n_spl = 5 sentences per class.

    Rule (written before the run that judges it): ``spearman_noln > 0.5`` (rank correlation of
    ||w|| with mu_beta without LN), ``ratio_gap > 0`` (within-concept ratio of the features,
    phi(w) = LN(w) with LN, no-LN minus LN: LN collapses more) and ``acc_gap > 0`` (test
    accuracy LN minus no-LN, paired over seeds). Why changed: the former test bed (n_spl = 100)
    let both arms reach 100% test accuracy, so the accuracy contrast of Fig. 4b/c was not
    tested; at n_spl = 5 it can be, and the rule now judges it (the paper does not pin the size
    of the gap, so the rule asks only that the whole interval be above 0).

    Null arm (same run, same latents Z and seeds): the no-LN network trained on *uniform* word
    frequencies, the long tail switched off. Control: its norms do not rank with the Zipf
    frequency the same word ids would have (``spearman_uniform_noln < 0.5``: the spearman level
    is not reached without a long tail), and without LN the network does generalise better on
    uniform than on Zipf frequencies (``uniform_minus_zipf_acc_noln > 0``, paired): otherwise
    no-LN's low accuracy could be a budget failure of that architecture rather than the
    frequency effect, and the test bed cannot tell.

    Sizes: small: 3 seeds, K = 200, 1200 words, n_spl = 5, 400 epochs (4 000 SGD steps per arm);
    smoke: one seed, K = 30, 300 words, n_spl = 5, 300 epochs. The notebooks: K = 1000.
    Reported, not judged: accuracy on the test sentences that contain a word rarer than the
    median frequency, for both arms."""
    progress = progress or (lambda *a, **k: None)
    n_seeds = sizes(scale, smoke=1, small=3)
    K = sizes(scale, smoke=30, small=200)
    n_words = sizes(scale, smoke=300, small=1200)
    n_spl = 5
    epochs = sizes(scale, smoke=300, small=400)
    rows, arms = [], {"noln": [], "ln": [], "uniform_noln": []}
    n_runs = len(arms) * n_seeds
    for i in range(n_seeds):
        s = seed + i
        data = {}
        for freq in ("zipf", "uniform"):
            ds = ConceptSentenceDataset(3, n_words, 15, K, freq, seed=s)  # same Z for both
            data[freq] = ds, ds.sample(n_spl, rng=(s, 1)), ds.sample(5, rng=(s, 2))
        ds, _, test = data["zipf"]
        zipf_frequency = ds.word_frequency
        rare = zipf_frequency[test[0]] < np.median(ds.mu)  # (sentences, L)
        has_rare = rare.any(axis=1)
        for j, (arm, results) in enumerate(arms.items()):
            ds, train, test = data["uniform" if arm == "uniform_noln" else "zipf"]
            r = _run_arm(ds, train, test, epochs, s, layer_norm=arm == "ln")
            # the null arm's norms are ranked against the Zipf mu_beta of the same word ids
            r["spearman"] = norm_frequency_spearman(r["features"], zipf_frequency)
            r["spearman_raw_w"] = norm_frequency_spearman(r["raw"], zipf_frequency)
            r["norm_spread"] = norm_spread(r["features"])
            r["rare_acc"] = float(np.mean(r["test_correct"][has_rare]))
            results.append(r)
            rows.append({"seed": s, "arm": arm, **{k: r[k] for k in
                         ("test_acc", "rare_acc", "within_ratio", "spearman", "spearman_raw_w",
                          "norm_spread", "pca_ratio", "final_loss")}})
            progress((len(arms) * i + j + 1) / n_runs, f"seed {s} {arm}")
    get = lambda arm, key: [r[key] for r in arms[arm]]
    metrics = {
        "spearman_noln": seed_metric(get("noln", "spearman")),
        "spearman_ln": seed_metric(get("ln", "spearman")),
        "spearman_uniform_noln": seed_metric(get("uniform_noln", "spearman")),
        "ratio_gap": seed_difference(get("noln", "within_ratio"), get("ln", "within_ratio")),
        "acc_gap": seed_difference(get("ln", "test_acc"), get("noln", "test_acc")),
        "uniform_minus_zipf_acc_noln": seed_difference(get("uniform_noln", "test_acc"),
                                                       get("noln", "test_acc")),
        "norm_spread_noln": seed_metric(get("noln", "norm_spread")),
        "norm_spread_ln": seed_metric(get("ln", "norm_spread")),
        "within_ratio_noln": seed_metric(get("noln", "within_ratio")),
        "within_ratio_ln": seed_metric(get("ln", "within_ratio")),
        "within_ratio_uniform_noln": seed_metric(get("uniform_noln", "within_ratio")),
        "rare_acc_noln": seed_metric(get("noln", "rare_acc")),
        "rare_acc_ln": seed_metric(get("ln", "rare_acc")),
        "test_acc_noln": seed_metric(get("noln", "test_acc")),
        "test_acc_ln": seed_metric(get("ln", "test_acc")),
        "test_acc_uniform_noln": seed_metric(get("uniform_noln", "test_acc")),
        "epochs": epochs, "K": K, "n_spl": n_spl,
        "sgd_steps": epochs * int(np.ceil(n_spl * K / 100)),
    }
    Figure = _figure()
    fig = Figure(figsize=(13.0, 3.8))
    ds = ConceptSentenceDataset(3, n_words, 15, K, "zipf", seed=seed)
    titles = {"noln": "Zipf, without LayerNorm", "ln": "Zipf, with LayerNorm",
              "uniform_noln": "null: uniform, without LayerNorm"}
    for k, arm in enumerate(arms):
        ax = fig.add_subplot(1, 3, k + 1)
        norms = np.linalg.norm(arms[arm][0]["features"], axis=1)
        ax.scatter(ds.word_frequency, norms, s=3, c=ds.concept_of_word, cmap="brg")
        ax.set_xscale("log")
        ax.set_xlabel("Zipf frequency mu_beta of the word id")
        ax.set_ylabel("||phi(w)||")
        ax.set_title(f"{titles[arm]}: acc {arms[arm][0]['test_acc']:.2f}")
    fig.tight_layout()
    return Measurement(metrics=metrics, figure=fig, tables={"per_seed": rows},
                       notes="LayerNorm (eps = 1e-5, PyTorch's default, as the notebooks) leaves "
                             "feature norms sqrt(d var / (var + eps)), so they still rank with "
                             "frequency (spearman_ln) although their spread (norm_spread_ln, "
                             "std / mean of the norms) is small; spearman_raw_w in the table "
                             "uses the raw W. The null arm's spearman ranks its norms against "
                             "the Zipf frequency of the same word ids.")
