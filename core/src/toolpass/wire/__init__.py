"""What the engine and the integrations share: the HTTP client, secrets, ``Decision``,
identity mapping, watched files, configuration key types, the engine's errors, the budget of
one check and JWT signing. It knows nothing of the integrations or the engine above it."""
