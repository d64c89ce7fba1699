"""StableHLO passes (pass infrastructure lands with the passes work)."""
