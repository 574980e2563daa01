"""A scripted ops agent, run through toolpass with no network and no model.

The scenario's code is ``toolpass/demo/story.py`` (in core, so ``toolpass demo`` runs it
too), followed by ``toolpass/demo/live.py`` (the engine asking a small GitHub on 127.0.0.1,
and the request hook): read them there. This file runs them.

    python examples/ops_agent.py
"""

from toolpass.demo import main

if __name__ == "__main__":
    main()
