"""The request hook: every HTTP request a tool's body sends, checked before it leaves."""
