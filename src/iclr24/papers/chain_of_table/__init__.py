"""Chain-of-Table: evolving tables in the reasoning chain for table understanding (Z. Wang,
H. Zhang, C.-L. Li, J. M. Eisenschlos, V. Perot, Z. Wang, L. Miculicich, Y. Fujii, J. Shang,
C.-Y. Lee, T. Pfister; ICLR 2024; arXiv 2401.04398; official code
google-research/chain-of-table, TabFact pipeline only).

What the paper does. Instead of a textual chain of thought, an LLM reasons by editing the
table: at each step it plans the next atomic operation (add a derived column, select rows,
select columns, group, sort; each at most once, in a fixed partial order), generates its
arguments, and the operation is executed; the transformed table is the "intermediate
thought". At END a final query answers from the last table (+ the group summary). TabFact /
WikiTQ accuracy: PaLM 2 86.61 / 67.31, GPT-3.5 80.20 / 59.94, best in each block; gains are
largest on large tables.

How the code maps to it.
- :mod:`.tables`: :func:`linearize` (PIPE format), the pure operations :func:`add_column`
  (+ :func:`add_column_problem`, the official sanity checks), :func:`select_rows`,
  :func:`select_columns`, :func:`group_summary` / :func:`group_block`, :func:`sort_rows`,
  :func:`numeric_key`.
- :mod:`.chain`: :data:`OPERATION_GRAPH`, :class:`Operation`, :class:`ChainState`,
  :func:`apply_operation` (skips recorded as ``skip f_op()``), the :class:`Planner` /
  :class:`ArgumentGenerator` / :class:`Reader` protocols and :class:`ChainOfTable` (Algorithm
  1; ``run`` and a lockstep ``run_batch``) -> :class:`ChainResult`.
- :mod:`.prompts`: the official prompts verbatim and their parsers.
- :mod:`.agents`: :class:`LMPlanner`, :class:`LMArguments`, :class:`LMReader` over any text
  backend (voting by Σ exp(log-prob)), with parse statistics.
- the language-model kit's :class:`~iclr24.kits.language_models.PrefixCachedTextModel`
  (shared demo prefixes computed once, scored samples) runs SmolLM2 on a CPU.
- :mod:`.league`: :func:`make_table_task` (synthetic league tables with programmatic truth and
  oracle chains), :class:`ScriptedPlanner`, :class:`LearnedPlanner` (scikit-learn),
  :class:`RandomPlanner`, :class:`RuleArguments`, :class:`ShortContextReader`.
- ``claims.py``: ``chain_vs_end_to_end`` (accuracy per table-size bucket; the learned
  planner judged against a random legal chain, the null arm, and against end-to-end reading;
  oracle chains as the positive control) and ``protocol_end_to_end`` (a protocol check: the
  exact prompts on SmolLM2-135M-Instruct, parse rates per operation, accuracy reported; an
  untrained byte-level model as the null arm).

Out of reach and what differs. PaLM 2, GPT-3.5 and LLaMA 2 and the real benchmarks (TabFact,
WikiTQ, FeTaQA; no offline copy) are out of reach: the mechanism is tested on synthetic league
tables with a capacity-limited scripted reader that sees 5 rows, and the full LLM protocol is
run on SmolLM2-135M-Instruct (weak absolute numbers expected). The spec's second reader (a
tiny character transformer) and the FeTaQA BLEU/ROUGE metrics are not implemented. The sort
executor applies the most confident candidate (the official code applies the least).

Usage::

    from iclr24.papers.chain_of_table import (ChainOfTable, ScriptedPlanner, RuleArguments,
        ShortContextReader, make_table_task)
    task = make_table_task(40, "count", seed=0)
    cot = ChainOfTable(ScriptedPlanner({task.statement: task.oracle_chain}),
                       RuleArguments(), ShortContextReader())
    result = cot.run(task.table, task.statement)   # answer, chain, final_table, group_block
"""

from .agents import LMArguments, LMPlanner, LMReader, ParseStats, generate_scored
from .chain import (
    END,
    INIT,
    OPERATION_GRAPH,
    OPERATIONS,
    ArgumentGenerator,
    ChainOfTable,
    ChainResult,
    ChainState,
    Operation,
    Planner,
    Reader,
    apply_operation,
)
from .league import (
    KINDS,
    LearnedPlanner,
    RandomPlanner,
    RuleArguments,
    ScriptedPlanner,
    ShortContextReader,
    TableTask,
    make_table_task,
    make_table_tasks,
)
from .prompts import (
    final_query_prompt,
    parse_add_column,
    parse_answer,
    parse_columns,
    parse_group,
    parse_plan,
    parse_rows,
    parse_sort,
    plan_prompt,
)
from .tables import (
    add_column,
    add_column_problem,
    group_block,
    group_summary,
    is_groupable,
    linearize,
    numeric_key,
    select_columns,
    select_rows,
    sort_rows,
)

__all__ = [
    "END",
    "INIT",
    "KINDS",
    "OPERATIONS",
    "OPERATION_GRAPH",
    "ArgumentGenerator",
    "ChainOfTable",
    "ChainResult",
    "ChainState",
    "LMArguments",
    "LMPlanner",
    "LMReader",
    "LearnedPlanner",
    "Operation",
    "ParseStats",
    "Planner",
    "RandomPlanner",
    "Reader",
    "RuleArguments",
    "ScriptedPlanner",
    "ShortContextReader",
    "TableTask",
    "add_column",
    "add_column_problem",
    "apply_operation",
    "final_query_prompt",
    "generate_scored",
    "group_block",
    "group_summary",
    "is_groupable",
    "linearize",
    "make_table_task",
    "make_table_tasks",
    "numeric_key",
    "parse_add_column",
    "parse_answer",
    "parse_columns",
    "parse_group",
    "parse_plan",
    "parse_rows",
    "parse_sort",
    "plan_prompt",
    "select_columns",
    "select_rows",
    "sort_rows",
]
