"""Cost estimates: what a model call probably cost, from offline prices or the user's own overrides."""
