"""Studies: a scenario, the paper's published figures and a report layout per study."""
