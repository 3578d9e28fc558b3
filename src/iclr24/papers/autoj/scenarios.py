"""Auto-J's taxonomy of real-world query scenarios (Li et al., ICLR 2024, Sec. 3.1 / Table 1):
58 scenarios in 8 groups, copied from the official leaderboard code
(GAIR-NLP/auto-j ``codes/leaderboard/utils_constants.py``, ``scenario_group``).

In the paper the taxonomy balances the meta-evaluation testbed (24 pairs per scenario) and the
training queries, and each scenario's hand-written criteria steer GPT-4 when it writes the
training judgments; results are reported per group and overall. The criteria (YAML files in the
official repository) are not shipped here: they were used only to make GPT-4's judgments
better, never at inference. The table is kept as a Python literal (not a data file) so the
package needs no package-data configuration.
"""

from __future__ import annotations

__all__ = ["SCENARIOS", "SCENARIO_GROUPS", "scenario_group"]

SCENARIO_GROUPS: dict[str, tuple[str, ...]] = {
    "Summarization": ("post_summarization", "text_summarization", "note_summarization"),
    "Exam Questions": ("math_reasoning", "solving_exam_question_with_math",
                       "solving_exam_question_without_math"),
    "Code": ("code_simplification", "code_generation", "explaining_code",
             "code_correction_rewriting", "code_to_code_translation"),
    "Rewriting": ("text_simplification", "language_polishing", "instructional_rewriting",
                  "text_correction", "paraphrasing"),
    "Creative Writing": ("writing_song_lyrics", "writing_social_media_post", "writing_blog_post",
                         "writing_personal_essay", "creative_writing", "writing_advertisement",
                         "writing_marketing_materials", "writing_presentation_script",
                         "counterfactual"),
    "Functional Writing": ("writing_product_description", "writing_job_application",
                           "writing_news_article", "writing_biography", "writing_email",
                           "writing_legal_document", "writing_technical_document",
                           "writing_scientific_paper", "functional_writing",
                           "writing_cooking_recipe"),
    "General Communication": ("asking_how_to_question", "open_question", "analyzing_general",
                              "explaining_general", "seeking_advice", "recommendation",
                              "value_judgement", "verifying_fact", "chitchat", "roleplay",
                              "planning", "brainstorming"),
    "NLP Tasks": ("ranking", "text_to_text_translation", "data_analysis",
                  "classification_identification", "title_generation", "question_generation",
                  "reading_comprehension", "keywords_extraction", "information_extraction",
                  "topic_modeling", "others"),
}

SCENARIOS: tuple[str, ...] = tuple(s for group in SCENARIO_GROUPS.values() for s in group)

_GROUP_OF = {s: g for g, members in SCENARIO_GROUPS.items() for s in members}


def scenario_group(scenario: str) -> str:
    """The group of a scenario name (``"math_reasoning"`` -> ``"Exam Questions"``)."""
    if not isinstance(scenario, str):
        raise TypeError(f"scenario must be a str, got {type(scenario).__name__}")
    try:
        return _GROUP_OF[scenario]
    except KeyError:
        raise ValueError(f"scenario must be one of the 58 Auto-J scenarios, got "
                         f"{scenario!r}") from None
