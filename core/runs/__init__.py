"""Background runs: the one lifecycle task runs and rule runs share (RunDriver), what each kind of run
passes it (RunPolicy), and how running time is counted against its cap."""
