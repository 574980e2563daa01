"""The tests of the snowflake integration."""
