"""dag_scale claims: the rescaling attack at the population optimum (exact), finite-sample
learners under rescaling with a scale-invariant control, and a nonlinear learner on rescaled
additive-noise data.

Each claim measures its null arm in the same run and its ``control`` requires that the null
does not pass the rule: no rescaling and a random rescaling (``population_scale_attack``), a
second independent raw sample (``learners_under_rescaling``), a refit on the raw data with
another torch seed (``nonlinear_rescaling``)."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale, assess_rule, claim, sizes
from iclr24.kits.replications import replicate

from .experiments import learners_replication, nonlinear_replication, population_replication


@claim(
    rule="target_wins >= 0.99 and consistent_after <= 0.05 and ll_shift_spread <= 1e-8",
    control="consistent_before >= 0.99 and target_wins_unattacked < 0.99 "
            "and target_wins_random_rescale < 0.99",
    paper="Sec. 3-4: for d-dimensional linear SEMs there are rescalings under which square-"
          "based losses are minimal for a wrong DAG; the Gaussian non-equal-variance "
          "likelihood ranks DAGs the same under any rescaling.",
    paper_numbers={"consistent_before": 1.0, "target_wins": 1.0, "consistent_after": 0.0},
    against=("null arms on the same SEMs and target orders: no rescaling, and a random "
             "log-uniform rescaling s_j in [0.1, 10]; exact LS-optimal order by subset DP on "
             "the population covariance; NV log-likelihood shifts over 8 orders"),
)
def population_scale_attack(scale: Scale, seed: int, progress=None) -> Measurement:
    """Random ER-2 linear SEMs (d = 8; 5 at smoke) with equal noise variances, so the true
    order is LS-optimal before the attack. The exact LS-optimal order (subset DP on the
    population covariance) before and after ``scale_attack`` towards a random order that is
    not consistent with the DAG. ``target_wins``: fraction where the targeted order attains the
    minimum; ``consistent_after``: fraction where the LS optimum is still consistent with the
    true DAG; ``ll_shift_spread``: the largest spread, over orders, of the LL change caused by
    the attack (0: LL rankings unchanged).

    Null arms, measured on the same SEMs and targets: no rescaling (``_unattacked``) and a
    random rescaling of comparable spread, log s_j ~ U(log 0.1, log 10) (``_random_rescale``).
    Control (written before running): equal noise variances make the true order LS-optimal
    (``consistent_before >= 0.99``, moved here from the old rule, where it was a precondition
    rather than the claim), and neither null makes the target win as the rule demands
    (``target_wins_* < 0.99``) - otherwise any rescaling, not the construction, would pass and
    the test bed could not tell. Rule otherwise unchanged."""
    n_sem = sizes(scale, smoke=20, small=200)
    d = sizes(scale, smoke=5, small=8)
    reps = replicate(population_replication, n_sem, seed, d)
    keys = [k for k in reps[0] if k.startswith(("consistent_", "target_wins", "varsort"))]
    metrics = {k: float(np.mean([r[k] for r in reps])) for k in keys}
    metrics["ll_shift_spread"] = float(max(r["ll_shift_spread"] for r in reps))
    return Measurement(metrics=metrics, tables={"sems": reps},
                       notes=f"{n_sem} SEMs, d = {d}, ER-2, unit noise variances.")


@claim(
    rule="shd_increase_ls > 2 and pc_change <= 0.5",
    control="shd_increase_ls_resample <= 2",
    paper="Experiments: square-loss learners (NOTEARS, GOLEM-EV) lose accuracy when variables "
          "are rescaled or standardised (SHD rises), while scale-invariant methods are "
          "unaffected.",
    paper_numbers={},
    against=("DAGMA-LS on the same raw (unattacked) samples; null arm: DAGMA-LS on a second "
             "independent raw sample of the same SEM; PC with Fisher-z on raw vs attacked "
             "data as the scale-invariant control"),
)
def learners_under_rescaling(scale: Scale, seed: int, progress=None) -> Measurement:
    """ER-2 linear SEMs (d = 10, n = 1000; d = 5, n = 300 at smoke), unit noise variances,
    5 seeds (2 at smoke). DAGMA with the square loss on raw vs attacked data (towards the
    reverse topological order): ``shd_increase_ls`` = paired mean SHD(attacked) - SHD(raw),
    t interval. Control: ``pc_change`` = SHD between PC's outputs on raw and attacked data
    (PC with Fisher-z is scale-invariant). Reported: standardised data, varsortability, and
    GOLEM-EV / GOLEM-NV (compact GOLEM, ``golem``) on raw vs attacked data:
    ``shd_increase_golem_ev`` / ``shd_increase_golem_nv`` (paired). GOLEM was added after the
    rule had been written and stays out of it; a first look (3 seeds) showed GOLEM-NV
    inheriting GOLEM-EV's errors on attacked data through the EV initialisation the GOLEM
    paper prescribes (its likelihood is scale-invariant, its optimisation path is not), so it
    is not the clean control the spec expects. DAGMA runs its default iterations at small, a
    tenth at smoke.

    Null arm (same run, same SEMs): DAGMA-LS refitted on a second independent raw sample of n
    from the same SEM, ``shd_increase_ls_resample`` = paired mean SHD(resample) - SHD(raw): how
    far SHD moves between two fits with no rescaling. Control (written before running): this
    null must not pass the rule's threshold, i.e. its whole interval is <= 2; otherwise an
    increase > 2 could be sampling noise and the test bed cannot tell. The rule is unchanged.
    With 2 seeds at smoke the t interval is wide, so smoke is usually inconclusive."""
    d = sizes(scale, smoke=5, small=10)
    n = sizes(scale, smoke=300, small=1000)
    seeds = sizes(scale, smoke=2, small=5)
    dagma_iter = sizes(scale, smoke=(3000, 6000), small=(30_000, 60_000))
    reps = replicate(learners_replication, seeds, seed, d, n, dagma_iter=dagma_iter,
                     n_jobs=sizes(scale, smoke=1, small=2))
    col = {k: np.array([r[k] for r in reps], dtype=float) for k in reps[0]}
    metrics = {
        "shd_increase_ls": Estimate.difference(col["shd_dagma_ls_attacked"],
                                               col["shd_dagma_ls_raw"], paired=True),
        "pc_change": Estimate.mean_of(col["pc_change"]),
        "shd_increase_ls_standardized": Estimate.difference(
            col["shd_dagma_ls_standardized"], col["shd_dagma_ls_raw"], paired=True),
        "shd_ls_raw": Estimate.mean_of(col["shd_dagma_ls_raw"]),
        "shd_ls_attacked": Estimate.mean_of(col["shd_dagma_ls_attacked"]),
        "shd_increase_ls_resample": Estimate.difference(col["shd_dagma_ls_resample"],
                                                        col["shd_dagma_ls_raw"], paired=True),
        "shd_increase_golem_ev": Estimate.difference(col["shd_golem_ev_attacked"],
                                                     col["shd_golem_ev_raw"], paired=True),
        "shd_increase_golem_nv": Estimate.difference(col["shd_golem_nv_attacked"],
                                                     col["shd_golem_nv_raw"], paired=True),
        "shd_golem_nv_raw": Estimate.mean_of(col["shd_golem_nv_raw"]),
    }
    return Measurement(metrics=metrics, tables={"seeds": reps},
                       notes=f"d = {d}, n = {n}, {seeds} seeds, ER-2, unit noise variances; "
                             f"DAGMA (warm_iter, max_iter) = {dagma_iter}.")


def _reseed_null_does_not_pass(m) -> bool | None:
    """The null arm (DAGMA-nonlinear refitted on the raw data with another torch seed) does not
    pass the rule: `shd_change_mlp_reseed > 0` is not true over its whole interval."""
    return assess_rule("shd_change_mlp_reseed > 0", m)[0] is not True


@claim(
    rule="shd_increase_mlp > 0 and pc_change <= 0.5",
    control=_reseed_null_does_not_pass,
    paper="Sec. 5 / experiments: for nonlinear relations, scale also impairs learners (square-"
          "based and likelihood losses): SHD is worse after the variables are rescaled.",
    paper_numbers={},
    against=("DAGMA-nonlinear on the same raw samples with the same torch seed; PC with Fisher-z "
             "on raw vs rescaled data as the scale-invariant control"),
    scales=("small", "full"),
)
def nonlinear_rescaling(scale: Scale, seed: int, progress=None) -> Measurement:
    """Additive-noise models (``simulate_anm``: sums of tanh and sin of the parents, unit
    Gaussian noise, ER-2), d = 5, n = 500, 3 seeds. DAGMA-nonlinear (MLP per variable, its
    log-MSE score, a square-based loss) on raw data and on data with each variable multiplied
    by s_j, log s_j ~ U(log 0.1, log 10) (the spec's rescaling), same torch seed for both fits:
    ``shd_increase_mlp`` = paired mean SHD(rescaled) - SHD(raw), t interval. Control:
    ``pc_change`` = SHD between PC's (Fisher-z) outputs on raw and rescaled data (partial
    correlations are scale-invariant, so 0).

    What differs from the paper / spec (d = 8, n = 1000): DAGMA-nonlinear costs ~3.5 ms of
    CPU per Adam step here even at d = 5, and its defaults are T = 4 stages of 50 000 / 80 000
    steps at lr 2e-4 (230 000 steps, ~13 min per fit). This claim keeps T = 4, lambda1 = 0.02,
    lambda2 = 0.005, hidden width 10 and threshold 0.3, and runs (warm_iter, max_iter) =
    (2000, 3000) at lr = 2e-3 (9000 steps, ~4% of the default, a 10x larger step to make up
    part of it), on d = 5, n = 500 (full: d = 8, n = 1000, 5 seeds, dagma's defaults). Six
    such fits and PC took 260 s of CPU (measured), so even the smallest honest run cannot fit
    the paper's smoke budget (<= 20 s of CPU for all smoke claims, of which the other two use
    ~16 s): the claim runs at small and full only (``scales=("small", "full")``), and the test
    suite runs a tiny version of the same pipeline (d = 3, n = 100, 180 steps per fit)
    instead. NOTEARS-MLP and GraN-DAG (gcastle) do not install with our torch.

    Null arm (same run, same data): DAGMA-nonlinear refitted on the raw data with a second
    torch seed, ``shd_change_mlp_reseed`` = paired mean SHD(raw, seed 2) - SHD(raw, seed 1):
    the SHD change that initialisation alone produces. Control (written before running): that
    null does not pass the rule's comparison (``shd_change_mlp_reseed > 0`` is not true over
    its whole interval); otherwise the test bed cannot tell rescaling from refitting. The rule
    is unchanged. The null adds one fit per seed; with it, a small run took 124 s of
    CPU (user, incl. workers) and 433 s wall on a heavily loaded 2-core machine."""
    full = Scale.parse(scale) is Scale.FULL           # full: the spec's sizes, dagma's defaults
    d, n, seeds = (8, 1000, 5) if full else (5, 500, 3)
    dagma_iter, lr = ((50_000, 80_000), 2e-4) if full else ((2000, 3000), 2e-3)
    reps = replicate(nonlinear_replication, seeds, seed, d, n, dagma_iter=dagma_iter, lr=lr,
                     n_jobs=2)
    col = {k: np.array([r[k] for r in reps], dtype=float) for k in reps[0]}
    metrics = {
        "shd_increase_mlp": Estimate.difference(col["shd_mlp_rescaled"], col["shd_mlp_raw"],
                                                paired=True),
        "pc_change": Estimate.mean_of(col["pc_change"]),
        "shd_change_mlp_reseed": Estimate.difference(col["shd_mlp_reseed"], col["shd_mlp_raw"],
                                                     paired=True),
        "shd_mlp_raw": Estimate.mean_of(col["shd_mlp_raw"]),
        "shd_mlp_rescaled": Estimate.mean_of(col["shd_mlp_rescaled"]),
        "shd_pc_raw": Estimate.mean_of(col["shd_pc_raw"]),
    }
    return Measurement(metrics=metrics, tables={"seeds": reps},
                       notes=f"ANM d = {d}, n = {n}, {seeds} seeds, ER-2; DAGMA-nonlinear "
                             f"(warm_iter, max_iter) = {dagma_iter}, lr = {lr}, T = 4.")
