"""The tests of the databricks integration."""
