"""Generation: the LLM decode workload's models, prompts, generating stacks, quality and LoadGen token mode.

Self-contained for now: the cell pipeline, results schema and registry do not call it yet (docs/llm.md).
"""

from accelbench.generation.base import GenerationContext, GenerationStack, Generator, Reply
from accelbench.generation.models import MODELS, LlmModel, load_model
from accelbench.generation.prompts import PromptSet, make_prompts

__all__ = [
    "MODELS",
    "GenerationContext",
    "GenerationStack",
    "Generator",
    "LlmModel",
    "PromptSet",
    "Reply",
    "load_model",
    "make_prompts",
]
