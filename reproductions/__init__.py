"""Experiments: each paper's figures as functions returning tables and plots."""
