"""Paper reproductions: each source paper's experiment at reduced size, with the spec's fixes."""
