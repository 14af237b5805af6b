"""trajudge: a judge-and-repair evaluation pipeline for coding-agent trajectories."""

__version__ = "0.1.0"
