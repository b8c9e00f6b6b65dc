"""Privacy-utility: what each release method buys at a given epsilon (test accuracy and regret of the
released choice against non-private selection)."""
