"""meters."""
