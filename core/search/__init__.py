"""Full-text search over messages, tasks and rules: what the sidebar's search box and the API read."""
