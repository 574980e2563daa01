"""A scripted ops agent, run through toolpass with no network and no model.

The scenario's code is ``toolpass/demo.py`` (in core, so ``toolpass demo`` runs it too):
read it there. This file runs it.

    python examples/ops_agent.py
"""

from toolpass.demo import main

if __name__ == "__main__":
    main()
