"""The tests of the argocd integration."""
