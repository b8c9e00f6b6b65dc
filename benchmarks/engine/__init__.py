"""Engine: what privtune's BO engine costs per iteration, beside BoTorch and Optuna."""
