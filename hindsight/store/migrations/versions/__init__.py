"""Migration scripts, one per schema revision (oldest: ``0001_initial``)."""
