"""One hook per HTTP client library; each calls ``toolpass.intercept.check``."""
