"""The CSP experiment behind both claims: train DiffCSP++ and DiffCSP side by side on the same
procedural prototypes (same seed, same data, same network and budget), then predict every test
crystal four ways: DiffCSP++ with the ground-truth template, DiffCSP++ with a retrieved
template (the CSPML analogue: nearest training composition by element radii), DiffCSP from
the composition alone, and the null arm (issue 38) DiffCSP++ with the ground-truth template
and its *untrained* network (the same initial weights and sampling noise as the trained arm:
what the template alone gives). Each prediction is checked for validity
(:func:`~.evaluation.structure_valid`), scored by StructureMatcher against the truth and by its
spglib space group (symprec 0.1) against the target; the targets' own space groups are
detected too (a positive control of the detector).

One run per (config, seed) is cached on disk (``iclr24.kits.disk_cache``), so the two claims
that read it train the models once.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .cspnet import CSPNet
from .diffusion import DiffCSP, DiffCSPPlusPlus, fit
from .evaluation import match_details, space_group_of, structure_valid
from .lattice import LatticeLogBasis
from .prototypes import prototype_dataset, prototype_of, retrieve_template, split_compositions

__all__ = ["ARMS", "CSPExperiment", "run_csp_experiment"]

ARMS = ("diffcsp_pp", "diffcsp_pp_retrieved", "diffcsp", "diffcsp_pp_untrained")
_VERSION = 2  # 2: the untrained null arm, validity and template freedom per row (issue 38)


@dataclass(frozen=True)
class CSPExperiment:
    """Sizes of one run. Paper / official defaults: CSPNet 6 x 512 with 128 frequencies,
    T = 1000, Adam 1e-3, batch 256-1024, thousands of epochs, step_lr 1e-5,
    sigma 0.005 - 0.5."""

    n_train: int = 2000
    n_test: int = 80
    diffusion_steps: int = 100
    train_steps: int = 800
    batch_size: int = 16
    hidden: int = 64
    layers: int = 4
    num_freqs: int = 10
    time_dim: int = 64
    lr: float = 1e-3
    step_lr: float = 1e-5
    sigma_begin: float = 0.005
    sigma_end: float = 0.5
    symprec: float = 0.1
    test_fraction: float = 0.15


def _arm_model(cls, exp: CSPExperiment, clip_k0: float, seed: int):
    torch.manual_seed(seed)  # parameter initialisation, identical for both arms
    net = CSPNet(hidden=exp.hidden, layers=exp.layers, num_freqs=exp.num_freqs,
                 time_dim=exp.time_dim)
    return cls(net, exp.diffusion_steps, exp.sigma_begin, exp.sigma_end, clip_k0=clip_k0)


def _run(exp: CSPExperiment, seed: int, progress: Callable[[float, str], None]) -> dict:
    from iclr24.kits.threads import torch_threads

    rng = np.random.default_rng(seed)
    train_comps, test_comps = split_compositions(seed, exp.test_fraction)
    train = prototype_dataset(train_comps, exp.n_train, rng)
    test = prototype_dataset(test_comps, exp.n_test, rng)
    crystals = [c for _, c in train]
    basis = LatticeLogBasis()
    k0 = basis.to_k(np.stack([c.lattice for c in crystals]))
    clip_k0 = 1.5 * float(k0.abs().max())  # x0 clip of the lattice sampler: data-derived box
    library = [(comp, c.template) for comp, c in train]
    targets = [c for _, c in test]
    out: dict = {"rows": [], "train_loss": {}, "seconds": {}}
    preds = {}
    with torch_threads(1):
        for a, (name, cls) in enumerate((("diffcsp_pp", DiffCSPPlusPlus), ("diffcsp", DiffCSP))):
            model = _arm_model(cls, exp, clip_k0, seed)
            g = torch.Generator().manual_seed(seed + 1)  # same noise stream for both arms
            t0 = time.process_time()
            losses = fit(model, crystals, exp.train_steps, batch_size=exp.batch_size,
                         lr=exp.lr, generator=g,
                         progress=lambda f, m, a=a, name=name: progress(0.45 * (a + f) / 2,
                                                                     f"{name}: {m}"))
            out["seconds"][f"train_{name}"] = time.process_time() - t0
            out["train_loss"][name] = float(np.mean(losses[-max(1, len(losses) // 10):]))
            g = torch.Generator().manual_seed(seed + 2)
            t0 = time.process_time()
            if name == "diffcsp":
                preds[name] = model.sample([list(c.template.species) for c in targets],
                                           step_lr=exp.step_lr, generator=g)
            else:
                preds[name] = model.sample([c.template for c in targets],
                                           step_lr=exp.step_lr, generator=g)
                retrieved = [retrieve_template(comp, library) for comp, _ in test]
                preds["diffcsp_pp_retrieved"] = model.sample(retrieved, step_lr=exp.step_lr,
                                                             generator=g)
            out["seconds"][f"sample_{name}"] = time.process_time() - t0
            progress(0.45 + 0.3 * (a + 1) / 2, f"{name} sampled")
        # null arm: the same initial weights as the trained DiffCSP++, never trained, sampled
        # with the same templates and noise stream
        untrained = _arm_model(DiffCSPPlusPlus, exp, clip_k0, seed).eval()
        g = torch.Generator().manual_seed(seed + 2)
        t0 = time.process_time()
        preds["diffcsp_pp_untrained"] = untrained.sample([c.template for c in targets],
                                                         step_lr=exp.step_lr, generator=g)
        out["seconds"]["sample_diffcsp_pp_untrained"] = time.process_time() - t0
        progress(0.8, "untrained null arm sampled")
    t0 = time.process_time()
    target_structs = [c.to_structure() for c in targets]
    scores = {arm: match_details(preds[arm], target_structs) for arm in ARMS}
    valid = {arm: [structure_valid(p) for p in preds[arm]] for arm in ARMS}
    groups = {arm: [space_group_of(p, exp.symprec) for p in preds[arm]] for arm in ARMS}
    truth_groups = [space_group_of(s, exp.symprec) for s in target_structs]
    out["seconds"]["evaluate"] = time.process_time() - t0
    for i, (comp, c) in enumerate(test):
        row = {"prototype": prototype_of(comp).name, "formula": comp.formula,
               "target_spacegroup": c.template.spacegroup,
               "truth_spacegroup": truth_groups[i],
               "free_parameters": c.template.free_parameters,
               "retrieved_spacegroup": preds["diffcsp_pp_retrieved"][i].template.spacegroup}
        for arm in ARMS:
            row[f"rms_{arm}"] = scores[arm][i]
            row[f"valid_{arm}"] = valid[arm][i]
            row[f"sg_{arm}"] = groups[arm][i]
        out["rows"].append(row)
    progress(1.0, "evaluated")
    return out


def run_csp_experiment(exp: CSPExperiment, seed: int,
                       progress: Callable[[float, str], None] | None = None) -> dict:
    """The per-test-crystal rows of one seeded run (cached on disk), plus training losses and
    CPU seconds of each phase. Row keys: prototype, formula, target_spacegroup,
    truth_spacegroup (spglib on the target itself), free_parameters (of the true template),
    retrieved_spacegroup, and per arm ``rms_<arm>`` (None = no match), ``valid_<arm>``
    (:func:`~.evaluation.structure_valid`) and ``sg_<arm>`` (None = invalid or spglib
    failed)."""
    from iclr24.kits.disk_cache import cached_directory

    progress = progress or (lambda *a, **k: None)
    key = {"paper": "diffcsp_pp", "version": _VERSION, "seed": int(seed),
           "config": dataclasses.asdict(exp), "torch": torch.__version__}

    def build(folder: Path) -> None:
        (folder / "run.json").write_text(json.dumps(_run(exp, seed, progress)),
                                         encoding="utf-8")

    folder, _ = cached_directory("diffcsp_pp_csp", key, build)
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))
