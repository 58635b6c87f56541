"""dplab: a data-plane lab."""
