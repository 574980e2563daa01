"""Generated and curated route tables, one ``<integration>.json`` (or ``.json.gz``) each.

See ``toolpass.intercept.routes`` for the format; ``scripts/routes/`` holds the generators.
"""
