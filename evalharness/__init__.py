"""evalharness: evaluate AI coding agents honestly."""

from evalharness.errors import (
    BudgetExhausted,
    EvalHarnessError,
    HarnessError,
    SandboxError,
    TaskPackError,
    UserError,
)
from evalharness.types import AgentResult, Budget, ExecResult, Harness, ModelEndpoint, Outcome, TaskSpec, Usage

__version__ = "0.1.0"

__all__ = [
    "AgentResult",
    "Budget",
    "BudgetExhausted",
    "EvalHarnessError",
    "ExecResult",
    "Harness",
    "HarnessError",
    "ModelEndpoint",
    "Outcome",
    "SandboxError",
    "TaskPackError",
    "TaskSpec",
    "Usage",
    "UserError",
    "__version__",
]
