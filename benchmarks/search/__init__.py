"""Search overhead: what a whole search costs beyond its fits, against scikit-learn's RandomizedSearchCV."""
