"""No test here reaches the network: the model is scripted and tracing is off."""

import os

os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "1"
os.environ.setdefault("OPENAI_API_KEY", "sk-test-not-used")

from agents import set_tracing_disabled

set_tracing_disabled(True)
