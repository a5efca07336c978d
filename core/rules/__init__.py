"""Rules: schedules, the Scheduler, observe/act."""
