"""Fakes of vendor APIs on 127.0.0.1 for the tests: ``server.FakeServer`` is the base."""
