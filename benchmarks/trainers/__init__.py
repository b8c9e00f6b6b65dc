"""Trainers: do the DP estimators learn at their defaults, beside non-private scikit-learn and the DP
peers (diffprivlib, Opacus)?"""
