"""Study 003 (P4 vs XDP): the feasibility matrix from observed packets, and what it needs."""
