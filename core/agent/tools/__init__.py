"""Model-facing tools. `common.common_tools()` builds the ones every session has."""
