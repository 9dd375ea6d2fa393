"""Model layer: a scripted model server, a litellm client, and per-trial budgets.

Public API (harnesses use only these names):
``ScriptedModelServer``, ``serve_forever``, the reply builders (``reply``, ``tool_call``,
``bash``, ``http_error``, ``context_window_error``, ``hang``), ``Reply``/``ToolCall``/
``ErrorSpec``/``Scenario``/``ScriptSpec``/``Script``, ``ModelRequest``/``RecordedRequest``,
``ModelClient``, ``ModelAPIError``/``ContextWindowExceeded``, ``BudgetTracker``.
Importing this package does not import litellm (that happens on the first call).
"""

from evalharness.models._litellm import load_litellm
from evalharness.models.budget import BudgetTracker
from evalharness.models.builders import bash, context_window_error, hang, http_error, reply, tool_call
from evalharness.models.client import ModelClient
from evalharness.models.failures import ContextWindowExceeded, ModelAPIError
from evalharness.models.recording import RecordedRequest, read_jsonl
from evalharness.models.script import (
    ErrorSpec,
    ModelRequest,
    Reply,
    Scenario,
    Script,
    ScriptSpec,
    ToolCall,
    load_script,
)
from evalharness.models.server import ScriptedModelServer, serve_forever

__all__ = [
    "BudgetTracker",
    "ContextWindowExceeded",
    "ErrorSpec",
    "ModelAPIError",
    "ModelClient",
    "ModelRequest",
    "RecordedRequest",
    "Reply",
    "Scenario",
    "Script",
    "ScriptSpec",
    "ScriptedModelServer",
    "ToolCall",
    "bash",
    "context_window_error",
    "hang",
    "http_error",
    "load_litellm",
    "load_script",
    "read_jsonl",
    "reply",
    "serve_forever",
    "tool_call",
]
