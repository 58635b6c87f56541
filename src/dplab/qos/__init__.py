"""Quality-of-service control logic that runs beside a data plane (pure computations)."""
