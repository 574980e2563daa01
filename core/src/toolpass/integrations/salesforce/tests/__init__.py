"""The tests of the salesforce integration."""
