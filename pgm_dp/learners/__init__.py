"""Learners: estimators of MRF parameters, private and non-private."""
