"""Prompt injection, measured: scripted agent tasks under each toolpass policy (run.py)."""
